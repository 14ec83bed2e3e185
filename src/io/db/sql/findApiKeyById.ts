// findApiKeyById — a key and its organization by id, for the authenticator: the key a JWT was issued from (the
// token dies with its key). Revoked keys are answered too (revoked: true), as by findApiKeys.
import type { Store } from '../store.js';
import { KEY_COLUMNS, type KeyRow } from './findApiKeys.js';

export async function findApiKeyById(store: Store, id: string): Promise<KeyRow | null> {
  const rows = await store.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1`, [id], 'findApiKeyById');
  return rows[0] ?? null;
}
