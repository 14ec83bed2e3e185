// OrgActor — the quota counters of one organization, the single place where "is there room?" is answered,
// so that 50 requests racing for the last slot admit exactly one.
//
// State: the plan (tier + the organization's overrides, over the instance's PLAN_* settings), jobs created
// today (UTC day of the injected clock; a new day starts at 0), active jobs (pending, scheduled, processing),
// and the counts of countable resources (queues, workers, api_keys, schedules, workflows, webhooks).
//
// Messages:
//   admitJobs(n, payload sizes)  payload cap (413), then jobs_per_day and active_jobs (429); both counters +n
//   grant(max)                   admission credit for a main thread (see grant below)
//   releaseJobs(n, today)        an admitted job that was not created after all (duplicate key, failure)
//   jobsFinished(n)              live jobs reached a terminal state (tell, from the queue actors' events)
//   reserve / release(resource)  a countable resource (429 at the limit)
//   counted(resource, ±n)        a change made without a reservation (a queue created by its first job)
//   setPlan / resetUsage         admin changes
//   permits(want, holdMs)        the request rate: up to `want` requests admitted now for a node to spend within
//                                `holdMs` (see permits below); 0 and the wait when the organization is over it
//
// Counters are rebuilt from rows when the actor is (re)built; jobs_today is also journaled (usage_daily) because
// a revived dead letter counts as a creation without a new row. The job counters come last (countedJobs): counting
// a backlog of a million jobs takes seconds, and the request rate and the resource counts need not wait for it.
import { AppError } from '../../errors.js';
import type { Effects } from '../records.js';
import { RateWindow } from '../rate-window.js';
import { PLANS, resolveLimits, upgradeTo, type LimitOverrides, type PlanLimits, type PlanOverrides, type PlanTier } from './plans.js';

export const COUNTED = ['queues', 'workers', 'api_keys', 'schedules', 'workflows', 'webhooks'] as const;
export type CountedResource = (typeof COUNTED)[number];

export interface OrgSnapshot {
  plan: PlanTier;
  overrides: LimitOverrides;
  day: string;
  jobsToday: number;
  /** Null until the live jobs are counted (see countedJobs). */
  activeJobs: number | null;
  counts: Record<CountedResource, number>;
}

export interface Usage {
  plan: { tier: PlanTier; display_name: string };
  limits: PlanLimits;
  day: string;
  jobs_today: number;
  active_jobs: number;
  counts: Record<CountedResource, number>;
}

const DAY_MS = 86_400_000;
let memoDay = NaN;
let memoText = '';

/** 'YYYY-MM-DD' of an instant, in UTC. Called on every request: the text is computed once per day. */
export function utcDay(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  if (day !== memoDay) {
    memoDay = day;
    memoText = new Date(day * DAY_MS).toISOString().slice(0, 10);
  }
  return memoText;
}

/** What a request-rate ask answers: permits to spend until `until`, or none and how long until one. */
export interface Permits {
  granted: number;
  until: number;
  retryAfterMs: number;
  /** The plan sets no request rate: nothing to ask until it changes. */
  unlimited: boolean;
}

export class OrgActor {
  private s: OrgSnapshot & { activeJobs: number };
  /** False until countedJobs: until then the host holds back what waitsForCount names. */
  jobsCounted: boolean;
  /** Jobs admitted (net of releases) on the day of the snapshot while the jobs were being counted. */
  private admittedUncounted = 0;
  private limits: PlanLimits;
  /** The request rate of the whole cluster (this actor is the organization's one counter): burst per 1 s, rate × 60 per 60 s. */
  private second: RateWindow | null = null;
  private minute: RateWindow | null = null;

  constructor(
    readonly organizationId: string,
    private readonly instance: PlanOverrides,
    snapshot: OrgSnapshot,
  ) {
    this.s = { ...snapshot, activeJobs: snapshot.activeJobs ?? 0 };
    this.jobsCounted = snapshot.activeJobs !== null;
    this.limits = resolveLimits(snapshot.plan, instance, snapshot.overrides);
    this.rateWindows();
  }

  /**
   * Admits up to `want` requests now, counted in both windows as if made at `now + holdMs`: a node spends them
   * within `holdMs`, and counting each at the latest moment it may be spent keeps every window under its limit
   * whenever it is really spent. A node asks for one at a time (holdMs 0, exact to the millisecond) unless its
   * organization sends fast enough to use more before they lapse.
   */
  permits(want: number, holdMs: number, now: number): Permits {
    if (this.second === null && this.minute === null) return { granted: 0, until: now, retryAfterMs: 0, unlimited: true };
    const at = now + holdMs;
    const room = Math.min(this.second?.available(at) ?? Infinity, this.minute?.available(at) ?? Infinity);
    const granted = Math.max(0, Math.min(want, room));
    for (let i = 0; i < granted; i++) {
      this.second?.record(at);
      this.minute?.record(at);
    }
    const retryAfterMs = granted > 0 ? 0 : Math.max(this.second?.nextSlot(now) ?? now, this.minute?.nextSlot(now) ?? now) - now;
    return { granted, until: at, retryAfterMs, unlimited: false };
  }

  admitJobs(n: number, payloadBytes: number[], fx: Effects): void {
    const cap = this.limits.max_payload_bytes;
    const largest = Math.max(0, ...payloadBytes);
    if (cap !== null && largest > cap) {
      throw new AppError('PAYLOAD_TOO_LARGE', `The payload is ${largest} bytes; the ${this.s.plan} plan allows ${cap}`, {
        current: largest,
        limit: cap,
        plan: this.s.plan,
        upgrade_to: upgradeTo(this.s.plan),
      });
    }
    this.rollDay(fx.now);
    this.check('jobs_per_day', this.s.jobsToday, n);
    this.check('active_jobs', this.s.activeJobs, n);
    this.s.jobsToday += n;
    this.s.activeJobs += n;
    if (!this.jobsCounted) this.admittedUncounted += n;
    this.persist(fx);
  }

  /**
   * Admits up to `max` jobs ahead of time for a node's main thread to hand out without asking (an admission
   * credit): at most a quarter of what is left under both job quotas, so near a limit the grant is 0 and every
   * admission comes here, one at a time. Unused credit comes back through releaseJobs.
   */
  grant(max: number, fx: Effects): number {
    const left = (resource: 'jobs_per_day' | 'active_jobs', used: number) => {
      const limit = this.limits[resource];
      return limit === null ? Infinity : limit - used;
    };
    const n = Math.max(0, Math.min(max, Math.floor(Math.min(left('jobs_per_day', this.s.jobsToday), left('active_jobs', this.s.activeJobs)) / 4)));
    if (n > 0) {
      this.s.jobsToday += n;
      this.s.activeJobs += n;
      if (!this.jobsCounted) this.admittedUncounted += n;
      this.persist(fx);
    }
    return n;
  }

  get payloadCap(): number | null {
    return this.limits.max_payload_bytes;
  }

  /** `day`: the day the jobs were admitted on (they are not taken off a later day's count). */
  releaseJobs(n: number, day: string, fx: Effects): void {
    // Uncounted, the counter holds only what was admitted meanwhile; a release of more (credit granted before a
    // rebuild) is taken off the count itself.
    this.s.activeJobs = this.jobsCounted ? Math.max(0, this.s.activeJobs - n) : this.s.activeJobs - n;
    if (!this.jobsCounted && day === this.s.day) this.admittedUncounted -= n;
    if (day === this.s.day) {
      this.s.jobsToday = Math.max(0, this.s.jobsToday - n);
      this.persist(fx);
    }
  }

  /**
   * The live jobs and the jobs rows created on `day`, counted after the actor began to serve. A job that finished
   * meanwhile may or may not be in the count: its tell was dropped, so the count errs high, like every rebuild.
   */
  countedJobs(day: string, activeJobs: number, createdToday: number): void {
    // What was admitted meanwhile (only on a plan without job limits) is added on top: a job created before the count
    // read the rows is then counted twice, erring high again.
    this.s.activeJobs = Math.max(0, this.s.activeJobs + activeJobs);
    if (day === this.s.day) this.s.jobsToday = Math.max(this.s.jobsToday, createdToday + this.admittedUncounted);
    this.jobsCounted = true;
  }

  /**
   * Whether a message must wait until the jobs are counted: what reads the job counters, and admissions unless the
   * plan limits neither jobs per day nor active jobs (then the count changes no answer, and a tenant with a large
   * backlog, which only such a plan allows, is not held up by counting it). A finished-job tell never waits: the
   * host drops it.
   */
  waitsForCount(op: string): boolean {
    if (this.jobsCounted) return false;
    switch (op) {
      case 'admit':
      case 'releaseJobs':
        return this.limits.jobs_per_day !== null || this.limits.active_jobs !== null;
      case 'usage':
      case 'resetUsage':
        return true;
      default:
        return false;
    }
  }

  jobsFinished(n: number): void {
    this.s.activeJobs = Math.max(0, this.s.activeJobs - n);
  }

  reserve(resource: CountedResource): void {
    this.check(resource, this.s.counts[resource], 1);
    this.s.counts[resource]++;
  }

  /** A release, or a change made without a reservation (negative or positive). */
  counted(resource: CountedResource, delta: number): void {
    this.s.counts[resource] = Math.max(0, this.s.counts[resource] + delta);
  }

  setPlan(plan: PlanTier, overrides: LimitOverrides): void {
    this.s.plan = plan;
    this.s.overrides = overrides;
    this.limits = resolveLimits(plan, this.instance, overrides);
    this.rateWindows();
  }

  /** Windows of the current limits; a changed limit keeps the requests already counted (no free burst). */
  private rateWindows(): void {
    const { burst, rate_per_second: rate } = this.limits;
    this.second = burst === null ? null : this.second?.limit === burst ? this.second : new RateWindow(burst, 1_000, this.second);
    this.minute = rate === null ? null : this.minute?.limit === rate * 60 ? this.minute : new RateWindow(rate * 60, 60_000, this.minute);
  }

  resetUsage(fx: Effects): void {
    this.rollDay(fx.now);
    this.s.jobsToday = 0;
    this.persist(fx);
  }

  usage(now: number): Usage {
    this.rollDay(now);
    return {
      plan: { tier: this.s.plan, display_name: PLANS[this.s.plan].display_name },
      // A copy: the reply may reach the main thread as it is (inline-thread.ts), and these are the limits it enforces.
      limits: { ...this.limits },
      day: this.s.day,
      jobs_today: this.s.jobsToday,
      active_jobs: this.s.activeJobs,
      counts: { ...this.s.counts },
    };
  }

  /** The day jobs admitted now count against (the caller hands it back to releaseJobs). */
  today(now: number): string {
    this.rollDay(now);
    return this.s.day;
  }

  private check(resource: keyof PlanLimits, current: number, n: number): void {
    const limit = this.limits[resource];
    if (limit === null || current + n <= limit) return;
    const plan = this.s.plan;
    throw new AppError(
      'QUOTA_EXCEEDED',
      limit === 0
        ? `The ${PLANS[plan].display_name} plan does not include ${resource}`
        : `The ${PLANS[plan].display_name} plan allows ${limit} ${resource}; ${current} in use`,
      { resource, current, limit, plan, upgrade_to: upgradeTo(plan) },
    );
  }

  private rollDay(now: number): void {
    const day = utcDay(now);
    if (day !== this.s.day) {
      this.s.day = day;
      this.s.jobsToday = 0;
    }
  }

  private persist(fx: Effects): void {
    fx.write({ kind: 'usage', organization_id: this.organizationId, day: this.s.day, jobs_created: this.s.jobsToday });
  }
}
