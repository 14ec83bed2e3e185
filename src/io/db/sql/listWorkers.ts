// listWorkers — a page of an organization's registered workers, by id in byte order (COLLATE "C", the same on
// PostgreSQL and PGlite) over the index workers_org_id (0005).
import type { Store } from '../store.js';
import { WORKER_COLUMNS, type WorkerRow } from './getWorker.js';

export async function listWorkers(store: Store, organizationId: string, afterId: string | null, limit: number): Promise<WorkerRow[]> {
  return store.query<WorkerRow>(
    afterId === null
      ? `SELECT ${WORKER_COLUMNS} FROM workers WHERE organization_id = $1 ORDER BY id COLLATE "C" LIMIT $2`
      : `SELECT ${WORKER_COLUMNS} FROM workers WHERE organization_id = $1 AND id COLLATE "C" > $3
          ORDER BY id COLLATE "C" LIMIT $2`,
    afterId === null ? [organizationId, limit + 1] : [organizationId, limit + 1, afterId],
  );
}
