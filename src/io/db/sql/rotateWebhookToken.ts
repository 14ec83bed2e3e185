// rotateWebhookToken — replaces the organization's incoming-webhook token: the old one is refused from this commit
// on. Null for an unknown organization.
import type { Store } from '../store.js';

export async function rotateWebhookToken(store: Store, organizationId: string, token: string, at: Date): Promise<string | null> {
  const rows = await store.query<{ webhook_token: string }>(
    'UPDATE organizations SET webhook_token = $2, updated_at = $3 WHERE id = $1 RETURNING webhook_token',
    [organizationId, token, at],
  );
  return rows[0]?.webhook_token ?? null;
}
