// getJob — one job of one organization, by id.
import type { Row, Store } from '../store.js';

export async function getJob(store: Store, organizationId: string, id: string): Promise<Row | null> {
  const rows = await store.query('SELECT * FROM jobs WHERE id = $1 AND organization_id = $2', [id, organizationId]);
  return rows[0] ?? null;
}
