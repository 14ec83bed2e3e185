// refreshWorker — a re-registration of an id the organization already holds: the fields sent replace the row's
// (those not sent are kept), registered_at stays, last_heartbeat_at moves to now. When no row of this
// organization has the id, answers who owns it instead (another organization's id, or nobody), in the same
// statement: the caller then answers 409 or registers a new row.
import type { Store } from '../store.js';
import { WORKER_COLUMNS, type WorkerFields, type WorkerRow } from './getWorker.js';

export type Refresh = { row: WorkerRow } | { owner: string | null };

export async function refreshWorker(store: Store, organizationId: string, id: string, f: WorkerFields, at: Date): Promise<Refresh> {
  // $n::boolean flags say which fields were sent: null is a value a client may send to clear one.
  const rows = await store.query<WorkerRow & { refreshed: boolean }>(
    `WITH refreshed AS (
       UPDATE workers SET
         queue_name        = CASE WHEN $4::boolean THEN $3 ELSE queue_name END,
         hostname          = CASE WHEN $6::boolean THEN $5 ELSE hostname END,
         max_concurrency   = CASE WHEN $8::boolean THEN $7::integer ELSE max_concurrency END,
         metadata          = CASE WHEN $10::boolean THEN $9::jsonb ELSE metadata END,
         version           = CASE WHEN $13::boolean THEN $12 ELSE version END,
         last_heartbeat_at = $11
       WHERE id = $1 AND organization_id = $2
       RETURNING ${WORKER_COLUMNS}
     )
     SELECT ${WORKER_COLUMNS}, true AS refreshed FROM refreshed
     UNION ALL
     SELECT ${WORKER_COLUMNS}, false AS refreshed FROM workers WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM refreshed)`,
    [
      id,
      organizationId,
      f.queue_name ?? null,
      f.queue_name !== undefined,
      f.hostname ?? null,
      f.hostname !== undefined,
      f.max_concurrency ?? null,
      f.max_concurrency !== undefined,
      JSON.stringify(f.metadata ?? {}),
      f.metadata !== undefined,
      at,
      f.version ?? null,
      f.version !== undefined,
    ],
  );
  const r = rows[0];
  if (!r) return { owner: null };
  const { refreshed, ...row } = r;
  return refreshed ? { row } : { owner: row.organization_id };
}
