// getJobPlace — the queue and status of a job: routing a lease operation to the actor that owns it when this
// node has not relayed the job itself.
import type { Store } from '../store.js';

export async function getJobPlace(store: Store, organizationId: string, id: string): Promise<{ queue_name: string; status: string } | null> {
  const rows = await store.query<{ queue_name: string; status: string }>('SELECT queue_name, status FROM jobs WHERE id = $1 AND organization_id = $2', [
    id,
    organizationId,
  ]);
  return rows[0] ?? null;
}
