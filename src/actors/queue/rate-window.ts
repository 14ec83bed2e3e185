// RateWindow — at most `jobs` hand-outs in any `per_seconds` window (a sliding log, not a token bucket: a bucket
// lets a full burst through on top of the steady rate, which overshoots a short window by up to `jobs`).
// The log is a ring of the last `jobs` hand-out instants, so its memory is bounded by the limit itself
// (RATE_LIMIT_MAX_JOBS caps it at the edge).

export interface RateLimit {
  jobs: number;
  per_seconds: number;
}

export class RateWindow {
  private readonly ring: number[];
  private start = 0;
  private count = 0;
  private readonly windowMs: number;

  constructor(readonly limit: RateLimit, previous: RateWindow | null = null) {
    this.ring = new Array<number>(limit.jobs);
    this.windowMs = limit.per_seconds * 1000;
    // A changed limit keeps the recent hand-outs, so reconfiguring a queue does not open a burst.
    if (previous) for (const at of previous.recent(limit.jobs)) this.record(at);
  }

  /** How many more jobs may be handed out at `now`. */
  available(now: number): number {
    this.expire(now);
    return this.limit.jobs - this.count;
  }

  record(at: number): void {
    if (this.count === this.ring.length) {
      this.start = (this.start + 1) % this.ring.length;
      this.count--;
    }
    this.ring[(this.start + this.count) % this.ring.length] = at;
    this.count++;
  }

  /** The first instant a hand-out is allowed again: `now` when one is allowed now. */
  nextSlot(now: number): number {
    this.expire(now);
    return this.count < this.limit.jobs ? now : this.ring[this.start]! + this.windowMs;
  }

  private expire(now: number): void {
    while (this.count > 0 && this.ring[this.start]! + this.windowMs <= now) {
      this.start = (this.start + 1) % this.ring.length;
      this.count--;
    }
  }

  /** The last `n` hand-outs, oldest first. */
  private recent(n: number): number[] {
    const out: number[] = [];
    for (let i = Math.max(0, this.count - n); i < this.count; i++) out.push(this.ring[(this.start + i) % this.ring.length]!);
    return out;
  }
}
