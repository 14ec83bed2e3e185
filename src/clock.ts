// Time is injected. Actors read `now()` from a Clock and never call Date.now() themselves, so tests can run
// minutes of backoff and lease expiry in milliseconds.
//
// A ManualClock keeps its time in a SharedArrayBuffer: actor threads read the same instant the test set,
// and the runtime tells them to fire due timers after each advance (they set no real timers in that mode).

export interface Clock {
  now(): number;
  /** True when time only moves when a test moves it. */
  readonly manual: boolean;
}

export const systemClock: Clock = { now: () => Date.now(), manual: false };

export class ManualClock implements Clock {
  readonly manual = true;
  readonly buffer: SharedArrayBuffer;
  private readonly cell: Float64Array;
  private readonly listeners = new Set<() => Promise<void>>();

  constructor(start: number | SharedArrayBuffer = Date.UTC(2030, 0, 1)) {
    if (typeof start === 'number') {
      this.buffer = new SharedArrayBuffer(8);
      this.cell = new Float64Array(this.buffer);
      this.cell[0] = start;
    } else {
      this.buffer = start;
      this.cell = new Float64Array(this.buffer);
    }
  }

  now(): number {
    return this.cell[0]!;
  }

  /** Moves time forward and waits until every listener (the runtime's threads) has fired its due timers. */
  async advance(ms: number): Promise<void> {
    if (ms < 0) throw new RangeError('a clock never goes back');
    this.cell[0] = this.now() + ms;
    await Promise.all([...this.listeners].map((fn) => fn()));
  }

  async set(at: number | Date): Promise<void> {
    const t = typeof at === 'number' ? at : at.getTime();
    await this.advance(t - this.now());
  }

  onAdvance(fn: () => Promise<void>): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
