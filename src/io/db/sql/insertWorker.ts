// insertWorker — a new worker row, or null when the id exists already (whatever its organization): the insert
// skips on conflict so that two registrations racing for one new id leave one row, and the loser (which had
// reserved a quota slot) gives its slot back and registers again as a refresh or a 409.
import type { Store } from '../store.js';
import { WORKER_COLUMNS, type WorkerFields, type WorkerRow } from './getWorker.js';

export async function insertWorker(store: Store, organizationId: string, id: string, f: WorkerFields, at: Date): Promise<WorkerRow | null> {
  const rows = await store.query<WorkerRow>(
    `INSERT INTO workers (id, organization_id, queue_name, hostname, max_concurrency, metadata, version, registered_at, last_heartbeat_at)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $8, $7, $7)
     ON CONFLICT (id) DO NOTHING
     RETURNING ${WORKER_COLUMNS}`,
    [id, organizationId, f.queue_name ?? null, f.hostname ?? null, f.max_concurrency ?? null, JSON.stringify(f.metadata ?? {}), at, f.version ?? null],
  );
  return rows[0] ?? null;
}
