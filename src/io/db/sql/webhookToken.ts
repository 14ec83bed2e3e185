// webhookToken — the organization's incoming-webhook token (organizations.webhook_token, 0005).
// ensureWebhookToken creates it on first use: the COALESCE keeps a token another request set first, so
// concurrent first GETs agree. rotateWebhookToken replaces it (the old one is refused from this commit on).
// findWebhookToken is the ingest route's lookup; null for an unknown organization or one without a token yet.
import type { Store } from '../store.js';

export async function ensureWebhookToken(store: Store, organizationId: string, candidate: string): Promise<string | null> {
  const rows = await store.query<{ webhook_token: string }>(
    'UPDATE organizations SET webhook_token = COALESCE(webhook_token, $2) WHERE id = $1 RETURNING webhook_token',
    [organizationId, candidate],
  );
  return rows[0]?.webhook_token ?? null;
}

export async function rotateWebhookToken(store: Store, organizationId: string, token: string, at: Date): Promise<string | null> {
  const rows = await store.query<{ webhook_token: string }>(
    'UPDATE organizations SET webhook_token = $2, updated_at = $3 WHERE id = $1 RETURNING webhook_token',
    [organizationId, token, at],
  );
  return rows[0]?.webhook_token ?? null;
}

export async function findWebhookToken(store: Store, organizationId: string): Promise<string | null> {
  const rows = await store.query<{ webhook_token: string | null }>('SELECT webhook_token FROM organizations WHERE id = $1', [organizationId]);
  return rows[0]?.webhook_token ?? null;
}
