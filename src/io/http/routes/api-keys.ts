// API key routes (REST adapter): create (the key is in this answer only), list, get, update, revoke. All need `*`: a key
// that could mint keys could grant itself any permission. Keys are never shown again, nor their digests; the
// prefix (`svc_test_AbCd…`) is what tells them apart in a list. The operations are src/app/api-keys.ts.
import Type from 'typebox';
import type { App } from '../../../app/app.js';
import { CreateKeyBody, UpdateKeyBody } from '../../../app/api-keys.js';
import { PERMISSIONS } from '../../../app/auth.js';
import type { ApiKeyRow } from '../../db/sql/getApiKey.js';
import { cursorCodec, pageResponse, parseLimit, readCursor, pagedDoc } from '../cursor.js';
import { isoOf } from '../../present.js';
import type { Request, Response, Route } from '../router.js';

/** Keyset over (created_at, id), newest first. */
const KEYS_CURSOR = cursorCodec('api-keys', ['time', 'uuid']);

const Time = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
export const ApiKey = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  key_prefix: Type.String({ description: 'the first 16 characters of the key' }),
  permissions: Type.Array(Type.String()),
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked')]),
  is_active: Type.Boolean({ description: 'status is active (the same fact, as clients of the hosted service read it)' }),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'coarse: written at most every 5 minutes per key, so a working key may look idle',
  }),
  revoked_at: Time,
}, { $id: 'ApiKey' });
const CreatedKey = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  key: Type.String({ description: 'the API key; shown in this answer only' }),
  key_prefix: Type.String(),
  permissions: Type.Array(Type.String()),
  is_active: Type.Literal(true),
  created_at: Type.String({ format: 'date-time' }),
}, { $id: 'CreatedApiKey' });

function presentApiKey(row: ApiKeyRow): Record<string, unknown> {
  return {
    id: row.id,
    name: row.name,
    key_prefix: row.key_prefix,
    permissions: row.permissions,
    status: row.revoked_at === null ? 'active' : 'revoked',
    is_active: row.revoked_at === null,
    created_at: isoOf(row.created_at),
    last_used_at: isoOf(row.last_used_at),
    revoked_at: isoOf(row.revoked_at),
  };
}

export function apiKeyRoutes(app: App): Route[] {
  const keys = app.apiKeys;
  const org = (req: Request) => req.principal.organizationId;

  const create = async (req: Request): Promise<Response> => {
    const { row, key } = await keys.create(org(req), CreateKeyBody(req.body));
    return {
      status: 201,
      body: { id: row.id, name: row.name, key, key_prefix: row.key_prefix, permissions: row.permissions, is_active: true, created_at: isoOf(row.created_at) },
    };
  };

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const rows = await keys.list(org(req), readCursor(req.query, KEYS_CURSOR), limit);
    return pageResponse(req, rows, limit, KEYS_CURSOR, (r) => [r.cursor_at, r.id], presentApiKey);
  };

  const get = async (req: Request): Promise<Response> => ({ status: 200, body: presentApiKey(await keys.get(org(req), req.params.id!)) });

  const update = async (req: Request): Promise<Response> => {
    const body = UpdateKeyBody(req.body);
    return { status: 200, body: presentApiKey(await keys.update(org(req), req.params.id!, body)) };
  };

  const revoke = async (req: Request): Promise<Response> => ({ status: 200, body: presentApiKey(await keys.revoke(org(req), req.params.id!)) });

  return [
    {
      method: 'POST',
      path: '/api/v1/api-keys',
      permission: '*',
      handler: create,
      doc: {
        operationId: 'createApiKey',
        summary: 'Create an API key of the organization (the key is shown in this answer only)',
        description: `permissions default to ["*"]; each is one of ${PERMISSIONS.join(', ')}.`,
        body: CreateKeyBody.schema,
        responses: { 201: { description: 'The new key, with its secret value', schema: CreatedKey } },
        errors: ['QUOTA_EXCEEDED'],
      },
    },
    {
      method: 'GET',
      path: '/api/v1/api-keys',
      permission: '*',
      handler: list,
      doc: {
        operationId: 'listApiKeys',
        summary: "List the organization's API keys, newest first, a page at a time",
        ...pagedDoc('A page of keys (revoked ones included), without their secret values', ApiKey),
      },
    },
    {
      method: 'GET',
      path: '/api/v1/api-keys/:id',
      permission: '*',
      handler: get,
      doc: { operationId: 'getApiKey', summary: 'Get an API key (never its secret value)', responses: { 200: { description: 'The key', schema: ApiKey } } },
    },
    {
      method: 'PUT',
      path: '/api/v1/api-keys/:id',
      permission: '*',
      handler: update,
      doc: {
        operationId: 'updateApiKey',
        summary: 'Rename an API key or replace its permissions',
        description:
          'name and permissions follow the rules of create; a field left out keeps its value. New permissions apply at once on every node, ' +
          'to the key and to the tokens issued from it (narrowed, never widened), and the streams opened with it end. 409 for a revoked key.',
        body: UpdateKeyBody.schema,
        responses: { 200: { description: 'The key as it now is', schema: ApiKey } },
        errors: ['CONFLICT'],
      },
    },
    {
      method: 'DELETE',
      path: '/api/v1/api-keys/:id',
      permission: '*',
      handler: revoke,
      doc: {
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key: it and every JWT issued from it stop working at once',
        description: 'Revoking a revoked key answers the key as it is (its first revocation time).',
        responses: { 200: { description: 'The revoked key', schema: ApiKey } },
      },
    },
  ];
}
