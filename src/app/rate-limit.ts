// Per-organization request rate, the admission of every authenticated request (REST and gRPC alike): at most
// `burst` requests in any 1-second window and `rate × 60` in any 60-second window (DESIGN §4), across the whole
// cluster. Refused requests do not count.
//
// The count is the organization's quota actor's (OrgActor.permits): one counter per organization wherever its
// requests arrive, kept as sliding logs exact to the millisecond. A node asks it for one admission at a time
// while the organization sends slowly; when it sends faster, for as many as it will use in the next 50 ms (its
// rate over the last second), which the actor counts as made at the end of those 50 ms so that no window is ever
// over its limit however they are spent. Concurrent requests of one organization share one ask. A refusal says
// when the next request may pass, and the node refuses without asking until then (more admissions elsewhere only
// make that later). An organization whose plan sets no rate costs one ask per 30 s.
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import type { ActorPool } from '../runtime/actor-pool.js';
import type { ApiCalls } from './api-calls.js';

/** How long a batch of admissions may be held by a node before it lapses. */
const HOLD_MS = 50;
/** How long a node takes an organization without a request rate at its word. */
const UNLIMITED_MS = 30_000;
const MAX_ORGS = 10_000;

interface OrgRate {
  unlimitedUntil: number;
  /** Admissions this node holds, to spend until `until`. */
  held: number;
  until: number;
  /** No request passes before this instant (the last refusal's answer). */
  refusedUntil: number;
  asking: Promise<void> | null;
  /** Requests admitted in the current second (`second`) and in the one before: the rate that sizes an ask. */
  second: number;
  thisSecond: number;
  lastSecond: number;
}

export class RateLimiter {
  private readonly orgs = new Map<string, OrgRate>();

  constructor(
    private readonly actors: Pick<ActorPool, 'askOrg'>,
    private readonly clock: Clock,
  ) {}

  /** Throws RATE_LIMITED (with retry_after, in seconds) when the organization is over its rate. */
  async admit(organizationId: string): Promise<void> {
    const s = this.state(organizationId);
    for (;;) {
      const now = this.clock.now();
      if (s.unlimitedUntil > now) return;
      if (s.refusedUntil > now) throw limited(s.refusedUntil - now);
      if (s.held > 0 && now <= s.until) {
        s.held--;
        this.count(s, now);
        return;
      }
      if (s.asking) {
        await s.asking;
        continue;
      }
      const want = Math.max(1, Math.ceil((Math.max(s.lastSecond, s.thisSecond) * HOLD_MS) / 1000));
      const hold = want > 1 ? HOLD_MS : 0;
      let mine = false;
      const asked = this.actors.askOrg(organizationId, 'permits', { want, holdMs: hold }).then((p) => {
        if (p.unlimited) s.unlimitedUntil = now + UNLIMITED_MS;
        else if (p.granted === 0) s.refusedUntil = now + p.retryAfterMs;
        else {
          // The asker takes the first; the rest are for this node's next requests, until they lapse.
          mine = true;
          s.held = p.granted - 1;
          s.until = p.until;
        }
      });
      s.asking = asked.finally(() => (s.asking = null));
      await s.asking;
      if (mine) {
        this.count(s, this.clock.now());
        return;
      }
    }
  }

  /** Forget what this node holds for the organization (its plan or overrides changed). */
  invalidate(organizationId: string): void {
    this.orgs.delete(organizationId);
  }

  /** Plan changes may have been missed: every organization starts afresh. */
  invalidateAll(): void {
    this.orgs.clear();
  }

  private state(organizationId: string): OrgRate {
    let s = this.orgs.get(organizationId);
    if (!s) {
      // Organizations that stopped calling go, or the map would keep every organization ever seen.
      if (this.orgs.size >= MAX_ORGS) {
        const old = Math.floor(this.clock.now() / 1000) - 60;
        for (const [org, o] of this.orgs) if (o.second < old && o.asking === null) this.orgs.delete(org);
      }
      s = { unlimitedUntil: 0, held: 0, until: 0, refusedUntil: 0, asking: null, second: 0, thisSecond: 0, lastSecond: 0 };
      this.orgs.set(organizationId, s);
    }
    return s;
  }

  private count(s: OrgRate, now: number): void {
    const sec = Math.floor(now / 1000);
    if (sec !== s.second) {
      s.lastSecond = sec === s.second + 1 ? s.thisSecond : 0;
      s.thisSecond = 0;
      s.second = sec;
    }
    s.thisSecond++;
  }
}

function limited(waitMs: number): AppError {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  return new AppError('RATE_LIMITED', `Rate limit exceeded; retry in ${retryAfter} s`, { retry_after: retryAfter });
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
