// API call statistics per organization and UTC day: counted in memory on every authenticated request and added
// to usage_daily every few seconds (one statement for all organizations), so counting costs the hot path a Map
// update, not a write.
import { utcDay } from '../actors/org/org-actor.js';
import type { Clock } from '../clock.js';
import { addApiCalls } from '../io/db/sql/addApiCalls.js';
import type { Store } from '../io/db/store.js';
import type { Log } from '../log.js';
import { Periodic } from './periodic.js';

export class ApiCalls {
  private pending = new Map<string, { organization_id: string; day: string; calls: number; limited: number }>();
  private readonly flusher: Periodic<void>;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly log: Log,
    intervalMs = 5_000,
  ) {
    // Real time even under a ManualClock: counts are written, not computed, so no test waits on a pass.
    this.flusher = new Periodic({ name: 'api call statistics', intervalMs, run: () => this.write(), log });
  }

  start(): void {
    this.flusher.start();
  }

  count(organizationId: string, limited: boolean): void {
    const day = utcDay(this.clock.now());
    const key = `${organizationId}/${day}`;
    let e = this.pending.get(key);
    if (!e) this.pending.set(key, (e = { organization_id: organizationId, day, calls: 0, limited: 0 }));
    e.calls++;
    if (limited) e.limited++;
  }

  /** Not yet written: what usage adds to the stored counts. */
  unflushed(organizationId: string, day: string): { calls: number; limited: number } {
    const e = this.pending.get(`${organizationId}/${day}`);
    return { calls: e?.calls ?? 0, limited: e?.limited ?? 0 };
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    await this.flusher.stop();
    await this.flusher.runOnce();
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    try {
      await addApiCalls(this.store, batch);
    } catch (err) {
      // Statistics, not state: a failed write is reported and its counts folded back for the next try.
      this.log.warn(`api call statistics not written: ${(err as Error).message}`);
      for (const e of batch) {
        const key = `${e.organization_id}/${e.day}`;
        const now = this.pending.get(key);
        if (now) {
          now.calls += e.calls;
          now.limited += e.limited;
        } else this.pending.set(key, e);
      }
    }
  }
}
