// updateApiKey — renames a live key and/or replaces its permissions. The UPDATE re-checks revoked_at on the row
// it locks, so a revocation that commits first wins and nothing is changed. When nothing of this organization was
// updated, the key as it is tells a revoked key (409) from a missing one (404), in the same statement.
// Permissions go in as one comma-separated string, as in createApiKey (pg and PGlite send arrays differently).
import type { Store } from '../store.js';
import { API_KEY_COLUMNS, type ApiKeyRow } from './getApiKey.js';

export type KeyUpdate = { updated: true; key: ApiKeyRow; permissionsChanged: boolean } | { updated: false; key: ApiKeyRow } | null;

export async function updateApiKey(
  store: Store,
  organizationId: string,
  id: string,
  change: { name?: string; permissions?: readonly string[] },
): Promise<KeyUpdate> {
  const cols = API_KEY_COLUMNS.split(', ');
  const rows = await store.query<ApiKeyRow & { updated: boolean; old_permissions: string[] }>(
    `WITH before AS (SELECT id, permissions FROM api_keys WHERE organization_id = $1 AND id = $2),
     upd AS (
       UPDATE api_keys k SET name = COALESCE($3, k.name),
         permissions = CASE WHEN $5::boolean THEN string_to_array($4, ',') ELSE k.permissions END
       FROM before WHERE k.id = before.id AND k.revoked_at IS NULL
       RETURNING ${cols.map((c) => `k.${c}`).join(', ')}, before.permissions AS old_permissions
     )
     SELECT ${API_KEY_COLUMNS}, true AS updated, old_permissions FROM upd
     UNION ALL
     SELECT ${API_KEY_COLUMNS}, false AS updated, permissions AS old_permissions FROM api_keys
      WHERE organization_id = $1 AND id = $2 AND NOT EXISTS (SELECT 1 FROM upd)`,
    [organizationId, id, change.name ?? null, (change.permissions ?? []).join(','), change.permissions !== undefined],
  );
  const r = rows[0];
  if (!r) return null;
  const { updated, old_permissions, ...key } = r;
  if (!updated) return { updated: false, key };
  return { updated: true, key, permissionsChanged: [...old_permissions].sort().join(',') !== [...key.permissions].sort().join(',') };
}
