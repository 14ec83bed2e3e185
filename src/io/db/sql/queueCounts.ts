// queueCounts — job counts per status for several queues of one organization in one read (a page of the
// queue list): index-only scans of jobs_live_list and jobs_done_queue, which include status (../jobHalves.ts).
import type { JobStatus } from '../../../actors/records.js';
import type { Store } from '../store.js';
import { DONE, LIVE } from '../jobHalves.js';
import { zeroCounts, type StatusCounts } from './jobStats.js';

/** Counts per queue for several queues in one read (a page of the queue list). */
export async function queueCounts(store: Store, organizationId: string, names: readonly string[]): Promise<Map<string, StatusCounts>> {
  const out = new Map<string, StatusCounts>(names.map((n) => [n, zeroCounts()]));
  if (names.length === 0) return out;
  const rows = await store.query<{ queue_name: string; status: JobStatus; n: number }>(
    `SELECT queue_name, status, count(*)::int AS n FROM jobs
      WHERE organization_id = $1 AND queue_name = ANY ($2::text[]) AND ${LIVE}
      GROUP BY queue_name, status
     UNION ALL
     SELECT queue_name, status, count(*)::int AS n FROM jobs
      WHERE organization_id = $1 AND queue_name = ANY ($2::text[]) AND ${DONE}
      GROUP BY queue_name, status`,
    [organizationId, names],
  );
  for (const r of rows) out.get(r.queue_name)![r.status] = r.n;
  return out;
}
