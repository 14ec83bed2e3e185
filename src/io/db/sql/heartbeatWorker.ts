// heartbeatWorker — moves last_heartbeat_at to now, which keeps the worker from the stale-worker reaper.
// Null when the organization has no such worker (never registered, deregistered, or reaped).
import type { Store } from '../store.js';
import { WORKER_COLUMNS, type WorkerRow } from './getWorker.js';

export async function heartbeatWorker(store: Store, organizationId: string, id: string, at: Date): Promise<WorkerRow | null> {
  const rows = await store.query<WorkerRow>(
    `UPDATE workers SET last_heartbeat_at = $3 WHERE organization_id = $1 AND id = $2 RETURNING ${WORKER_COLUMNS}`,
    [organizationId, id, at],
  );
  return rows[0] ?? null;
}
