// The plan table of the spec (Limits), as data, and how an organization's limits are resolved from it: the
// table, then the instance's PLAN_<TIER>_<RESOURCE> settings (read by src/config.ts and passed in), then the
// organization's own overrides (`resolveLimits`). The module stays pure: no process.env, no store. `null` means
// unlimited.

export const PLAN_TIERS = ['free', 'starter', 'pro', 'enterprise'] as const;
export type PlanTier = (typeof PLAN_TIERS)[number];

/**
 * Resource names. The quota ones are the spec's QUOTA_EXCEEDED `resource` values; the rest name their unit, so
 * that PLAN_<TIER>_<RESOURCE> reads on its own (PLAN_PRO_MAX_PAYLOAD_BYTES, PLAN_FREE_JOB_RETENTION_DAYS).
 */
export const PLAN_RESOURCES = [
  'jobs_per_day',
  'active_jobs',
  'queues',
  'workers',
  'api_keys',
  'schedules',
  'workflows',
  'webhooks',
  'max_payload_bytes',
  'rate_per_second',
  'burst',
  'job_retention_days',
  'history_retention_days',
] as const;
export type PlanResource = (typeof PLAN_RESOURCES)[number];

export type PlanLimits = { readonly [R in PlanResource]: number | null };

export interface Plan {
  readonly tier: PlanTier;
  readonly display_name: string;
  readonly limits: PlanLimits;
}

const KB = 1024;
const MB = 1024 * KB;

export const PLANS: { readonly [T in PlanTier]: Plan } = deepFreeze({
  free: {
    tier: 'free',
    display_name: 'Free',
    limits: {
      jobs_per_day: 1_000,
      active_jobs: 10,
      queues: 2,
      workers: 1,
      api_keys: 2,
      schedules: 1,
      // "none" in the spec: workflows are not available on Free.
      workflows: 0,
      webhooks: 1,
      max_payload_bytes: 64 * KB,
      rate_per_second: 5,
      burst: 10,
      job_retention_days: 3,
      history_retention_days: 1,
    },
  },
  starter: {
    tier: 'starter',
    display_name: 'Starter',
    limits: {
      jobs_per_day: 10_000,
      active_jobs: 500,
      queues: 10,
      workers: 5,
      api_keys: 5,
      schedules: 10,
      workflows: 5,
      webhooks: 5,
      max_payload_bytes: 256 * KB,
      rate_per_second: 25,
      burst: 50,
      job_retention_days: 14,
      history_retention_days: 7,
    },
  },
  pro: {
    tier: 'pro',
    display_name: 'Pro',
    limits: {
      jobs_per_day: 100_000,
      active_jobs: 5_000,
      queues: 50,
      workers: 25,
      api_keys: 25,
      schedules: 50,
      workflows: 25,
      webhooks: 20,
      max_payload_bytes: 1 * MB,
      rate_per_second: 100,
      burst: 200,
      job_retention_days: 30,
      history_retention_days: 30,
    },
  },
  enterprise: {
    tier: 'enterprise',
    display_name: 'Enterprise',
    limits: {
      jobs_per_day: null,
      active_jobs: null,
      queues: null,
      workers: null,
      api_keys: null,
      schedules: null,
      workflows: null,
      webhooks: null,
      max_payload_bytes: 1 * MB,
      rate_per_second: 500,
      burst: 1_000,
      job_retention_days: 90,
      history_retention_days: 90,
    },
  },
});

export function isPlanTier(value: string): value is PlanTier {
  return (PLAN_TIERS as readonly string[]).includes(value);
}

/** The default limit of `resource` on `tier`; null is unlimited. */
export function planLimit(tier: PlanTier, resource: PlanResource): number | null {
  return PLANS[tier].limits[resource];
}

/** Limits to lay over the defaults: null sets "unlimited", an absent resource keeps what is below. */
export type LimitOverrides = { readonly [R in PlanResource]?: number | null };
export type PlanOverrides = { readonly [T in PlanTier]?: LimitOverrides };

/** Defaults, then the instance's PLAN_<TIER>_<RESOURCE> settings, then the organization's own overrides. */
export function resolveLimits(tier: PlanTier, instance: PlanOverrides, organization: LimitOverrides = {}): PlanLimits {
  return { ...PLANS[tier].limits, ...instance[tier], ...organization };
}

/** The next tier up, named in quota errors; null on the top tier. */
export function upgradeTo(tier: PlanTier): PlanTier | null {
  return PLAN_TIERS[PLAN_TIERS.indexOf(tier) + 1] ?? null;
}

function deepFreeze<T extends object>(o: T): T {
  for (const v of Object.values(o)) if (v !== null && typeof v === 'object') deepFreeze(v);
  return Object.freeze(o);
}
