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
//
// Counters are rebuilt from rows when the actor is (re)built; jobs_today is also journaled (usage_daily) because
// a revived dead letter counts as a creation without a new row.
import { AppError } from '../../errors.js';
import type { Effects } from '../records.js';
import { PLANS, resolveLimits, upgradeTo, type LimitOverrides, type PlanLimits, type PlanOverrides, type PlanTier } from './plans.js';

export const COUNTED = ['queues', 'workers', 'api_keys', 'schedules', 'workflows', 'webhooks'] as const;
export type CountedResource = (typeof COUNTED)[number];

export interface OrgSnapshot {
  plan: PlanTier;
  overrides: LimitOverrides;
  day: string;
  jobsToday: number;
  activeJobs: number;
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

export class OrgActor {
  private limits: PlanLimits;

  constructor(
    readonly organizationId: string,
    private readonly instance: PlanOverrides,
    private s: OrgSnapshot,
  ) {
    this.limits = resolveLimits(s.plan, instance, s.overrides);
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
      this.persist(fx);
    }
    return n;
  }

  get payloadCap(): number | null {
    return this.limits.max_payload_bytes;
  }

  /** `day`: the day the jobs were admitted on (they are not taken off a later day's count). */
  releaseJobs(n: number, day: string, fx: Effects): void {
    this.s.activeJobs = Math.max(0, this.s.activeJobs - n);
    if (day === this.s.day) {
      this.s.jobsToday = Math.max(0, this.s.jobsToday - n);
      this.persist(fx);
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
      limits: this.limits,
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
