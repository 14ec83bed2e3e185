// Organizations: self-service registration (open to anyone when REGISTRATION_MODE=open, otherwise for the
// admin only), the admin operations (list, create on a plan, change the plan or the limit overrides, reset the
// daily usage), an organization's own usage report, and the first-boot bootstrap. A new organization comes
// with its first API key (`*`), shown once.
//
// A plan change is written to the store, then reaches the organization's quota actor and this node's rate
// limiter at once, and the other nodes' rate limiters through the invalidation channel.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Type, { type Static } from 'typebox';
import { newApiKey } from '../actors/org/api-key.js';
import type { Usage } from '../actors/org/org-actor.js';
import { PLAN_RESOURCES, PLAN_TIERS, type LimitOverrides, type PlanLimits, type PlanTier } from '../actors/org/plans.js';
import type { Config } from '../config.js';
import { AppError, notFound } from '../errors.js';
import { createOrganization } from '../io/db/sql/createOrganization.js';
import { getOrganization, type OrganizationRow } from '../io/db/sql/getOrganization.js';
import { jobStats, type StatusCounts } from '../io/db/sql/jobStats.js';
import { listOrganizations } from '../io/db/sql/listOrganizations.js';
import { organizationPlan } from '../io/db/sql/organizationPlan.js';
import { readUsageDay } from '../io/db/sql/readUsageDay.js';
import { setOrganizationPlan } from '../io/db/sql/setOrganizationPlan.js';
import type { Store } from '../io/db/store.js';
import { validator, type Valid } from '../io/validate.js';
import type { ApiCalls } from './api-calls.js';
import type { AppContext } from './context.js';
import { isUuid } from './fields.js';
import type { RateLimiter } from './rate-limit.js';

export const SLUG_PATTERN = '^[a-z0-9][a-z0-9-]{1,62}$';

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
  slug: Type.String({ minLength: 2, maxLength: 63, pattern: SLUG_PATTERN, description: '2–63 characters: lowercase letters, digits, hyphens; not starting with a hyphen' }),
  owner_email: Type.Optional(
    Type.Union([Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' }), Type.Null()], {
      description: 'the address email login sends codes to',
    }),
  ),
};
const RegisterSchema = Type.Object(fields);
export const RegisterBody = validator(RegisterSchema);
export const AdminCreateBody = validator(
  Type.Object({ ...fields, plan: Type.Optional(Type.Union(PLAN_TIERS.map((t) => Type.Literal(t)), { default: 'free' })) }),
);

const Limit = Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]);
export const PlanBody = validator(Type.Object({ plan: Type.Union(PLAN_TIERS.map((t) => Type.Literal(t))) }));
export const LimitsBody = validator(
  Type.Object({ limits: Type.Object(Object.fromEntries(PLAN_RESOURCES.map((r) => [r, Type.Optional(Limit)])), { additionalProperties: false }) }),
);

const FIRST_KEY_NAME = 'default';

/** A new organization and its first key (the key itself is nowhere else). */
export interface CreatedOrganization {
  organization: OrganizationRow;
  apiKey: { id: string; name: string; key: string; permissions: string[]; created_at: Date };
}

export interface PlanSetting {
  organization_id: string;
  plan: PlanTier;
  limit_overrides: LimitOverrides;
}

const percentage = (current: number, limit: number | null): number | null =>
  limit === null ? null : limit === 0 ? 100 : Math.round((current / limit) * 10_000) / 100;

/** The usage report of GET /organizations/usage. */
export interface UsageReport {
  organization_id: string;
  plan: Usage['plan'];
  period: { start: string; day: string };
  usage: Record<string, { current: number; limit: number | null; percentage?: number | null }>;
  limits: PlanLimits;
  jobs: { created_today: number; by_status: StatusCounts; total: number };
  api_calls: { today: number; rate_limited_today: number; rate_per_second: number | null; burst: number | null };
}

export class Organizations {
  constructor(
    private readonly c: AppContext,
    private readonly limiter: RateLimiter,
    private readonly apiCalls: ApiCalls,
  ) {}

  /** Whether anyone may register; otherwise registration is the admin's. */
  get registrationOpen(): boolean {
    return this.c.config.registrationMode === 'open';
  }

  /** Self-service registration: the Free plan. */
  register(body: Valid<typeof RegisterBody>): Promise<CreatedOrganization> {
    return this.create(body, 'free');
  }

  /** 409 SLUG_TAKEN when the slug is taken. */
  async create(body: Static<typeof RegisterSchema>, plan: PlanTier): Promise<CreatedOrganization> {
    const { key, digest, prefix } = newApiKey(this.c.config.production);
    const id = randomUUID();
    const keyId = randomUUID();
    const at = new Date(this.c.clock.now());
    const created = await createOrganization(this.c.store, {
      id,
      name: body.name,
      slug: body.slug,
      plan,
      ownerEmail: body.owner_email ? body.owner_email.trim().toLowerCase() : null,
      keyId,
      keyName: FIRST_KEY_NAME,
      keyDigest: digest,
      keyPrefix: prefix,
      at,
    });
    // The insert skips on any conflict, and the id is new: the slug is taken.
    if (!created) throw new AppError('SLUG_TAKEN', `The slug "${body.slug}" is taken`);
    const organization = (await getOrganization(this.c.store, id))!;
    return { organization, apiKey: { id: keyId, name: FIRST_KEY_NAME, key, permissions: ['*'], created_at: at } };
  }

  /** A page of every organization by slug; one row more than `limit` says there is a next page. */
  list(afterSlug: string | null, limit: number): Promise<OrganizationRow[]> {
    return listOrganizations(this.c.store, afterSlug, limit);
  }

  setPlan(id: string, plan: PlanTier): Promise<PlanSetting> {
    return this.change(id, (current) => ({ ...current, plan }));
  }

  /** The overrides replace the previous ones; null is unlimited. */
  setLimits(id: string, overrides: LimitOverrides): Promise<PlanSetting> {
    return this.change(id, (current) => ({ ...current, overrides }));
  }

  /** Resets the organization's jobs-per-day count. */
  async resetUsage(id: string): Promise<void> {
    if (!isUuid(id) || !(await organizationPlan(this.c.store, id))) throw notFound('Organization');
    await this.c.quotas.resetUsage(id);
  }

  async usage(org: string): Promise<UsageReport> {
    const u = await this.c.quotas.usage(org);
    const [stats, stored] = await Promise.all([jobStats(this.c.store, org, null), readUsageDay(this.c.store, org, u.day)]);
    const unflushed = this.apiCalls.unflushed(org, u.day);
    const entry = (current: number, limit: number | null) => ({ current, limit, percentage: percentage(current, limit) });
    return {
      organization_id: org,
      plan: u.plan,
      period: { start: `${u.day}T00:00:00.000Z`, day: u.day },
      usage: {
        jobs_today: entry(u.jobs_today, u.limits.jobs_per_day),
        active_jobs: entry(u.active_jobs, u.limits.active_jobs),
        queues: { current: u.counts.queues, limit: u.limits.queues },
        workers: { current: u.counts.workers, limit: u.limits.workers },
        api_keys: { current: u.counts.api_keys, limit: u.limits.api_keys },
        schedules: { current: u.counts.schedules, limit: u.limits.schedules },
        workflows: { current: u.counts.workflows, limit: u.limits.workflows },
        webhooks: { current: u.counts.webhooks, limit: u.limits.webhooks },
      },
      limits: u.limits,
      jobs: { created_today: u.jobs_today, by_status: stats, total: Object.values(stats).reduce((a, b) => a + b, 0) },
      api_calls: {
        today: stored.api_calls + unflushed.calls,
        rate_limited_today: stored.rate_limited + unflushed.limited,
        rate_per_second: u.limits.rate_per_second,
        burst: u.limits.burst,
      },
    };
  }

  /** Writes the organization's plan row, then tells its quota actor and every node's rate limiter. */
  private async change(
    id: string,
    edit: (current: { plan: PlanTier; overrides: LimitOverrides }) => { plan: PlanTier; overrides: LimitOverrides },
  ): Promise<PlanSetting> {
    if (!isUuid(id)) throw notFound('Organization');
    const row = await organizationPlan(this.c.store, id);
    if (!row) throw notFound('Organization');
    const next = edit({ plan: row.plan as PlanTier, overrides: row.limit_overrides as LimitOverrides });
    await setOrganizationPlan(this.c.store, id, next.plan, next.overrides, new Date(this.c.clock.now()));
    await this.c.quotas.setPlan(id, next.plan, next.overrides);
    this.limiter.invalidate(id);
    // Other nodes' rate limiters cache the plan too.
    await this.c.invalidations.publish({ kind: 'org', id }).catch(() => {});
    return { organization_id: id, plan: next.plan, limit_overrides: next.overrides };
  }
}

/** Where the bootstrap key is written, in the data directory. */
export const KEY_FILE = 'default-api-key';

/**
 * First boot: with no organization in the store, create `default` and its first API key. The key is printed
 * once and written (mode 0600) into the data directory, the only two places it ever appears. Runs before the
 * actors start (nothing else exists yet), so it takes the store rather than the use cases' context.
 */
export async function bootstrap(store: Store, config: Config, now: number, log: (msg: string) => void): Promise<string | null> {
  const { key, digest, prefix } = newApiKey(config.production);
  const created = await createOrganization(
    store,
    {
      id: randomUUID(),
      name: 'Default',
      slug: 'default',
      // The instance operator's own organization: no quotas and no rate limit (its limits can be changed later
      // through the admin API like any other organization's).
      plan: 'enterprise',
      limitOverrides: { rate_per_second: null, burst: null },
      keyId: randomUUID(),
      keyName: 'bootstrap',
      keyDigest: digest,
      keyPrefix: prefix,
      at: new Date(now),
    },
    true,
  );
  if (!created) return null;
  fs.mkdirSync(config.dataDir, { recursive: true });
  const file = path.join(config.dataDir, KEY_FILE);
  fs.writeFileSync(file, `${key}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  log(`created organization "default"; its API key (shown once, also in ${file}):\n\n    ${key}\n`);
  return key;
}
