// findApiKey — the live key with this digest and its organization. Revoked keys are not returned.
import type { Store } from '../store.js';

export interface KeyRow {
  id: string;
  organization_id: string;
  permissions: string[];
}

export async function findApiKey(store: Store, digest: string): Promise<KeyRow | null> {
  const rows = await store.query<KeyRow>(
    'SELECT id, organization_id, permissions FROM api_keys WHERE key_digest = $1 AND revoked_at IS NULL',
    [digest],
  );
  return rows[0] ?? null;
}
