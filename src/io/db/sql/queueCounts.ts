// queueCounts — job counts per status for several queues of one organization in one read (a page of the
// queue list): index scans of jobs_live_list and jobs_done_queue, which include status (../jobHalves.ts), each
// counting its half's three statuses per queue in one pass (FILTER, as jobStats.ts does).
import type { JobStatus } from '../../../actors/records.js';
import type { Store } from '../store.js';
import { DONE, DONE_STATUSES, LIVE, LIVE_STATUSES } from '../jobHalves.js';
import { countsBy, zeroCounts, type StatusCounts } from './jobStats.js';

/** Counts per queue for several queues in one read (a page of the queue list). */
export async function queueCounts(store: Store, organizationId: string, names: readonly string[]): Promise<Map<string, StatusCounts>> {
  const out = new Map<string, StatusCounts>(names.map((n) => [n, zeroCounts()]));
  if (names.length === 0) return out;
  const part = (half: 'l' | 'd', statuses: readonly JobStatus[], where: string) =>
    `SELECT '${half}' AS half, queue_name, ${countsBy(statuses, (_, i) => `n${i}`)}
       FROM jobs WHERE organization_id = $1 AND queue_name = ANY ($2::text[]) AND ${where} GROUP BY queue_name`;
  const rows = await store.query<{ half: 'l' | 'd'; queue_name: string; n0: number; n1: number; n2: number }>(
    `${part('l', LIVE_STATUSES, LIVE)}\n     UNION ALL\n     ${part('d', DONE_STATUSES, DONE)}`,
    [organizationId, names],
  );
  for (const r of rows) {
    const counts = out.get(r.queue_name)!;
    const [a, b, c] = r.half === 'l' ? LIVE_STATUSES : DONE_STATUSES;
    counts[a!] = r.n0;
    counts[b!] = r.n1;
    counts[c!] = r.n2;
  }
  return out;
}
