// API keys: create (counted against the `api_keys` quota; the key itself is returned once and never stored),
// list, get, update (name, permissions: a change of permissions is announced to every node), revoke (announced to
// every node: the key and every JWT issued from it stop working at once, and it stops counting). Keys are
// written straight to the store: no actor owns them.
import { randomUUID } from 'node:crypto';
import Type, { type Static } from 'typebox';
import { newApiKey } from '../actors/org/api-key.js';
import { AppError, notFound } from '../errors.js';
import { createApiKey } from '../io/db/sql/createApiKey.js';
import { getApiKey, type ApiKeyRow } from '../io/db/sql/getApiKey.js';
import { listApiKeys, type ApiKeyCursor } from '../io/db/sql/listApiKeys.js';
import { revokeApiKey } from '../io/db/sql/revokeApiKey.js';
import { updateApiKey } from '../io/db/sql/updateApiKey.js';
import { validator, type Valid } from '../io/validate.js';
import { PERMISSIONS, type Authenticator } from './auth.js';
import type { AppContext } from './context.js';
import { isUuid } from './fields.js';

export const Permission = Type.Union([
  Type.Literal('*'),
  Type.Literal('jobs:read'),
  Type.Literal('jobs:write'),
  Type.Literal('queues:read'),
  Type.Literal('queues:write'),
  Type.Literal('dlq:read'),
  Type.Literal('dlq:write'),
]);
// PERMISSIONS (auth.ts) is the list; this line stops compiling if one of its names is missing above.
PERMISSIONS satisfies ReadonlyArray<Static<typeof Permission>>;
export const Permissions = Type.Array(Permission, { minItems: 1, maxItems: PERMISSIONS.length, uniqueItems: true });

const KeyName = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' });

export const CreateKeyBody = validator(Type.Object({ name: KeyName, permissions: Type.Optional(Permissions) }));

/** The same fields and rules as create; those left out keep their value. */
export const UpdateKeyBody = validator(Type.Object({ name: Type.Optional(KeyName), permissions: Type.Optional(Permissions) }));

/** `*` already grants everything: a list holding it is just `*`. */
const normalized = (permissions: ReadonlyArray<string>): string[] => (permissions.includes('*') ? ['*'] : [...permissions]);

export class ApiKeys {
  constructor(
    private readonly c: AppContext,
    private readonly auth: Authenticator,
  ) {}

  /** A new key of the organization: its row, and the key itself (shown in this answer only). */
  async create(org: string, body: Valid<typeof CreateKeyBody>): Promise<{ row: ApiKeyRow; key: string }> {
    const { key, digest, prefix } = newApiKey(this.c.config.production);
    await this.c.quotas.reserve(org, 'api_keys');
    try {
      const row = await createApiKey(this.c.store, {
        id: randomUUID(),
        organizationId: org,
        name: body.name,
        digest,
        prefix,
        permissions: normalized(body.permissions ?? ['*']),
        at: new Date(this.c.clock.now()),
      });
      return { row, key };
    } catch (err) {
      this.c.quotas.release(org, 'api_keys');
      throw err;
    }
  }

  /** A page of the organization's keys, newest first; one row more than `limit` says there is a next page. */
  list(org: string, after: ApiKeyCursor | null, limit: number): Promise<Array<ApiKeyRow & { cursor_at: string }>> {
    return listApiKeys(this.c.store, org, after, limit);
  }

  async get(org: string, id: string): Promise<ApiKeyRow> {
    const row = isUuid(id) ? await getApiKey(this.c.store, org, id.toLowerCase()) : null;
    if (!row) throw notFound('API key');
    return row;
  }

  /**
   * Renames the key or replaces its permissions (404 for another organization's key, 409 for a revoked one).
   * New permissions apply at once on every node, to the key and to the JWTs issued from it (auth.ts).
   */
  async update(org: string, id: string, body: Valid<typeof UpdateKeyBody>): Promise<ApiKeyRow> {
    const done = isUuid(id)
      ? await updateApiKey(this.c.store, org, id.toLowerCase(), {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.permissions !== undefined ? { permissions: normalized(body.permissions) } : {}),
        })
      : null;
    if (!done) throw notFound('API key');
    if (!done.updated) throw new AppError('CONFLICT', 'The API key is revoked; it can no longer be changed');
    if (done.permissionsChanged) await this.auth.keyChanged(done.key.id);
    return done.key;
  }

  /** Revokes the key; revoking a revoked key answers it as it is (its first revocation time). */
  async revoke(org: string, id: string): Promise<ApiKeyRow> {
    const done = isUuid(id) ? await revokeApiKey(this.c.store, org, id.toLowerCase(), new Date(this.c.clock.now())) : null;
    if (!done) throw notFound('API key');
    // Committed: from now on every node refuses the key and the JWTs issued from it, and it stops counting.
    await this.auth.revokeKey(done.key.id);
    if (done.revokedNow) this.c.quotas.release(org, 'api_keys');
    return done.key;
  }
}
