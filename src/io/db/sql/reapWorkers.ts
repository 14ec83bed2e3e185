// reapWorkers — deletes at most `limit` workers whose last heartbeat is before `cutoff`, oldest first, over the
// index workers_heartbeat (0005). Bounded so that a large backlog is many short statements. SKIP LOCKED: rows a
// heartbeat or deregistration is updating right now are left for the next pass (the heartbeat may save them).
// Each deleted row comes back once, to this statement only, so its quota slot is released once.
import type { Store } from '../store.js';

export async function reapWorkers(store: Store, cutoff: Date, limit: number): Promise<Array<{ id: string; organization_id: string }>> {
  return store.query(
    `DELETE FROM workers WHERE id IN (
       SELECT id FROM workers WHERE last_heartbeat_at < $1 ORDER BY last_heartbeat_at LIMIT $2 FOR UPDATE SKIP LOCKED
     ) AND last_heartbeat_at < $1
     RETURNING id, organization_id`,
    [cutoff, limit],
  );
}
