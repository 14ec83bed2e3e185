// liveQueues — the (organization, queue) pairs that hold live jobs: the actors a thread rebuilds at boot so
// that their lease and schedule timers run without waiting for a request.
import type { Store } from '../store.js';

export async function liveQueues(store: Store): Promise<Array<{ organization_id: string; queue_name: string }>> {
  return store.query(
    `SELECT DISTINCT organization_id, queue_name FROM jobs WHERE status IN ('pending', 'scheduled', 'processing')`,
  );
}
