// deleteWorker — deregistration. The row comes back only to the statement that deleted it, so a deregistration
// racing the reaper (or another deregistration) releases the quota slot once.
import type { Store } from '../store.js';
import { WORKER_COLUMNS, type WorkerRow } from './getWorker.js';

export async function deleteWorker(store: Store, organizationId: string, id: string): Promise<WorkerRow | null> {
  const rows = await store.query<WorkerRow>(`DELETE FROM workers WHERE organization_id = $1 AND id = $2 RETURNING ${WORKER_COLUMNS}`, [
    organizationId,
    id,
  ]);
  return rows[0] ?? null;
}
