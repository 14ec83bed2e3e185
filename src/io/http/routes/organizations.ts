// Organizations: self-service registration (REGISTRATION_MODE=open, otherwise it needs X-Admin-Key) and the
// admin API's list and create-with-plan. A new organization comes with its first API key (`*`), shown once.
//
// These routes take no Bearer credential (permission null in the router): registration is for people who have
// none yet, and the admin API's credential is X-Admin-Key, checked here (../admin.ts, constant time).
import { randomUUID } from 'node:crypto';
import Type, { type Static } from 'typebox';
import { newApiKey } from '../../../actors/org/api-key.js';
import { PLAN_TIERS, type PlanTier } from '../../../actors/org/plans.js';
import { AppError } from '../../../errors.js';
import { createOrganization } from '../../db/sql/createOrganization.js';
import { getOrganization, type OrganizationRow } from '../../db/sql/getOrganization.js';
import { listOrganizations } from '../../db/sql/listOrganizations.js';
import { requireAdmin } from '../admin.js';
import { cursorCodec, pageResponse, parseLimit, readCursor } from '../cursor.js';
import { isoOf } from '../../present.js';
import type { Request, Response, Route } from '../router.js';
import { validator } from '../../validate.js';
import type { Services } from './services.js';

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
const RegisterBody = validator(RegisterSchema);
const AdminCreateBody = validator(
  Type.Object({ ...fields, plan: Type.Optional(Type.Union(PLAN_TIERS.map((t) => Type.Literal(t)), { default: 'free' })) }),
);

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

const FIRST_KEY_NAME = 'default';

export function organizationRoutes(s: Services): Route[] {
  const admin = (req: Request) => requireAdmin(req, s.config);

  const create = async (body: Static<typeof RegisterSchema>, plan: PlanTier): Promise<Response> => {
    const { key, digest, prefix } = newApiKey(s.config.production);
    const id = randomUUID();
    const keyId = randomUUID();
    const at = new Date(s.clock.now());
    const ownerEmail = body.owner_email ? body.owner_email.trim().toLowerCase() : null;
    const created = await createOrganization(s.store, {
      id,
      name: body.name,
      slug: body.slug,
      plan,
      ownerEmail,
      keyId,
      keyName: FIRST_KEY_NAME,
      keyDigest: digest,
      keyPrefix: prefix,
      at,
    });
    // The insert skips on any conflict, and the id is new: the slug is taken.
    if (!created) throw new AppError('SLUG_TAKEN', `The slug "${body.slug}" is taken`);
    const row = await getOrganization(s.store, id);
    return {
      status: 201,
      body: {
        organization: presentOrganization(row!),
        api_key: { id: keyId, name: FIRST_KEY_NAME, key, permissions: ['*'], created_at: at.toISOString() },
      },
    };
  };

  const register = async (req: Request): Promise<Response> => {
    if (s.config.registrationMode !== 'open') admin(req);
    return create(RegisterBody(req.body), 'free');
  };

  const adminCreate = async (req: Request): Promise<Response> => {
    admin(req);
    const body = AdminCreateBody(req.body);
    return create(body, body.plan ?? 'free');
  };

  const adminList = async (req: Request): Promise<Response> => {
    admin(req);
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, ORGS_CURSOR);
    const rows = await listOrganizations(s.store, after?.[0] ?? null, limit);
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
        query: {
          limit: { schema: Type.Integer({ minimum: 1, maximum: 100, default: 20 }), description: 'page size' },
          cursor: { schema: Type.String(), description: 'X-Next-Cursor of the previous page (opaque)' },
        },
        responses: {
          200: {
            description: 'A page of organizations',
            schema: Type.Array(Organization),
            headers: { 'X-Next-Cursor': 'absent on the last page', Link: '<…&cursor={next}>; rel="next"; absent on the last page' },
          },
        },
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
