// One background task run again and again: every `intervalMs` of real time, or, under a ManualClock, after
// every advance of the clock (a test that advances the clock sees the pass done when advance() returns).
// Passes never overlap; `runOnce` runs one after any pass in progress (tests choose their moment); `pause`
// stops the passes until the next `start` (a cluster-wide task on a node that lost the lead); `stop` ends it and
// waits for the pass in progress. A failed pass is logged and the next one retries.
import type { Clock, ManualClock } from '../clock.js';
import type { Log } from '../log.js';

export interface PeriodicOptions<T> {
  /** What the log calls it. */
  name: string;
  intervalMs: number;
  /** The pass; a subclass overrides `pass` instead. */
  run?: () => Promise<T>;
  log?: Log;
  /** Under a ManualClock the task runs after each advance instead of on a timer; omit to always use the timer. */
  clock?: Clock;
}

export class Periodic<T> {
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => void) | null = null;
  private current: Promise<T | undefined> = Promise.resolve(undefined);
  private stopped = false;

  constructor(private readonly o: PeriodicOptions<T>) {
    if (!(o.intervalMs > 0)) throw new RangeError(`${o.name}: intervalMs must be positive`);
  }

  get stopping(): boolean {
    return this.stopped;
  }

  start(): void {
    if (this.timer || this.unlisten || this.stopped) return;
    const pass = () => this.runOnce().catch((err) => this.o.log?.error(`${this.o.name} failed; the next pass retries`, err));
    if (this.o.clock?.manual) {
      this.unlisten = (this.o.clock as ManualClock).onAdvance(async () => void (await pass()));
      return;
    }
    this.timer = setInterval(pass, this.o.intervalMs);
    // A background pass must not keep a stopping process alive.
    this.timer.unref();
  }

  /** Stops running on its own (this node no longer leads), without ending: start() resumes it. */
  pause(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.unlisten?.();
    this.unlisten = null;
  }

  /** One pass after any pass in progress. */
  runOnce(): Promise<T> {
    const run = this.current.catch(() => undefined).then(() => this.pass());
    this.current = run;
    return run;
  }

  protected pass(): Promise<T> {
    if (!this.o.run) throw new Error(`${this.o.name}: no pass to run`);
    return this.o.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.unlisten?.();
    this.unlisten = null;
    await this.current.catch(() => {});
  }
}
