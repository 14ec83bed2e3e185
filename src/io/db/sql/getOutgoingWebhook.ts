// getOutgoingWebhook — one endpoint of one organization, by id; and the endpoint row the webhook statements
// return (outgoing_webhooks, 0008). The secret is read for the sender; the routes only say whether one is set.
import type { Store } from '../store.js';

export interface OutgoingWebhookRow {
  id: string;
  organization_id: string;
  name: string;
  url: string;
  events: string[];
  secret: string | null;
  enabled: boolean;
  failure_count: number;
  last_status: 'success' | 'failed' | 'auto_disabled' | null;
  created_at: Date | string;
  updated_at: Date | string;
}

export const WEBHOOK_COLUMNS = 'id, organization_id, name, url, events, secret, enabled, failure_count, last_status, created_at, updated_at';

/** The endpoint of this organization with this id, or null (another organization's is null too). */
export async function getOutgoingWebhook(store: Store, organizationId: string, id: string): Promise<OutgoingWebhookRow | null> {
  const rows = await store.query<OutgoingWebhookRow>(
    `SELECT ${WEBHOOK_COLUMNS} FROM outgoing_webhooks WHERE organization_id = $1 AND id = $2`,
    [organizationId, id],
  );
  return rows[0] ?? null;
}
