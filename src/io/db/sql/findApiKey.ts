// findApiKey / findApiKeyById — a key and its organization, for the authenticator: by digest (an API key
// credential) or by id (the key a JWT was issued from). Both answer revoked keys too (revoked: true), so the
// caller can remember a revocation instead of asking again for every token of a dead key.
import type { Store } from '../store.js';

export interface KeyRow {
  id: string;
  organization_id: string;
  key_digest: string;
  permissions: string[];
  revoked: boolean;
}

const COLUMNS = 'id, organization_id, key_digest, permissions, revoked_at IS NOT NULL AS revoked';

export async function findApiKey(store: Store, digest: string): Promise<KeyRow | null> {
  const rows = await store.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE key_digest = $1`, [digest], 'findApiKey');
  return rows[0] ?? null;
}

export async function findApiKeyById(store: Store, id: string): Promise<KeyRow | null> {
  const rows = await store.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1`, [id], 'findApiKeyById');
  return rows[0] ?? null;
}
