// queueWorkers — the registered workers that may claim from a queue: those registered for it and those
// registered for no queue in particular (explain's "no worker has claimed"). At most `limit`, freshest first.
import type { Store } from '../store.js';

export interface QueueWorker {
  id: string;
  queue_name: string | null;
  last_heartbeat_at: Date | string;
}

export async function queueWorkers(store: Store, organizationId: string, queue: string, limit: number): Promise<QueueWorker[]> {
  return store.query<QueueWorker>(
    `SELECT id, queue_name, last_heartbeat_at FROM workers
      WHERE organization_id = $1 AND (queue_name = $2 OR queue_name IS NULL)
      ORDER BY last_heartbeat_at DESC LIMIT $3`,
    [organizationId, queue, limit],
  );
}
