// Organization routes (REST adapter): self-service registration (REGISTRATION_MODE=open, otherwise it needs
// X-Admin-Key) and the admin API's list and create-with-plan. The operations are src/app/organizations.ts.
//
// These routes take no Bearer credential (permission null in the router): registration is for people who have
// none yet, and the admin API's credential is X-Admin-Key, checked here (../admin.ts, constant time).
import Type from 'typebox';
import { PLAN_TIERS } from '../../../actors/org/plans.js';
import type { App } from '../../../app/app.js';
import { AdminCreateBody, RegisterBody, type CreatedOrganization } from '../../../app/organizations.js';
import type { Config } from '../../../config.js';
import type { OrganizationRow } from '../../db/sql/getOrganization.js';
import { requireAdmin } from '../admin.js';
import { cursorCodec, pageResponse, parseLimit, readCursor, pagedDoc } from '../cursor.js';
import { isoOf } from '../../present.js';
import type { Request, Response, Route } from '../router.js';

/** Keyset over the slug, ascending (byte order). */
const ORGS_CURSOR = cursorCodec('organizations', ['text']);

export const Organization = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  slug: Type.String(),
  plan: Type.String(),
  owner_email: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
}, { $id: 'Organization' });
const Created = Type.Object({
  organization: Organization,
  api_key: Type.Object({
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    key: Type.String({ description: 'the first API key; shown in this answer only' }),
    permissions: Type.Array(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
  }),
}, { $id: 'CreatedOrganization' });

export function presentOrganization(row: OrganizationRow): Record<string, unknown> {
  return { id: row.id, name: row.name, slug: row.slug, plan: row.plan, owner_email: row.owner_email, created_at: isoOf(row.created_at) };
}

export function organizationRoutes(app: App, config: Config): Route[] {
  const { organizations } = app;
  const admin = (req: Request) => requireAdmin(req, config);

  const answer = ({ organization, apiKey }: CreatedOrganization): Response => ({
    status: 201,
    body: { organization: presentOrganization(organization), api_key: { ...apiKey, created_at: apiKey.created_at.toISOString() } },
  });

  const register = async (req: Request): Promise<Response> => {
    // The credential before the body: a closed registration tells nothing about what it would accept.
    if (!organizations.registrationOpen) admin(req);
    return answer(await organizations.register(RegisterBody(req.body)));
  };

  const adminCreate = async (req: Request): Promise<Response> => {
    admin(req);
    const body = AdminCreateBody(req.body);
    return answer(await organizations.create(body, body.plan ?? 'free'));
  };

  const adminList = async (req: Request): Promise<Response> => {
    admin(req);
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, ORGS_CURSOR);
    const rows = await organizations.list(after?.[0] ?? null, limit);
    return pageResponse(req, rows, limit, ORGS_CURSOR, (r) => [r.slug], presentOrganization);
  };

  const created = { 201: { description: 'The organization and its first API key (`*`)', schema: Created } };
  const adminNote = 'Admin API: needs X-Admin-Key equal to ADMIN_API_KEY (401 otherwise, and for everyone when ADMIN_API_KEY is not set).';
  return [
    {
      method: 'POST',
      path: '/api/v1/organizations',
      permission: null,
      handler: register,
      doc: {
        operationId: 'createOrganization',
        summary: 'Create an organization (Free plan) and its first API key',
        description:
          'Open to anyone when REGISTRATION_MODE=open; otherwise it needs X-Admin-Key. 409 conflict when the slug is taken.',
        body: RegisterBody.schema,
        responses: created,
        errors: ['SLUG_TAKEN', 'UNAVAILABLE'],
        security: ['none', 'adminKey'],
      },
    },
    {
      method: 'GET',
      path: '/api/v1/admin/organizations',
      permission: null,
      handler: adminList,
      doc: {
        operationId: 'adminListOrganizations',
        summary: 'List every organization by slug, a page at a time (admin)',
        description: adminNote,
        ...pagedDoc('A page of organizations', Organization),
        errors: ['UNAVAILABLE'],
        security: ['adminKey'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/admin/organizations',
      permission: null,
      handler: adminCreate,
      doc: {
        operationId: 'adminCreateOrganization',
        summary: 'Create an organization on a plan, with its first API key (admin)',
        description: `${adminNote} plan: ${PLAN_TIERS.join(', ')} (default free). 409 conflict when the slug is taken.`,
        body: AdminCreateBody.schema,
        responses: created,
        errors: ['SLUG_TAKEN', 'UNAVAILABLE'],
        security: ['adminKey'],
      },
    },
  ];
}
