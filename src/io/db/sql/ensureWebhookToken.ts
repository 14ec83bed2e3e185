// ensureWebhookToken — the organization's incoming-webhook token (organizations.webhook_token, 0005), created on
// first use: the COALESCE keeps a token another request set first, so concurrent first reads agree. Null for an
// unknown organization.
import type { Store } from '../store.js';

export async function ensureWebhookToken(store: Store, organizationId: string, candidate: string): Promise<string | null> {
  const rows = await store.query<{ webhook_token: string }>(
    'UPDATE organizations SET webhook_token = COALESCE(webhook_token, $2) WHERE id = $1 RETURNING webhook_token',
    [organizationId, candidate],
  );
  return rows[0]?.webhook_token ?? null;
}
