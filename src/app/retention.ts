// Retention: what the plans keep is kept, and what they no longer keep is deleted.
//   jobs          completed and cancelled jobs finished longer ago than the plan's job_retention_days
//   deliveries    finished webhook deliveries created longer ago than the plan's history_retention_days
// One background sweep on the main thread every `intervalMs` (default 60 s): per organization, DELETE
// statements of at most `batchSize` rows (default 1,000) with a yield to the event loop between them, so a
// large backlog becomes many short statements that request handling and group commits interleave with, never
// one long one. "Now" is the node's Clock. Live and dead-lettered jobs are never deleted (the DLQ has its
// purge), nor pending deliveries (they are still being sent).
import { setImmediate as yieldTurn } from 'node:timers/promises';
import { isPlanTier, resolveLimits, type LimitOverrides, type PlanLimits, type PlanOverrides } from '../actors/org/plans.js';
import type { Clock } from '../clock.js';
import { analyzeJobsIfStale } from '../io/db/sql/analyzeJobsIfStale.js';
import { organizationPlans } from '../io/db/sql/organizationPlans.js';
import { pruneDeliveries } from '../io/db/sql/pruneDeliveries.js';
import { sweepRetention } from '../io/db/sql/sweepRetention.js';
import type { Store } from '../io/db/store.js';
import type { Log } from '../log.js';
import { Periodic } from './periodic.js';

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
  /** Webhook deliveries deleted by this sweep. */
  deliveries: number;
  /** Organizations whose windows were applied. */
  organizations: number;
}

const ORG_PAGE = 500;
const DAY_MS = 86_400_000;

export class RetentionSweeper extends Periodic<SweepReport> {
  readonly batchSize: number;
  /** Unknown plan names already reported, so that each is logged once, not every minute. */
  private readonly unknownPlans = new Set<string>();

  constructor(private readonly opts: RetentionOptions) {
    super({ name: 'retention sweep', intervalMs: opts.intervalMs ?? 60_000, log: opts.log });
    this.batchSize = opts.batchSize ?? 1_000;
    if (!(Number.isInteger(this.batchSize) && this.batchSize > 0)) throw new RangeError('batchSize must be a positive integer');
  }

  /** One whole sweep, after any sweep in progress (tests call this to sweep at a moment they choose). */
  sweepOnce(): Promise<SweepReport> {
    return this.runOnce();
  }

  protected override pass(): Promise<SweepReport> {
    return this.sweep();
  }

  private async sweep(): Promise<SweepReport> {
    const { store, clock } = this.opts;
    const now = clock.now();
    const report: SweepReport = { deleted: 0, deliveries: 0, organizations: 0 };
    let afterId: string | null = null;
    while (!this.stopping) {
      const orgs = await organizationPlans(store, afterId, ORG_PAGE);
      for (const org of orgs) {
        if (this.stopping) break;
        const limits = this.limitsOf(org.plan, org.limit_overrides);
        if (limits === null) continue;
        report.organizations++;
        if (limits.job_retention_days !== null) {
          const cutoff = new Date(now - limits.job_retention_days * DAY_MS);
          report.deleted += await this.drain((batch) => sweepRetention(store, org.id, cutoff, batch));
        }
        if (limits.history_retention_days !== null) {
          const cutoff = new Date(now - limits.history_retention_days * DAY_MS);
          report.deliveries += await this.drain((batch) => pruneDeliveries(store, org.id, cutoff, batch));
        }
      }
      if (orgs.length < ORG_PAGE) break;
      afterId = orgs[orgs.length - 1]!.id;
      await yieldTurn();
    }
    if (report.deleted + report.deliveries > 0) {
      this.opts.log?.debug(`retention: deleted ${report.deleted} finished jobs and ${report.deliveries} webhook deliveries`);
    }
    // The planner's statistics, where autovacuum does not keep them (off, or behind a bulk load).
    if (!this.stopping && (await analyzeJobsIfStale(store))) this.opts.log?.info('retention: the statistics of the jobs table were stale: analyzed it');
    return report;
  }

  /** Deletes in statements of at most batchSize rows, yielding between them, until a statement takes fewer. */
  private async drain(step: (batch: number) => Promise<number>): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await step(this.batchSize);
      total += n;
      if (n < this.batchSize || this.stopping) return total;
      await yieldTurn();
    }
  }

  /** The plan's limits; null keeps everything of a plan name this node does not know. */
  private limitsOf(plan: string, overrides: LimitOverrides): PlanLimits | null {
    if (isPlanTier(plan)) return resolveLimits(plan, this.opts.planOverrides ?? {}, overrides);
    if (!this.unknownPlans.has(plan)) {
      this.unknownPlans.add(plan);
      this.opts.log?.warn(`retention: unknown plan "${plan}"; its organizations' jobs are kept`);
    }
    return null;
  }
}
