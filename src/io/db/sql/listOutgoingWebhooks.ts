// listOutgoingWebhooks / getOutgoingWebhook — an organization's endpoints as the routes and the dispatcher read
// them, newest first with the keyset of the other lists (`cursor_at` to the microsecond), over
// outgoing_webhooks_org_created (0008). The secret is read for the sender; the routes only say whether one is set.
import type { Store } from '../store.js';
import { CURSOR_AT } from './listJobs.js';

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

export async function listOutgoingWebhooks(
  store: Store,
  organizationId: string,
  after: [at: string, id: string] | null,
  limit: number,
): Promise<Array<OutgoingWebhookRow & { cursor_at: string }>> {
  return store.query(
    after === null
      ? `SELECT ${WEBHOOK_COLUMNS}, ${CURSOR_AT} AS cursor_at FROM outgoing_webhooks WHERE organization_id = $1
          ORDER BY created_at DESC, id DESC LIMIT $2`
      : `SELECT ${WEBHOOK_COLUMNS}, ${CURSOR_AT} AS cursor_at FROM outgoing_webhooks WHERE organization_id = $1
            AND (created_at, id) < ($3::timestamptz, $4::uuid)
          ORDER BY created_at DESC, id DESC LIMIT $2`,
    after === null ? [organizationId, limit + 1] : [organizationId, limit + 1, after[0], after[1]],
  );
}

/** The endpoint of this organization with this id, or null (another organization's is null too). */
export async function getOutgoingWebhook(store: Store, organizationId: string, id: string): Promise<OutgoingWebhookRow | null> {
  const rows = await store.query<OutgoingWebhookRow>(
    `SELECT ${WEBHOOK_COLUMNS} FROM outgoing_webhooks WHERE organization_id = $1 AND id = $2`,
    [organizationId, id],
  );
  return rows[0] ?? null;
}

/** The enabled endpoints of an organization: what the dispatcher caches to route its events. */
export async function enabledWebhooks(store: Store, organizationId: string): Promise<OutgoingWebhookRow[]> {
  return store.query<OutgoingWebhookRow>(
    `SELECT ${WEBHOOK_COLUMNS} FROM outgoing_webhooks WHERE organization_id = $1 AND enabled`,
    [organizationId],
    'enabled_webhooks',
  );
}
