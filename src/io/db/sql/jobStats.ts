// jobStats — job counts per status, for one organization, optionally one queue. Counts
// are of rows: completed and cancelled jobs stay counted until retention removes them. Served by index-only
// scans of jobs_org_status_created (organization) and jobs_org_queue_created, which includes status (queue).
import type { JobStatus } from '../../../actors/records.js';
import type { Store } from '../store.js';

export const JOB_STATUSES: readonly JobStatus[] = ['pending', 'scheduled', 'processing', 'completed', 'deadletter', 'cancelled'];

export type StatusCounts = Record<JobStatus, number>;

export const zeroCounts = (): StatusCounts => ({ pending: 0, scheduled: 0, processing: 0, completed: 0, deadletter: 0, cancelled: 0 });

/** Counts of the organization's jobs, or of one queue's when `queueName` is given. */
export async function jobStats(store: Store, organizationId: string, queueName: string | null): Promise<StatusCounts> {
  const rows = await store.query<{ status: JobStatus; n: number }>(
    queueName === null
      ? 'SELECT status, count(*)::int AS n FROM jobs WHERE organization_id = $1 GROUP BY status'
      : 'SELECT status, count(*)::int AS n FROM jobs WHERE organization_id = $1 AND queue_name = $2 GROUP BY status',
    queueName === null ? [organizationId] : [organizationId, queueName],
  );
  const counts = zeroCounts();
  for (const r of rows) counts[r.status] = r.n;
  return counts;
}
