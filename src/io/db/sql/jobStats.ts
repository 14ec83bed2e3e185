// jobStats — job counts per status, for one organization, optionally one queue. Counts
// are of rows: completed and cancelled jobs stay counted until retention removes them. One part per half of the
// table (../jobHalves.ts), each an index-only scan: jobs_live_list (which includes status) and jobs_done_status for an
// organization, jobs_live_list and jobs_done_queue for a queue.
import type { JobStatus } from '../../../actors/records.js';
import type { Store } from '../store.js';
import { DONE, LIVE } from '../jobHalves.js';

export const JOB_STATUSES: readonly JobStatus[] = ['pending', 'scheduled', 'processing', 'completed', 'deadletter', 'cancelled'];

export type StatusCounts = Record<JobStatus, number>;

export const zeroCounts = (): StatusCounts => ({ pending: 0, scheduled: 0, processing: 0, completed: 0, deadletter: 0, cancelled: 0 });

/** Counts of the organization's jobs, or of one queue's when `queueName` is given. */
export async function jobStats(store: Store, organizationId: string, queueName: string | null): Promise<StatusCounts> {
  const where = queueName === null ? 'organization_id = $1' : 'organization_id = $1 AND queue_name = $2';
  const rows = await store.query<{ status: JobStatus; n: number }>(
    `SELECT status, count(*)::int AS n FROM jobs WHERE ${where} AND ${LIVE} GROUP BY status
     UNION ALL
     SELECT status, count(*)::int AS n FROM jobs WHERE ${where} AND ${DONE} GROUP BY status`,
    queueName === null ? [organizationId] : [organizationId, queueName],
  );
  const counts = zeroCounts();
  for (const r of rows) counts[r.status] = r.n;
  return counts;
}
