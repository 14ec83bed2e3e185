// busiestKeys — the concurrency keys of a queue with the most live jobs (queue stats), over the partial index
// jobs_live_keys (0021): only live jobs that carry a key are read.
import { LIVE } from '../jobHalves.js';
import type { Store } from '../store.js';

export interface KeyLoad {
  key: string;
  processing: number;
  waiting: number;
}

export async function busiestKeys(store: Store, organizationId: string, queue: string, limit: number): Promise<KeyLoad[]> {
  return store.query<KeyLoad>(
    `SELECT concurrency_key AS key,
            count(*) FILTER (WHERE status = 'processing')::int AS processing,
            count(*) FILTER (WHERE status <> 'processing')::int AS waiting
       FROM jobs
      WHERE organization_id = $1 AND queue_name = $2 AND concurrency_key IS NOT NULL
        AND ${LIVE}
      GROUP BY concurrency_key
      ORDER BY count(*) FILTER (WHERE status = 'processing') DESC, count(*) DESC, concurrency_key
      LIMIT $3`,
    [organizationId, queue, limit],
  );
}
