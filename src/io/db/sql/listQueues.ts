// listQueues — a page of the organization's queue rows. The list is ordered by name in byte order
// (COLLATE "C") so the keyset `name > last` means the same on PostgreSQL and PGlite whatever their default
// collation; an organization has at most a few hundred queues, so the sort this costs is small.
import type { Store } from '../store.js';

export interface QueueRow {
  name: string;
  paused: boolean;
  paused_reason: string | null;
  max_retries: number | null;
  lease_duration_secs: number | null;
  concurrency_per_key: number | null;
  max_concurrency: number | null;
  rate_limit_jobs: number | null;
  rate_limit_per_seconds: number | null;
  paused_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

export const QUEUE_COLUMNS = `name, paused, paused_reason, max_retries, lease_duration_secs, concurrency_per_key, max_concurrency,
  rate_limit_jobs, rate_limit_per_seconds, paused_at, created_at, updated_at`;

export async function listQueues(store: Store, organizationId: string, afterName: string | null, limit: number): Promise<QueueRow[]> {
  return store.query<QueueRow>(
    afterName === null
      ? `SELECT ${QUEUE_COLUMNS} FROM queues WHERE organization_id = $1 ORDER BY name COLLATE "C" LIMIT $2`
      : `SELECT ${QUEUE_COLUMNS} FROM queues WHERE organization_id = $1 AND name COLLATE "C" > $3 ORDER BY name COLLATE "C" LIMIT $2`,
    afterName === null ? [organizationId, limit + 1] : [organizationId, limit + 1, afterName],
  );
}
