// Per-organization rate limiting on the main thread: a sliding window, at most `burst` requests in any
// 1-second window and `rate × 60` in any 60-second window (DESIGN §4). Refused requests do not count.
//
// It runs on every authenticated request, so it is synchronous once an organization's limits are known: the
// 1-second window is a ring of the last `burst` request times (allowed when the oldest is over a second old),
// the 60-second window 60 one-second buckets. Limits come from the plan and are cached for 30 s; a plan change
// on this node drops the entry at once.
import { resolveLimits, isPlanTier, type LimitOverrides, type PlanOverrides } from '../../actors/org/plans.js';
import type { Clock } from '../../clock.js';
import { AppError } from '../../errors.js';
import type { Store } from '../db/store.js';
import { organizationPlan } from '../db/sql/organizationPlans.js';

const LIMITS_TTL_MS = 30_000;
const MAX_WINDOWS = 10_000;

interface Window {
  rate: number | null;
  burst: number | null;
  /** Times of the last `burst` admitted requests, a ring. */
  recent: Float64Array;
  next: number;
  /** Requests admitted per second, a ring indexed by epoch second mod 60, with the second each slot holds. */
  perSecond: Int32Array;
  secondOf: Float64Array;
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
    if (!w || w.until <= now) w = await this.load(organizationId, now);
    const wait = this.wait(w, now);
    if (wait > 0) {
      const retryAfter = Math.max(1, Math.ceil(wait / 1000));
      throw new AppError('RATE_LIMITED', `Rate limit exceeded; retry in ${retryAfter} s`, { retry_after: retryAfter });
    }
    this.take(w, now);
  }

  /** Forget cached limits (plan or overrides changed). */
  invalidate(organizationId: string): void {
    this.windows.delete(organizationId);
  }

  /** Plan changes may have been missed: every organization's limits are read again on its next request. */
  invalidateAll(): void {
    for (const w of this.windows.values()) w.until = 0;
  }

  /** Milliseconds until a request would pass; 0 when it passes now. */
  private wait(w: Window, now: number): number {
    let wait = 0;
    if (w.burst !== null) {
      if (w.burst === 0) return 60_000;
      const oldest = w.recent[w.next]!;
      if (oldest > now - 1000) wait = oldest + 1000 - now;
    }
    if (w.rate !== null) {
      const cap = w.rate * 60;
      if (cap === 0) return 60_000;
      const sec = Math.floor(now / 1000);
      let total = 0;
      for (let i = 0; i < 60; i++) if (w.secondOf[i]! > sec - 60) total += w.perSecond[i]!;
      if (total >= cap) {
        // The window frees requests as its oldest seconds leave it: find when enough have left.
        let freed = 0;
        for (let s = sec - 59; s <= sec; s++) {
          const i = s % 60;
          if (w.secondOf[i] === s) freed += w.perSecond[i]!;
          if (total - freed < cap) {
            wait = Math.max(wait, (s + 60) * 1000 - now);
            break;
          }
        }
      }
    }
    return wait;
  }

  private take(w: Window, now: number): void {
    if (w.burst !== null && w.burst > 0) {
      w.recent[w.next] = now;
      w.next = (w.next + 1) % w.burst;
    }
    if (w.rate !== null) {
      const sec = Math.floor(now / 1000);
      const i = sec % 60;
      if (w.secondOf[i] !== sec) {
        w.secondOf[i] = sec;
        w.perSecond[i] = 0;
      }
      w.perSecond[i]!++;
    }
  }

  private load(organizationId: string, now: number): Promise<Window> {
    let p = this.loading.get(organizationId);
    if (!p) {
      // Organizations that stopped calling go, or the map would keep every organization ever seen.
      if (this.windows.size >= MAX_WINDOWS) for (const [org, w] of this.windows) if (w.until + 60_000 <= now) this.windows.delete(org);
      p = organizationPlan(this.store, organizationId)
        .then((row) => {
          const plan = row && isPlanTier(row.plan) ? row.plan : 'free';
          const limits = resolveLimits(plan, this.instance, (row?.limit_overrides ?? {}) as LimitOverrides);
          const old = this.windows.get(organizationId);
          const burst = limits.burst;
          // Keep the history across a refresh when the sizes allow, so a refresh is not a free burst.
          const w: Window =
            old && old.burst === burst
              ? { ...old, rate: limits.rate_per_second, until: now + LIMITS_TTL_MS }
              : {
                  rate: limits.rate_per_second,
                  burst,
                  recent: new Float64Array(Math.max(burst ?? 0, 1)).fill(-Infinity),
                  next: 0,
                  perSecond: old?.perSecond ?? new Int32Array(60),
                  secondOf: old?.secondOf ?? new Float64Array(60).fill(-1),
                  until: now + LIMITS_TTL_MS,
                };
          this.windows.set(organizationId, w);
          return w;
        })
        .finally(() => this.loading.delete(organizationId));
      this.loading.set(organizationId, p);
    }
    return p;
  }
}
