// createApiKey — a new key of an organization. Only the digest and a short prefix are stored; the key itself is
// returned to the caller once and never again. Permissions go in as one comma-separated string because array
// parameters are sent differently by pg and PGlite (permission names hold no comma).
import type { Store } from '../store.js';
import { API_KEY_COLUMNS, type ApiKeyRow } from './getApiKey.js';

export interface NewApiKey {
  id: string;
  organizationId: string;
  name: string;
  digest: string;
  prefix: string;
  permissions: readonly string[];
  at: Date;
}

export async function createApiKey(store: Store, k: NewApiKey): Promise<ApiKeyRow> {
  const rows = await store.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, organization_id, name, key_digest, key_prefix, permissions, created_at)
     VALUES ($1, $2, $3, $4, $5, string_to_array($6, ','), $7)
     RETURNING ${API_KEY_COLUMNS}`,
    [k.id, k.organizationId, k.name, k.digest, k.prefix, k.permissions.join(','), k.at],
  );
  return rows[0]!;
}
