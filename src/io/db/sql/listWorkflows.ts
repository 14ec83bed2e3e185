// listWorkflows — an organization's workflows, newest first, with the keyset of the jobs list (`cursor_at`
// to the microsecond) over the index workflows_org_created (0007).
import type { Store } from '../store.js';
import { WORKFLOW_COLUMNS, type WorkflowRow } from './getWorkflow.js';
import { CURSOR_AT } from './listJobs.js';

export type WorkflowCursor = [at: string, id: string];

export async function listWorkflows(
  store: Store,
  organizationId: string,
  filter: { status: string | null },
  after: WorkflowCursor | null,
  limit: number,
): Promise<Array<WorkflowRow & { cursor_at: string; job_count: number }>> {
  return store.query(
    `SELECT ${WORKFLOW_COLUMNS}, ${CURSOR_AT} AS cursor_at,
            (SELECT count(*)::int FROM workflow_jobs wj WHERE wj.workflow_id = w.id) AS job_count
       FROM workflows w
      WHERE organization_id = $1 AND ($2::text IS NULL OR status = $2::text)
        AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::uuid))
      ORDER BY created_at DESC, id DESC LIMIT $5`,
    [organizationId, filter.status, after?.[0] ?? null, after?.[1] ?? null, limit + 1],
  );
}
