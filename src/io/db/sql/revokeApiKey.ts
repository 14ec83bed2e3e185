// revokeApiKey — sets revoked_at once; revoking a revoked key keeps its first revocation time. Returns the key
// (null when the organization has no such key), and whether this call revoked it.
import type { Store } from '../store.js';
import { API_KEY_COLUMNS, type ApiKeyRow } from './getApiKey.js';

export async function revokeApiKey(
  store: Store,
  organizationId: string,
  id: string,
  at: Date,
): Promise<{ key: ApiKeyRow; revokedNow: boolean } | null> {
  // The CTE sees the row as it was before the UPDATE: it tells whether this call is the one that revoked it.
  const rows = await store.query<ApiKeyRow & { was_live: boolean }>(
    `WITH before AS (SELECT id, revoked_at IS NULL AS was_live FROM api_keys WHERE organization_id = $1 AND id = $2)
     UPDATE api_keys k SET revoked_at = COALESCE(k.revoked_at, $3)
       FROM before WHERE k.id = before.id
     RETURNING ${API_KEY_COLUMNS.split(', ').map((c) => `k.${c}`).join(', ')}, before.was_live`,
    [organizationId, id, at],
  );
  const row = rows[0];
  if (!row) return null;
  const { was_live, ...key } = row;
  return { key, revokedNow: was_live };
}
