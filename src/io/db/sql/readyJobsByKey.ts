// readyJobsByKey — the next ready jobs of several concurrency-key lanes of a queue, each after its own position in
// claim order, in one statement (one LATERAL per lane over jobs_ready_keys, 0023): a queue with keys keeps the
// head of every lane, so claims stay fair across keys whatever one key's backlog (readyJobs.ts says why a keyset).
import type { LiveJob } from '../../../actors/queue/queue-actor.js';
import type { Store } from '../store.js';
import { LIVE_COLUMNS, liveJob } from './loadQueue.js';
import { LOWEST_ID, type LanePage } from './readyJobs.js';

/** The ready jobs of several keyed lanes, each after its own position: one statement for all of them. */
export async function readyJobsByKey(store: Store, organizationId: string, queue: string, pages: LanePage[]): Promise<Omit<LiveJob, 'ver'>[]> {
  const rows = await store.query(
    `SELECT j.* FROM unnest($3::text[], $4::int[], $5::uuid[], $6::int[]) AS l(k, np, ai, n)
      CROSS JOIN LATERAL (
        SELECT ${LIVE_COLUMNS} FROM jobs
         WHERE organization_id = $1 AND queue_name = $2 AND status = 'pending' AND dependencies_met
           AND concurrency_key = l.k AND (-priority, id) > (l.np, l.ai)
         ORDER BY -priority, id
         LIMIT l.n) j`,
    [
      organizationId,
      queue,
      pages.map((p) => p.key),
      pages.map((p) => (p.after === null ? -1_000_000 : -p.after.priority)),
      pages.map((p) => p.after?.id ?? LOWEST_ID),
      pages.map((p) => p.limit),
    ],
    'ready_jobs_by_key',
  );
  return rows.map(liveJob);
}

