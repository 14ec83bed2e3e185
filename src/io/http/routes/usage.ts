// Plan usage: GET /organizations/usage for an organization's own view, and the admin routes that change an
// organization's plan, its limit overrides, and reset its daily usage. Plan changes reach the organization's
// quota actor and this node's rate limiter at once.
import Type from 'typebox';
import { PLAN_RESOURCES, PLAN_TIERS, type LimitOverrides, type PlanTier } from '../../../actors/org/plans.js';
import { notFound } from '../../../errors.js';
import { jobStats } from '../../db/sql/jobStats.js';
import { organizationPlan } from '../../db/sql/organizationPlan.js';
import { readUsageDay } from '../../db/sql/readUsageDay.js';
import { setOrganizationPlan } from '../../db/sql/setOrganizationPlan.js';
import { requireAdmin } from '../admin.js';
import { ANY_CREDENTIAL } from '../auth.js';
import type { RateLimiter } from '../rate-limit.js';
import type { Request, Response, Route } from '../router.js';
import { PlanChange, Usage, UsageReset } from '../schemas.js';
import { validator } from '../../validate.js';
import type { Services } from './services.js';
import type { ApiCalls } from '../../../runtime/api-calls.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const Limit = Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]);
const PlanBody = validator(Type.Object({ plan: Type.Union(PLAN_TIERS.map((t) => Type.Literal(t))) }));
const LimitsBody = validator(
  Type.Object({ limits: Type.Object(Object.fromEntries(PLAN_RESOURCES.map((r) => [r, Type.Optional(Limit)])), { additionalProperties: false }) }),
);

const percentage = (current: number, limit: number | null): number | null =>
  limit === null ? null : limit === 0 ? 100 : Math.round((current / limit) * 10_000) / 100;

export function usageRoutes(s: Services, extra: { limiter: RateLimiter; apiCalls: ApiCalls }): Route[] {
  const usage = async (req: Request): Promise<Response> => {
    const org = req.principal.organizationId;
    const u = await s.quotas.usage(org);
    const [stats, stored] = await Promise.all([jobStats(s.store, org, null), readUsageDay(s.store, org, u.day)]);
    const unflushed = extra.apiCalls.unflushed(org, u.day);
    const entry = (current: number, limit: number | null) => ({ current, limit, percentage: percentage(current, limit) });
    return {
      status: 200,
      body: {
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
      },
    };
  };

  /** Writes the organization's plan row, then tells its quota actor and every node's rate limiter. */
  const change = async (req: Request, edit: (current: { plan: PlanTier; overrides: LimitOverrides }) => { plan: PlanTier; overrides: LimitOverrides }) => {
    requireAdmin(req, s.config);
    const id = req.params.id!;
    if (!UUID.test(id)) throw notFound('Organization');
    const row = await organizationPlan(s.store, id);
    if (!row) throw notFound('Organization');
    const next = edit({ plan: row.plan as PlanTier, overrides: row.limit_overrides as LimitOverrides });
    await setOrganizationPlan(s.store, id, next.plan, next.overrides, new Date(s.clock.now()));
    await s.quotas.setPlan(id, next.plan, next.overrides);
    extra.limiter.invalidate(id);
    // Other nodes' rate limiters cache the plan too.
    await s.invalidations.publish({ kind: 'org', id }).catch(() => {});
    return { status: 200, body: { organization_id: id, plan: next.plan, limit_overrides: next.overrides } };
  };

  return [
    {
      method: 'GET',
      path: '/api/v1/organizations/usage',
      permission: ANY_CREDENTIAL,
      handler: usage,
      doc: { operationId: 'getUsage', summary: "The organization's plan, quota usage and today's API calls", responses: { 200: { description: 'Usage', schema: Usage } } },
    },
    {
      method: 'PUT',
      path: '/api/v1/admin/organizations/:id/plan',
      permission: null,
      handler: (req) => change(req, (c) => ({ ...c, plan: PlanBody(req.body).plan })),
      doc: {
        operationId: 'adminSetPlan',
        summary: "Admin (X-Admin-Key): change an organization's plan",
        body: PlanBody.schema,
        responses: { 200: { description: 'The new plan', schema: PlanChange } },
        errors: ['UNAVAILABLE'],
        security: ['adminKey'],
      },
    },
    {
      method: 'PUT',
      path: '/api/v1/admin/organizations/:id/limits',
      permission: null,
      handler: (req) => change(req, (c) => ({ ...c, overrides: LimitsBody(req.body).limits as LimitOverrides })),
      doc: {
        operationId: 'adminSetLimits',
        summary: "Admin (X-Admin-Key): set an organization's limit overrides (they replace the previous ones; null is unlimited)",
        body: LimitsBody.schema,
        responses: { 200: { description: 'The overrides', schema: PlanChange } },
        errors: ['UNAVAILABLE'],
        security: ['adminKey'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/admin/organizations/:id/usage/reset',
      permission: null,
      handler: async (req) => {
        requireAdmin(req, s.config);
        const id = req.params.id!;
        if (!UUID.test(id) || !(await organizationPlan(s.store, id))) throw notFound('Organization');
        await s.quotas.resetUsage(id);
        return { status: 200, body: { organization_id: id, jobs_today: 0 } };
      },
      doc: {
        operationId: 'adminResetUsage',
        summary: "Admin (X-Admin-Key): reset an organization's jobs-per-day count",
        responses: { 200: { description: 'Reset', schema: UsageReset } },
        errors: ['UNAVAILABLE'],
        security: ['adminKey'],
      },
    },
  ];
}
