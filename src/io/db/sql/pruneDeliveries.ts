// pruneDeliveries — deletes at most `batch` finished deliveries of one organization created before `cutoff`
// (the plan's history retention), and says how many went. Bounded like sweepRetention: the caller loops with
// a yield between batches. Pending deliveries are kept whatever their age: they are still being sent.
import type { Store } from '../store.js';

export async function pruneDeliveries(store: Store, organizationId: string, cutoff: Date, batch: number): Promise<number> {
  const rows = await store.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM webhook_deliveries
        WHERE id IN (SELECT id FROM webhook_deliveries
                      WHERE organization_id = $1 AND created_at < $2::timestamptz AND status <> 'pending'
                      LIMIT $3)
        RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [organizationId, cutoff.toISOString(), batch],
  );
  return rows[0]!.n;
}
