// listApiKeys — an organization's keys as the API shows them (never the digest), newest first:
// ORDER BY created_at DESC, id DESC with the keyset of the jobs list (`cursor_at` to the microsecond), over the
// index api_keys_org_created (0004).
import type { Store } from '../store.js';
import { API_KEY_COLUMNS, type ApiKeyRow } from './getApiKey.js';
import { CURSOR_AT } from './listJobs.js';

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
