// getJob — one job of one organization, by id or by idempotency key.
import type { Row, Store } from '../store.js';

export async function getJob(store: Store, organizationId: string, id: string): Promise<Row | null> {
  const rows = await store.query('SELECT * FROM jobs WHERE id = $1 AND organization_id = $2', [id, organizationId]);
  return rows[0] ?? null;
}

export async function getJobByKey(store: Store, organizationId: string, key: string): Promise<Row | null> {
  const rows = await store.query('SELECT * FROM jobs WHERE organization_id = $1 AND idempotency_key = $2', [
    organizationId,
    key,
  ]);
  return rows[0] ?? null;
}

/** The queue and status of a job: routing a lease operation to the actor that owns it. */
export async function getJobPlace(
  store: Store,
  organizationId: string,
  id: string,
): Promise<{ queue_name: string; status: string } | null> {
  const rows = await store.query<{ queue_name: string; status: string }>(
    'SELECT queue_name, status FROM jobs WHERE id = $1 AND organization_id = $2',
    [id, organizationId],
  );
  return rows[0] ?? null;
}
