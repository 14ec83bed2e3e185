// readyCount — how many ready jobs without a concurrency key a queue holds: the exact count a rebuilt queue actor
// keeps of its paged-out jobs, asked after its window is read rather than before (a million rows: 0.5 s over
// the live jobs' index with the heap visited, whatever the statistics say), so the first claim does not wait for it.
import type { Store } from '../store.js';

export async function readyCount(store: Store, organizationId: string, queue: string): Promise<number> {
  const rows = await store.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs
      WHERE organization_id = $1 AND queue_name = $2 AND status = 'pending' AND dependencies_met AND concurrency_key IS NULL`,
    [organizationId, queue],
  );
  return rows[0]!.n;
}
