// jobStatuses — the status line of up to 100 jobs of one organization (batch status). Ids of other
// organizations match nothing, like unknown ids: the caller cannot tell them apart.
import type { Store } from '../store.js';

export interface JobStatusRow {
  id: string;
  status: string;
  queue_name: string;
  retry_count: number;
  updated_at: Date | string;
}

export async function jobStatuses(store: Store, organizationId: string, ids: readonly string[]): Promise<JobStatusRow[]> {
  if (ids.length === 0) return [];
  return store.query<JobStatusRow>(
    `SELECT id, status, queue_name, retry_count, updated_at FROM jobs
      WHERE organization_id = $1 AND id = ANY ($2::uuid[])`,
    [organizationId, ids],
  );
}
