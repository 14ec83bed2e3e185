// RateWindow — at most `limit` events in any window of `windowMs` (a sliding log, not a token bucket: a bucket
// lets a full burst through on top of the steady rate, which overshoots a short window by up to its size; whole-
// second buckets let 309 requests through a 60 s window of 300). The log is a ring of the instants of the last
// `limit` events: exact to the millisecond. Its storage grows with use, up to `limit`: 8 bytes per event of the
// busiest window, so a large limit that is never approached costs little.
//
// Used by a queue's rate limit (jobs handed out) and an organization's request rate (requests admitted).

export class RateWindow {
  private buf: Float64Array;
  private start = 0;
  private count = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    /** The window it replaces (a changed limit): its recent events carry over, so a change opens no burst. */
    previous: RateWindow | null = null,
  ) {
    this.buf = new Float64Array(Math.max(1, Math.min(limit, 16)));
    if (previous) for (const at of previous.recent(limit)) this.record(at);
  }

  /** How many more events fit at `now`. */
  available(now: number): number {
    this.expire(now);
    return this.limit - this.count;
  }

  /** The first instant one more event fits: `now` when it fits now. */
  nextSlot(now: number): number {
    this.expire(now);
    return this.count < this.limit ? now : this.buf[this.start]! + this.windowMs;
  }

  /** Counts an event at `at`, or at the last one recorded if that is later: the log stays in order. */
  record(at: number): void {
    if (this.limit === 0) return;
    if (this.count > 0) at = Math.max(at, this.buf[(this.start + this.count - 1) % this.buf.length]!);
    if (this.count === this.limit) {
      this.start = (this.start + 1) % this.buf.length;
      this.count--;
    } else if (this.count === this.buf.length) {
      this.grow();
    }
    this.buf[(this.start + this.count) % this.buf.length] = at;
    this.count++;
  }

  private expire(now: number): void {
    while (this.count > 0 && this.buf[this.start]! + this.windowMs <= now) {
      this.start = (this.start + 1) % this.buf.length;
      this.count--;
    }
  }

  private grow(): void {
    const next = new Float64Array(Math.min(this.limit, this.buf.length * 2));
    for (let i = 0; i < this.count; i++) next[i] = this.buf[(this.start + i) % this.buf.length]!;
    this.buf = next;
    this.start = 0;
  }

  /** The last `n` events, oldest first. */
  private recent(n: number): number[] {
    const out: number[] = [];
    for (let i = Math.max(0, this.count - n); i < this.count; i++) out.push(this.buf[(this.start + i) % this.buf.length]!);
    return out;
  }
}
