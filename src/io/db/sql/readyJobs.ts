// readyJobs — the next ready jobs of a queue in claim order, strictly after a position: how a bounded queue
// actor (QUEUE_WINDOW) fills its window at rebuild and refills it as claims drain it. A keyset on
// (-priority, id), the key of the partial indexes jobs_ready and jobs_ready_keys (0023): each page is an index
// range, whatever the backlog behind it. A queue with concurrency keys reads per key (one LATERAL per lane), so
// every key's head is held and claims stay fair across keys.
import type { LiveJob } from '../../../actors/queue/queue-actor.js';
import type { Store } from '../store.js';
import { LIVE_COLUMNS, liveJob } from './loadQueue.js';

/** A position in claim order: rows strictly after it come next. */
export interface ReadyAfter {
  priority: number;
  id: string;
}

/** One lane's page: its key (null: jobs without one), where it stands, how many rows. */
export interface LanePage {
  key: string | null;
  after: ReadyAfter | null;
  limit: number;
}

export const LOWEST_ID = '00000000-0000-0000-0000-000000000000';

/** The queue's ready jobs (any key: `lane` undefined), or those without a key (`lane` null), after `after`. */
export async function readyJobs(store: Store, organizationId: string, queue: string, page: Omit<LanePage, 'key'> & { key?: null }): Promise<Omit<LiveJob, 'ver'>[]> {
  // Before everything: -priority above any stored value (-100…100), so every row compares greater.
  const [np, id] = page.after === null ? [-1_000_000, LOWEST_ID] : [-page.after.priority, page.after.id];
  const rows = await store.query(
    `SELECT ${LIVE_COLUMNS} FROM jobs
      WHERE organization_id = $1 AND queue_name = $2 AND status = 'pending' AND dependencies_met
        AND (-priority, id) > ($3::int, $4::uuid)${page.key === null ? ' AND concurrency_key IS NULL' : ''}
      ORDER BY -priority, id
      LIMIT $5`,
    [organizationId, queue, np, id, page.limit],
    page.key === null ? 'ready_jobs_unkeyed' : 'ready_jobs',
  );
  return rows.map(liveJob);
}
