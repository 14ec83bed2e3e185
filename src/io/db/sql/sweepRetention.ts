// sweepRetention — deletes at most `batch` completed or cancelled jobs of one organization finished before
// `cutoff`, and says how many went. Bounded so that one statement never holds locks (or, on PGlite, the one
// storage thread) for long; the sweeper loops with a yield between batches. The subquery walks
// jobs_done_status (completed_at >= created_at, so `created_at < cutoff` only narrows the range).
// The outer WHERE repeats the conditions so that a row changed after the subquery read it (a cancelled job
// revived by a retry) is re-checked under its lock and kept. Live and deadletter jobs are never touched.
import type { Store } from '../store.js';

export async function sweepRetention(store: Store, organizationId: string, cutoff: Date, batch: number): Promise<number> {
  const rows = await store.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM jobs
        WHERE id IN (SELECT id FROM jobs
                      WHERE organization_id = $1 AND status IN ('completed', 'cancelled')
                        AND created_at < $2::timestamptz AND completed_at < $2::timestamptz
                      LIMIT $3)
          AND organization_id = $1 AND status IN ('completed', 'cancelled') AND completed_at < $2::timestamptz
        RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [organizationId, cutoff.toISOString(), batch],
    'sweep_retention',
  );
  return rows[0]!.n;
}

