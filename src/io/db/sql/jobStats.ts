// jobStats — job counts per status, for one organization, optionally one queue. Counts
// are of rows: completed and cancelled jobs stay counted until retention removes them. One part per half of the
// table (../jobHalves.ts), each an index scan of jobs_live_list (which includes status) or jobs_done_status for an
// organization, jobs_live_list or jobs_done_queue for a queue. Each part counts its three statuses with FILTER in
// one pass: grouped by status instead, the planner (with statistics from before the rows' last change, which a
// queue just drained always has) sorted every row first, and a queue's count of 20,000 just-completed jobs took
// 30-50 ms instead of 5 (docs/BENCHMARKS.md).
import type { JobStatus } from '../../../actors/records.js';
import type { Store } from '../store.js';
import { DONE, DONE_STATUSES, LIVE, LIVE_STATUSES } from '../jobHalves.js';

export const JOB_STATUSES: readonly JobStatus[] = [...LIVE_STATUSES, ...DONE_STATUSES];

export type StatusCounts = Record<JobStatus, number>;

export const zeroCounts = (): StatusCounts => ({ pending: 0, scheduled: 0, processing: 0, completed: 0, deadletter: 0, cancelled: 0 });

/**
 * Counts per status of the jobs matching `where`, as a UNION ALL of one part per half of the table, each with a
 * column per status (`count(*) FILTER`, or 0 for the other half's) and, with `byQueue`, one row per queue_name:
 * the caller adds the rows up.
 */
export function countsByHalf(where: string, byQueue = false): string {
  const part = (statuses: readonly JobStatus[], half: string) =>
    `SELECT ${byQueue ? 'queue_name, ' : ''}${JOB_STATUSES.map((st) => (statuses.includes(st) ? `count(*) FILTER (WHERE status = '${st}')::int` : '0') + ` AS ${st}`).join(', ')}
       FROM jobs WHERE ${where} AND ${half}${byQueue ? ' GROUP BY queue_name' : ''}`;
  return `${part(LIVE_STATUSES, LIVE)}\n     UNION ALL\n     ${part(DONE_STATUSES, DONE)}`;
}

/** Counts of the organization's jobs, or of one queue's when `queueName` is given. */
export async function jobStats(store: Store, organizationId: string, queueName: string | null): Promise<StatusCounts> {
  const where = queueName === null ? 'organization_id = $1' : 'organization_id = $1 AND queue_name = $2';
  const rows = await store.query<StatusCounts>(countsByHalf(where), queueName === null ? [organizationId] : [organizationId, queueName]);
  const counts = zeroCounts();
  for (const r of rows) for (const st of JOB_STATUSES) counts[st] += r[st];
  return counts;
}
