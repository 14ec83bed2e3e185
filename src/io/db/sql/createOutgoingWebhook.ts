// createOutgoingWebhook — a new endpoint of an organization. Event names go in as one comma-separated string
// because array parameters are sent differently by pg and PGlite (event names hold no comma).
import type { Store } from '../store.js';
import { WEBHOOK_COLUMNS, type OutgoingWebhookRow } from './getOutgoingWebhook.js';

export interface NewOutgoingWebhook {
  id: string;
  organizationId: string;
  name: string;
  url: string;
  events: readonly string[];
  secret: string | null;
  enabled: boolean;
  at: Date;
}

export async function createOutgoingWebhook(store: Store, w: NewOutgoingWebhook): Promise<OutgoingWebhookRow> {
  const rows = await store.query<OutgoingWebhookRow>(
    `INSERT INTO outgoing_webhooks (id, organization_id, name, url, events, secret, enabled, created_at, updated_at)
     VALUES ($1, $2, $3, $4, string_to_array($5, ','), $6, $7, $8, $8)
     RETURNING ${WEBHOOK_COLUMNS}`,
    [w.id, w.organizationId, w.name, w.url, w.events.join(','), w.secret, w.enabled, w.at],
  );
  return rows[0]!;
}
