// enabledWebhooks — the enabled endpoints of an organization: what outgoing deliveries cache to route events (src/app/deliveries.ts).
import type { Store } from '../store.js';
import { WEBHOOK_COLUMNS, type OutgoingWebhookRow } from './getOutgoingWebhook.js';

export async function enabledWebhooks(store: Store, organizationId: string): Promise<OutgoingWebhookRow[]> {
  return store.query<OutgoingWebhookRow>(
    `SELECT ${WEBHOOK_COLUMNS} FROM outgoing_webhooks WHERE organization_id = $1 AND enabled`,
    [organizationId],
    'enabled_webhooks',
  );
}
