// findApiKey — a key and its organization by digest, for the authenticator (an API key credential). It answers
// revoked keys too (revoked: true), so the caller can remember a revocation instead of asking again for every
// request of a dead key.
import type { Store } from '../store.js';

export interface KeyRow {
  id: string;
  organization_id: string;
  key_digest: string;
  permissions: string[];
  revoked: boolean;
}

export const KEY_COLUMNS = 'id, organization_id, key_digest, permissions, revoked_at IS NOT NULL AS revoked';

export async function findApiKey(store: Store, digest: string): Promise<KeyRow | null> {
  const rows = await store.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_digest = $1`, [digest], 'findApiKey');
  return rows[0] ?? null;
}
