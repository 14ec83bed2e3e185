// readyJobsById — ready jobs of a queue by id: a job its actor does not hold (paged out of its window) that a
// request names (cancel, priority, explain, a debounce key) or whose expiry came. Found by the primary key.
import type { LiveJob } from '../../../actors/queue/queue-actor.js';
import type { Store } from '../store.js';
import { LIVE_COLUMNS, liveJob } from './loadQueue.js';

/** Ready jobs of the queue by id (a job the actor does not hold, asked for by id: cancel, explain, an expiry). */
export async function readyJobsById(store: Store, organizationId: string, queue: string, ids: string[]): Promise<Omit<LiveJob, 'ver'>[]> {
  const rows = await store.query(
    `SELECT ${LIVE_COLUMNS} FROM jobs
      WHERE id = ANY ($3::uuid[]) AND organization_id = $1 AND queue_name = $2 AND status = 'pending' AND dependencies_met`,
    [organizationId, queue, ids],
    'ready_jobs_by_id',
  );
  return rows.map(liveJob);
}
