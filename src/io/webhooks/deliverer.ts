// The attempts of one outgoing delivery: each signed (signing.ts) and sent through the guarded sender
// (sender.ts: the SSRF rules, the process-wide concurrency cap, a timeout), waiting 1, 2, 4, 8 retry units
// between them. Real time (WEBHOOK_RETRY_UNIT_MS), like the HTTP timeouts; the timestamp each attempt signs is the
// node's clock. It keeps no rows and decides nothing about endpoints: the caller (src/app/deliveries.ts) is told
// of every failed attempt that another will follow, and gets the outcome.
//
// At stop, waits and requests in flight are cut short: the delivery comes back `ended: false`, without the
// attempt that was cut, so its row stays pending for a node to resume.
import type { Clock } from '../../clock.js';
import { Sender, type AttemptResult } from './sender.js';
import { deliveryHeaders } from './signing.js';
import type { UrlPolicy } from './ssrf.js';

/** What one delivery sends, whoever it is for. */
export interface Outgoing {
  id: string;
  event: string;
  body: string;
}

/** Where it goes; without a secret the attempts are unsigned. */
export interface Target {
  url: string;
  secret: string | null;
}

export interface Delivered {
  /** false: cut short by stop, to be resumed (`attempts` then counts those the endpoint answered or failed). */
  ended: boolean;
  ok: boolean;
  attempts: number;
  last: AttemptResult;
}

/** Told of attempt `attempt`, which failed, before the wait for the next. */
export type OnRetry = (attempt: number, last: AttemptResult) => Promise<void>;

export interface DelivererOptions {
  clock: Clock;
  policy: UrlPolicy;
  retryUnitMs: number;
  timeoutMs: number;
  concurrency: number;
}

export class Deliverer {
  private readonly sender: Sender;
  private readonly sleepers = new Set<() => void>();
  private stopping = false;

  constructor(private readonly o: DelivererOptions) {
    this.sender = new Sender({ policy: o.policy, timeoutMs: o.timeoutMs, concurrency: o.concurrency });
  }

  /** Attempts `done + 1` … `maxAttempts`, until one succeeds. */
  async run(d: Outgoing, target: Target, done: number, maxAttempts: number, onRetry: OnRetry): Promise<Delivered> {
    let attempt = done;
    let last: AttemptResult = { ok: false, status: null, error: null };
    while (attempt < maxAttempts) {
      // 1, 2, 4, 8 units before attempts 2…5.
      if (attempt > 0) await this.sleep(this.o.retryUnitMs * 2 ** (attempt - 1));
      if (this.stopping) return { ended: false, ok: false, attempts: attempt, last };
      attempt++;
      const headers = deliveryHeaders({
        event: d.event,
        deliveryId: d.id,
        attempt,
        timestamp: Math.floor(this.o.clock.now() / 1000),
        secret: target.secret,
        body: d.body,
      });
      last = await this.sender.attempt(target.url, headers, d.body);
      if (last.ok) break;
      // Cut short by the stop: not an attempt the endpoint failed.
      if (this.sender.stopped) return { ended: false, ok: false, attempts: attempt - 1, last };
      if (attempt < maxAttempts) await onRetry(attempt, last);
    }
    return { ended: true, ok: last.ok, attempts: attempt, last };
  }

  /** Cuts waits and requests in flight short; later runs end at once. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const wake of this.sleepers) wake();
    await this.sender.close();
  }

  private sleep(ms: number): Promise<void> {
    // A wait that begins after the stop (its attempt was being recorded meanwhile) would hold the stop up.
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }
}
