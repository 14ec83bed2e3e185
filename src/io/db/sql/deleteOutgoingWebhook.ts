// deleteOutgoingWebhook — removes an endpoint and its delivery history (ON DELETE CASCADE); says whether it was
// enabled (its quota slot is then freed), or null when the organization has no such endpoint.
import type { Store } from '../store.js';

export async function deleteOutgoingWebhook(store: Store, organizationId: string, id: string): Promise<{ wasEnabled: boolean } | null> {
  const rows = await store.query<{ enabled: boolean }>(
    'DELETE FROM outgoing_webhooks WHERE organization_id = $1 AND id = $2 RETURNING enabled',
    [organizationId, id],
  );
  const row = rows[0];
  return row ? { wasEnabled: row.enabled } : null;
}
