// updateOutgoingWebhook — changes the fields given (null: unchanged), and says whether the endpoint was enabled
// before, under the row lock: the route charges or frees the quota slot only for a real transition, so two
// concurrent PUTs that both enable an endpoint charge it once. Re-enabling starts the failure count over.
import type { Store } from '../store.js';
import { WEBHOOK_COLUMNS, type OutgoingWebhookRow } from './getOutgoingWebhook.js';

export interface WebhookChanges {
  name: string | null;
  url: string | null;
  events: readonly string[] | null;
  /** undefined: keep the secret; null: clear it; a string: replace it. */
  secret: string | null | undefined;
  enabled: boolean | null;
  at: Date;
}

export async function updateOutgoingWebhook(
  store: Store,
  organizationId: string,
  id: string,
  c: WebhookChanges,
): Promise<{ webhook: OutgoingWebhookRow; wasEnabled: boolean } | null> {
  const rows = await store.query<OutgoingWebhookRow & { was_enabled: boolean }>(
    `WITH before AS (SELECT id, enabled AS was_enabled FROM outgoing_webhooks WHERE organization_id = $1 AND id = $2 FOR UPDATE)
     UPDATE outgoing_webhooks w SET
            name = COALESCE($3::text, w.name),
            url = COALESCE($4::text, w.url),
            events = COALESCE(string_to_array($5::text, ','), w.events),
            secret = CASE WHEN $6::boolean THEN $7::text ELSE w.secret END,
            enabled = COALESCE($8::boolean, w.enabled),
            failure_count = CASE WHEN $8::boolean AND NOT w.enabled THEN 0 ELSE w.failure_count END,
            last_status = CASE WHEN $8::boolean AND NOT w.enabled AND w.last_status = 'auto_disabled' THEN NULL ELSE w.last_status END,
            updated_at = $9
       FROM before WHERE w.id = before.id
     RETURNING ${WEBHOOK_COLUMNS.split(', ').map((col) => `w.${col}`).join(', ')}, before.was_enabled`,
    [
      organizationId,
      id,
      c.name,
      c.url,
      c.events === null ? null : c.events.join(','),
      c.secret !== undefined,
      c.secret ?? null,
      c.enabled,
      c.at,
    ],
  );
  const row = rows[0];
  if (!row) return null;
  const { was_enabled, ...webhook } = row;
  return { webhook, wasEnabled: was_enabled };
}
