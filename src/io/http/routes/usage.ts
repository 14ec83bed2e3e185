// Plan usage routes (REST adapter): GET /organizations/usage for an organization's own view, and the admin
// routes that change an organization's plan, its limit overrides, and reset its daily usage. The operations are
// src/app/organizations.ts.
import type { LimitOverrides } from '../../../actors/org/plans.js';
import type { App } from '../../../app/app.js';
import { ANY_CREDENTIAL } from '../../../app/auth.js';
import { LimitsBody, PlanBody } from '../../../app/organizations.js';
import type { Config } from '../../../config.js';
import { requireAdmin } from '../admin.js';
import type { Request, Response, Route } from '../router.js';
import { PlanChange, Usage, UsageReset } from '../schemas.js';

export function usageRoutes(app: App, config: Config): Route[] {
  const { organizations } = app;
  const admin = (req: Request) => requireAdmin(req, config);
  const handlers = {
    usage: async (req: Request): Promise<Response> => ({ status: 200, body: await organizations.usage(req.principal.organizationId) }),
    plan: async (req: Request): Promise<Response> => {
      admin(req);
      return { status: 200, body: await organizations.setPlan(req.params.id!, PlanBody(req.body).plan) };
    },
    limits: async (req: Request): Promise<Response> => {
      admin(req);
      return { status: 200, body: await organizations.setLimits(req.params.id!, LimitsBody(req.body).limits as LimitOverrides) };
    },
    reset: async (req: Request): Promise<Response> => {
      admin(req);
      const id = req.params.id!;
      await organizations.resetUsage(id);
      return { status: 200, body: { organization_id: id, jobs_today: 0 } };
    },
  };

  return [
    {
      method: 'GET',
      path: '/api/v1/organizations/usage',
      permission: ANY_CREDENTIAL,
      handler: handlers.usage,
      doc: { operationId: 'getUsage', summary: "The organization's plan, quota usage and today's API calls", responses: { 200: { description: 'Usage', schema: Usage } } },
    },
    {
      method: 'PUT',
      path: '/api/v1/admin/organizations/:id/plan',
      permission: null,
      handler: handlers.plan,
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
      handler: handlers.limits,
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
      handler: handlers.reset,
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
