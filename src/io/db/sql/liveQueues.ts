// liveQueues — the (organization, queue) pairs that hold live jobs: the actors a thread rebuilds at boot so
// that their lease and schedule timers run without waiting for a request. One probe of jobs_live_list per queue row
// (LATERAL … LIMIT 1), not a walk over every live job: written as EXISTS, the planner made it a semi-join that read
// all of the live jobs' index, 1.3 s of a core for a queue of a million jobs at every boot (docs/BENCHMARKS.md).
// The probe is ordered as the index is: unordered, the planner, taking live rows as spread evenly over the table,
// expected a sequential scan to meet one within a few pages, and for a queue without live jobs it read them all.
import type { Store } from '../store.js';
import { LIVE } from '../jobHalves.js';

export async function liveQueues(store: Store): Promise<Array<{ organization_id: string; queue_name: string }>> {
  return store.query(
    `SELECT q.organization_id, q.name AS queue_name FROM queues q
       CROSS JOIN LATERAL (SELECT 1 FROM jobs j WHERE j.organization_id = q.organization_id AND j.queue_name = q.name
                              AND ${LIVE} ORDER BY j.created_at LIMIT 1) live`,
  );
}
