// getApiKey — one key of an organization as the API shows it (never the digest); another organization's key is
// not found. The row type and columns are shared by the other API key operations.
import type { Store } from '../store.js';

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

/** The key of this organization with this id, or null (another organization's key is null too). */
export async function getApiKey(store: Store, organizationId: string, id: string): Promise<ApiKeyRow | null> {
  const rows = await store.query<ApiKeyRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE organization_id = $1 AND id = $2`, [
    organizationId,
    id,
  ]);
  return rows[0] ?? null;
}
