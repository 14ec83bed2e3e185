// finishDelivery — closes a delivery and moves its endpoint's counters in the same statement:
//   success            failure_count = 0, last_status 'success'
//   failed (counted)   failure_count + 1, last_status 'failed', or at `disableAfter` consecutive failures
//                      'auto_disabled' with enabled = false
// Concurrent deliveries of one endpoint finish at once, so the counters move in SQL, never from a value read
// earlier: PostgreSQL re-checks `w.enabled` and re-reads failure_count on the locked row. Only an enabled
// endpoint's counters move (a straggler of a disabled endpoint changes nothing), so exactly one statement sees
// the transition to auto_disabled and the caller frees the quota slot once.
import type { Store } from '../store.js';

export interface DeliveryOutcome {
  ok: boolean;
  attempts: number;
  responseStatus: number | null;
  error: string | null;
  at: Date;
  /** Whether a failure counts against the endpoint (a manual test's does not). */
  counts: boolean;
}

/** Returns true when this delivery auto-disabled its endpoint. */
export async function finishDelivery(store: Store, id: string, o: DeliveryOutcome, disableAfter: number): Promise<boolean> {
  const rows = await store.query<{ last_status: string }>(
    o.ok
      ? `WITH d AS (
           UPDATE webhook_deliveries SET status = 'success', attempts = $2, response_status = $3, error = NULL, completed_at = $4
            WHERE id = $1 RETURNING webhook_id)
         UPDATE outgoing_webhooks w SET failure_count = 0, last_status = 'success', updated_at = $4
           FROM d WHERE w.id = d.webhook_id AND w.enabled
         RETURNING w.last_status`
      : `WITH d AS (
           UPDATE webhook_deliveries SET status = 'failed', attempts = $2, response_status = $3, error = $4, completed_at = $5
            WHERE id = $1 RETURNING webhook_id)
         UPDATE outgoing_webhooks w
            SET failure_count = w.failure_count + 1,
                last_status = CASE WHEN w.failure_count + 1 >= $7 THEN 'auto_disabled' ELSE 'failed' END,
                enabled = w.failure_count + 1 < $7,
                updated_at = $5
           FROM d WHERE w.id = d.webhook_id AND w.enabled AND $6::boolean
         RETURNING w.last_status`,
    o.ok ? [id, o.attempts, o.responseStatus, o.at] : [id, o.attempts, o.responseStatus, o.error, o.at, o.counts, disableAfter],
  );
  return rows[0]?.last_status === 'auto_disabled';
}
