// Job retention: completed and cancelled jobs are deleted once they have been finished for longer than their
// organization's plan keeps them (job_retention_days). A background sweep on the main thread, every
// `intervalMs` (default 60 s): per organization, DELETE statements of at most `batchSize` rows (default 1,000),
// with a yield to the event loop between statements, so a large backlog becomes many short statements that
// request handling and group commits interleave with, never one long one. "Now" is the node's Clock.
// Live jobs (pending, scheduled, processing) and dead-lettered jobs are never deleted; the DLQ has its purge.
import { setImmediate as yieldTurn } from 'node:timers/promises';
import { isPlanTier, resolveLimits, type LimitOverrides, type PlanOverrides } from '../actors/org/plans.js';
import type { Clock } from '../clock.js';
import { organizationPlans } from '../io/db/sql/organizationPlans.js';
import { sweepRetention } from '../io/db/sql/sweepRetention.js';
import type { Store } from '../io/db/store.js';
import type { Log } from '../log.js';

export interface RetentionOptions {
  store: Store;
  clock: Clock;
  log?: Log;
  /** Time between background sweeps (real time, whatever the clock). */
  intervalMs?: number;
  /** Rows per DELETE statement. */
  batchSize?: number;
  /** The instance's PLAN_* settings (the organization's own overrides come with its row). */
  planOverrides?: PlanOverrides;
}

export interface SweepReport {
  /** Jobs deleted by this sweep. */
  deleted: number;
  /** Organizations whose window was applied. */
  organizations: number;
}

const ORG_PAGE = 500;
const DAY_MS = 86_400_000;

export class RetentionSweeper {
  readonly intervalMs: number;
  readonly batchSize: number;
  private timer: NodeJS.Timeout | null = null;
  /** The sweep in progress (or the last one); sweeps never overlap. */
  private current: Promise<SweepReport> = Promise.resolve({ deleted: 0, organizations: 0 });
  private stopping = false;
  /** Unknown plan names already reported, so that each is logged once, not every minute. */
  private readonly unknownPlans = new Set<string>();

  constructor(private readonly opts: RetentionOptions) {
    this.intervalMs = opts.intervalMs ?? 60_000;
    this.batchSize = opts.batchSize ?? 1_000;
    if (!(this.intervalMs > 0)) throw new RangeError('intervalMs must be positive');
    if (!(Number.isInteger(this.batchSize) && this.batchSize > 0)) throw new RangeError('batchSize must be a positive integer');
  }

  start(): void {
    if (this.timer || this.stopping) return;
    this.timer = setInterval(() => {
      this.sweepOnce().catch((err) => this.opts.log?.error('retention sweep failed; the next one retries', err));
    }, this.intervalMs);
    // The sweep must not keep a stopping process alive.
    this.timer.unref();
  }

  /** Stops the timer and waits for a sweep in progress, which ends after its current statement. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.current.catch(() => {});
  }

  /** One whole sweep, after any sweep in progress (tests call this to sweep at a moment they choose). */
  sweepOnce(): Promise<SweepReport> {
    const run = this.current.catch(() => undefined).then(() => this.sweep());
    this.current = run;
    return run;
  }

  private async sweep(): Promise<SweepReport> {
    const { store, clock } = this.opts;
    const now = clock.now();
    const report: SweepReport = { deleted: 0, organizations: 0 };
    let afterId: string | null = null;
    while (!this.stopping) {
      const orgs = await organizationPlans(store, afterId, ORG_PAGE);
      for (const org of orgs) {
        if (this.stopping) break;
        const windowMs = this.windowOf(org.plan, org.limit_overrides);
        if (windowMs === null) continue;
        report.organizations++;
        const cutoff = new Date(now - windowMs);
        for (;;) {
          const n = await sweepRetention(store, org.id, cutoff, this.batchSize);
          report.deleted += n;
          if (n < this.batchSize || this.stopping) break;
          await yieldTurn();
        }
      }
      if (orgs.length < ORG_PAGE) break;
      afterId = orgs[orgs.length - 1]!.id;
      await yieldTurn();
    }
    if (report.deleted > 0) this.opts.log?.debug(`retention: deleted ${report.deleted} finished jobs`);
    return report;
  }

  /** The plan's window; null keeps everything (an unlimited plan, or a plan name this node does not know). */
  private windowOf(plan: string, overrides: LimitOverrides): number | null {
    if (isPlanTier(plan)) {
      const days = resolveLimits(plan, this.opts.planOverrides ?? {}, overrides).job_retention_days;
      return days === null ? null : days * DAY_MS;
    }
    if (!this.unknownPlans.has(plan)) {
      this.unknownPlans.add(plan);
      this.opts.log?.warn(`retention: unknown plan "${plan}"; its organizations' jobs are kept`);
    }
    return null;
  }
}
