// queueCounts — job counts per status for several queues of one organization in one read (a page of the
// queue list): index scans of jobs_live_list and jobs_done_queue, which include status (../jobHalves.ts), each
// counting its half's three statuses per queue in one pass (countsByHalf, jobStats.ts).
import type { Store } from '../store.js';
import { countsByHalf, JOB_STATUSES, zeroCounts, type StatusCounts } from './jobStats.js';

/** Counts per queue for several queues in one read (a page of the queue list). */
export async function queueCounts(store: Store, organizationId: string, names: readonly string[]): Promise<Map<string, StatusCounts>> {
  const out = new Map<string, StatusCounts>(names.map((n) => [n, zeroCounts()]));
  if (names.length === 0) return out;
  const rows = await store.query<StatusCounts & { queue_name: string }>(
    countsByHalf('organization_id = $1 AND queue_name = ANY ($2::text[])', true),
    [organizationId, names],
  );
  for (const r of rows) {
    const counts = out.get(r.queue_name)!;
    for (const st of JOB_STATUSES) counts[st] += r[st];
  }
  return out;
}
