// getQueue — one queue row of one organization.
import type { Store } from '../store.js';
import { QUEUE_COLUMNS, type QueueRow } from './listQueues.js';

export async function getQueue(store: Store, organizationId: string, name: string): Promise<QueueRow | null> {
  const rows = await store.query<QueueRow>(`SELECT ${QUEUE_COLUMNS} FROM queues WHERE organization_id = $1 AND name = $2`, [organizationId, name]);
  return rows[0] ?? null;
}
