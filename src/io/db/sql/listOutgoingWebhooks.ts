// listOutgoingWebhooks — a page of an organization's endpoints, newest first with the keyset of the other lists
// (`cursor_at` to the microsecond), over outgoing_webhooks_org_created (0008).
import type { Store } from '../store.js';
import { WEBHOOK_COLUMNS, type OutgoingWebhookRow } from './getOutgoingWebhook.js';
import { CURSOR_AT } from './listJobs.js';

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
