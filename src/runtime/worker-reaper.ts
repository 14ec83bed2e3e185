// The stale-worker reaper: removes workers whose last heartbeat is older than WORKER_STALE_SECONDS by the node's
// Clock, gives their 'workers' quota slots back and publishes worker.deregistered {worker_id, reason: 'stale'}.
// SPEC: a worker registered without an id occupies a cap slot until the reaper removes it, "about two minutes".
//
// Runs on the main thread every `intervalMs` of real time (15 s), or, under a ManualClock, after every advance
// of the clock (so a test that advances two minutes sees the slot freed when advance() returns). Deletes in
// statements of at most `batchSize` rows with a yield between them; passes never overlap.
import { setImmediate as yieldTurn } from 'node:timers/promises';
import type { Clock, ManualClock } from '../clock.js';
import { reapWorkers } from '../io/db/sql/reapWorkers.js';
import type { Store } from '../io/db/store.js';
import type { Log } from '../log.js';
import type { EventBus } from '../app/events.js';
import type { Quotas } from '../app/quotas.js';

export interface WorkerReaperOptions {
  store: Store;
  clock: Clock;
  quotas: Pick<Quotas, 'release'>;
  events: Pick<EventBus, 'publish'>;
  log?: Log;
  staleSeconds: number;
  intervalMs?: number;
  batchSize?: number;
}

export class WorkerReaper {
  private readonly intervalMs: number;
  private readonly batchSize: number;
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => void) | null = null;
  private current: Promise<number> = Promise.resolve(0);
  private stopping = false;

  constructor(private readonly opts: WorkerReaperOptions) {
    this.intervalMs = opts.intervalMs ?? 15_000;
    this.batchSize = opts.batchSize ?? 500;
  }

  start(): void {
    if (this.timer || this.unlisten || this.stopping) return;
    const { clock } = this.opts;
    if (clock.manual) {
      this.unlisten = (clock as ManualClock).onAdvance(async () => {
        await this.reapOnce().catch((err) => this.opts.log?.error('worker reaper failed; the next pass retries', err));
      });
      return;
    }
    this.timer = setInterval(() => {
      this.reapOnce().catch((err) => this.opts.log?.error('worker reaper failed; the next pass retries', err));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.unlisten?.();
    this.unlisten = null;
    await this.current.catch(() => {});
  }

  /** One pass after any pass in progress; resolves to the number of workers removed. */
  reapOnce(): Promise<number> {
    const run = this.current.catch(() => 0).then(() => this.reap());
    this.current = run;
    return run;
  }

  private async reap(): Promise<number> {
    const { store, clock, quotas, events } = this.opts;
    const now = clock.now();
    const cutoff = new Date(now - this.opts.staleSeconds * 1000);
    let removed = 0;
    while (!this.stopping) {
      const rows = await reapWorkers(store, cutoff, this.batchSize);
      for (const r of rows) {
        quotas.release(r.organization_id, 'workers');
        events.publish(r.organization_id, 'worker.deregistered', { worker_id: r.id, reason: 'stale' }, now);
      }
      removed += rows.length;
      if (rows.length < this.batchSize) break;
      await yieldTurn();
    }
    if (removed > 0) this.opts.log?.debug(`worker reaper: removed ${removed} stale workers`);
    return removed;
  }
}
