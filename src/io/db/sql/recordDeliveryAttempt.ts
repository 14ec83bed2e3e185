// recordDeliveryAttempt — the outcome of one failed attempt of a pending delivery, so that a resumed delivery
// goes on from the next attempt and the history shows why it is retrying.
import type { Store } from '../store.js';

export async function recordDeliveryAttempt(
  store: Store,
  id: string,
  attempts: number,
  responseStatus: number | null,
  error: string | null,
): Promise<void> {
  await store.query(
    `UPDATE webhook_deliveries SET attempts = $2, response_status = $3, error = $4 WHERE id = $1 AND status = 'pending'`,
    [id, attempts, responseStatus, error],
    'record_delivery_attempt',
  );
}
