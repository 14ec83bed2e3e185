// readyAhead — how many ready jobs of a queue come before a position in claim order: explain's "jobs ahead" for
// a job its actor has paged out of its window (the actor counts only what it holds). An index range on jobs_ready
// (0023), (-priority, id) below the job's.
import type { Store } from '../store.js';

export async function readyAhead(store: Store, organizationId: string, queue: string, priority: number, id: string): Promise<number> {
  const rows = await store.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs
      WHERE organization_id = $1 AND queue_name = $2 AND status = 'pending' AND dependencies_met
        AND (-priority, id) < ($3::int, $4::uuid)`,
    [organizationId, queue, -priority, id],
  );
  return rows[0]!.n;
}
