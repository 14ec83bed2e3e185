// findApiKeys — keys and their organizations by digest, for the authenticator (API key credentials), many digests
// in one statement (src/app/key-lookups.ts batches them). Revoked keys are answered too (revoked: true), so the
// caller can remember a revocation instead of asking again for every request of a dead key.
import type { Store } from '../store.js';

export interface KeyRow {
  id: string;
  organization_id: string;
  key_digest: string;
  permissions: string[];
  revoked: boolean;
}

export const KEY_COLUMNS = 'id, organization_id, key_digest, permissions, revoked_at IS NOT NULL AS revoked';

export async function findApiKeys(store: Store, digests: string[]): Promise<KeyRow[]> {
  return store.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_digest = ANY ($1::text[])`, [digests], 'findApiKeys');
}
