// getWorker — one registered worker of one organization, by id; and the worker row every worker statement
// returns (workers, 0005; version, 0022).
import type { Store } from '../store.js';

export interface WorkerRow {
  id: string;
  organization_id: string;
  queue_name: string | null;
  hostname: string | null;
  max_concurrency: number | null;
  metadata: Record<string, unknown>;
  version: string | null;
  registered_at: Date | string;
  last_heartbeat_at: Date | string;
}

export const WORKER_COLUMNS = 'id, organization_id, queue_name, hostname, max_concurrency, metadata, version, registered_at, last_heartbeat_at';

/** What a registration sets; undefined fields keep the row's value on a re-registration. */
export interface WorkerFields {
  queue_name?: string | null;
  hostname?: string | null;
  max_concurrency?: number | null;
  metadata?: Record<string, unknown>;
  version?: string | null;
}

/** The organization's worker with this id, or null (another organization's worker is null too). */
export async function getWorker(store: Store, organizationId: string, id: string): Promise<WorkerRow | null> {
  const rows = await store.query<WorkerRow>(`SELECT ${WORKER_COLUMNS} FROM workers WHERE organization_id = $1 AND id = $2`, [organizationId, id]);
  return rows[0] ?? null;
}
