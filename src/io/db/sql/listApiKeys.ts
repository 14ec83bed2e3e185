// listApiKeys / getApiKey — an organization's keys as the API shows them (never the digest), newest first:
// ORDER BY created_at DESC, id DESC with the keyset of the jobs list (`cursor_at` to the microsecond), over the
// index api_keys_org_created (0004).
import type { Store } from '../store.js';
import { CURSOR_AT } from './listJobs.js';

export interface ApiKeyRow {
  id: string;
  organization_id: string;
  name: string;
  key_prefix: string;
  permissions: string[];
  created_at: Date | string;
  last_used_at: Date | string | null;
  revoked_at: Date | string | null;
}

export const API_KEY_COLUMNS = 'id, organization_id, name, key_prefix, permissions, created_at, last_used_at, revoked_at';

export type ApiKeyCursor = [at: string, id: string];

export async function listApiKeys(
  store: Store,
  organizationId: string,
  after: ApiKeyCursor | null,
  limit: number,
): Promise<Array<ApiKeyRow & { cursor_at: string }>> {
  return store.query(
    after === null
      ? `SELECT ${API_KEY_COLUMNS}, ${CURSOR_AT} AS cursor_at FROM api_keys WHERE organization_id = $1
          ORDER BY created_at DESC, id DESC LIMIT $2`
      : `SELECT ${API_KEY_COLUMNS}, ${CURSOR_AT} AS cursor_at FROM api_keys WHERE organization_id = $1
            AND (created_at, id) < ($3::timestamptz, $4::uuid)
          ORDER BY created_at DESC, id DESC LIMIT $2`,
    after === null ? [organizationId, limit + 1] : [organizationId, limit + 1, after[0], after[1]],
  );
}

/** The key of this organization with this id, or null (another organization's key is null too). */
export async function getApiKey(store: Store, organizationId: string, id: string): Promise<ApiKeyRow | null> {
  const rows = await store.query<ApiKeyRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE organization_id = $1 AND id = $2`, [
    organizationId,
    id,
  ]);
  return rows[0] ?? null;
}
