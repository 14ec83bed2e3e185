// Per-organization rate limiting on the main thread, the admission of every authenticated request (REST and gRPC
// alike): a sliding window, at most `burst` requests in any
// 1-second window and `rate × 60` in any 60-second window (DESIGN §4). Refused requests do not count.
//
// It runs on every authenticated request, so it is synchronous once an organization's limits are known. Each
// window is a sliding log: a ring of the times of the last N admitted requests (N = burst, or rate × 60). A
// request passes when the oldest of those is at least a window old, which is exact to the millisecond (whole-
// second buckets let 309 requests through a 60 s window of 300). A ring grows only as far as an organization
// actually sends: 8 bytes per request of its busiest minute.
//
// Limits come from the plan and are cached for 30 s; a plan change on this node drops the entry at once. When
// the store cannot be read at refresh time the known limits stay in force and are tried again shortly; an
// organization never seen before gets the store's 503.
import { resolveLimits, isPlanTier, type LimitOverrides, type PlanOverrides } from '../actors/org/plans.js';
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import type { Store } from '../io/db/store.js';
import { organizationPlan } from '../io/db/sql/organizationPlan.js';
import type { ApiCalls } from './api-calls.js';

const LIMITS_TTL_MS = 30_000;
/** After a failed refresh, the limits in force are tried again this much later. */
const RETRY_REFRESH_MS = 5_000;
const MAX_WINDOWS = 10_000;

/** The times of the last `cap` admitted requests, oldest first; storage grows with use, up to `cap`. */
class TimeRing {
  private buf: Float64Array;
  private start = 0;
  private count = 0;

  constructor(readonly cap: number) {
    this.buf = new Float64Array(Math.max(1, Math.min(cap, 16)));
  }

  /** Milliseconds until one more request fits in `windowMs`; 0 when it fits now. */
  wait(now: number, windowMs: number): number {
    if (this.cap === 0) return windowMs;
    if (this.count < this.cap) return 0;
    return Math.max(0, this.buf[this.start]! + windowMs - now);
  }

  push(t: number): void {
    if (this.cap === 0) return;
    if (this.count < this.cap) {
      if (this.count === this.buf.length) this.grow();
      this.buf[(this.start + this.count) % this.buf.length] = t;
      this.count++;
      return;
    }
    this.buf[this.start] = t;
    this.start = (this.start + 1) % this.buf.length;
  }

  /** A ring of another size holding the most recent of these times. */
  resized(cap: number): TimeRing {
    const r = new TimeRing(cap);
    for (let i = Math.max(0, this.count - cap); i < this.count; i++) r.push(this.buf[(this.start + i) % this.buf.length]!);
    return r;
  }

  private grow(): void {
    const next = new Float64Array(Math.min(this.cap, this.buf.length * 2));
    for (let i = 0; i < this.count; i++) next[i] = this.buf[(this.start + i) % this.buf.length]!;
    this.buf = next;
    this.start = 0;
  }
}

interface Window {
  /** null: no limit of that kind. */
  second: TimeRing | null;
  minute: TimeRing | null;
  until: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly loading = new Map<string, Promise<Window>>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly instance: PlanOverrides,
  ) {}

  /** Throws RATE_LIMITED (with retry_after, in seconds) when the organization is over its rate. */
  async admit(organizationId: string): Promise<void> {
    const now = this.clock.now();
    let w = this.windows.get(organizationId);
    if (!w || w.until <= now) w = await this.load(organizationId, now, w);
    const wait = Math.max(w.second?.wait(now, 1_000) ?? 0, w.minute?.wait(now, 60_000) ?? 0);
    if (wait > 0) {
      const retryAfter = Math.max(1, Math.ceil(wait / 1000));
      throw new AppError('RATE_LIMITED', `Rate limit exceeded; retry in ${retryAfter} s`, { retry_after: retryAfter });
    }
    w.second?.push(now);
    w.minute?.push(now);
  }

  /** Forget cached limits (plan or overrides changed). */
  invalidate(organizationId: string): void {
    this.windows.delete(organizationId);
  }

  /** Plan changes may have been missed: every organization's limits are read again on its next request. */
  invalidateAll(): void {
    for (const w of this.windows.values()) w.until = 0;
  }

  private load(organizationId: string, now: number, stale: Window | undefined): Promise<Window> {
    let p = this.loading.get(organizationId);
    if (!p) {
      // Organizations that stopped calling go, or the map would keep every organization ever seen.
      if (this.windows.size >= MAX_WINDOWS) for (const [org, w] of this.windows) if (w.until + 60_000 <= now) this.windows.delete(org);
      p = organizationPlan(this.store, organizationId)
        .then(
          (row) => {
            const plan = row && isPlanTier(row.plan) ? row.plan : 'free';
            const limits = resolveLimits(plan, this.instance, (row?.limit_overrides ?? {}) as LimitOverrides);
            // The history carries over a refresh, so a refresh is not a free burst.
            const old = this.windows.get(organizationId);
            const ring = (cap: number | null, prev: TimeRing | null | undefined): TimeRing | null =>
              cap === null ? null : prev?.cap === cap ? prev : (prev?.resized(cap) ?? new TimeRing(cap));
            const w: Window = {
              second: ring(limits.burst, old?.second),
              minute: ring(limits.rate_per_second === null ? null : limits.rate_per_second * 60, old?.minute),
              until: now + LIMITS_TTL_MS,
            };
            this.windows.set(organizationId, w);
            return w;
          },
          (err: unknown) => {
            // The store is down: the limits already known stay in force rather than failing every request.
            if (!stale) throw err;
            stale.until = now + RETRY_REFRESH_MS;
            return stale;
          },
        )
        .finally(() => this.loading.delete(organizationId));
      this.loading.set(organizationId, p);
    }
    return p;
  }
}

/**
 * The admission of every authenticated request, REST and gRPC alike: the organization's rate limit, and the
 * count behind its usage statistics (refused requests are counted as such). `observe` sees each outcome
 * (metrics).
 */
export function admission(limiter: RateLimiter, calls: ApiCalls, observe: (admitted: boolean) => void): (organizationId: string) => Promise<void> {
  return async (org) => {
    try {
      await limiter.admit(org);
      calls.count(org, false);
      observe(true);
    } catch (err) {
      calls.count(org, true);
      observe(false);
      throw err;
    }
  };
}
