// getJobByKey — the job holding an idempotency key in one organization (keys are unique per organization):
// what a duplicate enqueue answers.
import type { Row, Store } from '../store.js';

export async function getJobByKey(store: Store, organizationId: string, key: string): Promise<Row | null> {
  const rows = await store.query('SELECT * FROM jobs WHERE organization_id = $1 AND idempotency_key = $2', [organizationId, key]);
  return rows[0] ?? null;
}
