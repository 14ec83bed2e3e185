// findWebhookToken — the incoming-webhook ingest's lookup of an organization's token, one primary-key read per
// request; null for an unknown organization or one without a token yet.
import type { Store } from '../store.js';

export async function findWebhookToken(store: Store, organizationId: string): Promise<string | null> {
  const rows = await store.query<{ webhook_token: string | null }>('SELECT webhook_token FROM organizations WHERE id = $1', [organizationId]);
  return rows[0]?.webhook_token ?? null;
}
