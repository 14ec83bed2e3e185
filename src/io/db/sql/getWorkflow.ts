// getWorkflow — one workflow of one organization with its graph and each job's progress, read from the job
// rows (the graph never changes; the rows are the truth about progress). A job whose row is missing (not yet
// enqueued while 'creating', or deleted by retention long after it finished) has status null.
import type { ReviveInput } from '../../../actors/queue/queue-actor.js';
import type { JobStatus } from '../../../actors/records.js';
import type { WorkflowStatus } from '../../../actors/workflow/graph.js';
import type { Store } from '../store.js';

export interface WorkflowRow {
  id: string;
  organization_id: string;
  name: string;
  status: WorkflowStatus;
  created_at: Date | string;
  updated_at: Date | string;
  completed_at: Date | string | null;
}

/** A job of the graph, with what reviving it needs (its row's priority, retries…). */
export interface WorkflowJobRow extends Omit<ReviveInput, 'id'> {
  name: string;
  job_id: string;
  queue_name: string;
  depends_on: string[];
  status: JobStatus | null;
  dependencies_met: boolean | null;
}

export const WORKFLOW_COLUMNS = 'id, organization_id, name, status, created_at, updated_at, completed_at';

export async function getWorkflow(
  store: Store,
  organizationId: string,
  id: string,
): Promise<(WorkflowRow & { jobs: WorkflowJobRow[] }) | null> {
  const [rows, jobs] = await Promise.all([
    store.query<WorkflowRow>(`SELECT ${WORKFLOW_COLUMNS} FROM workflows WHERE id = $1 AND organization_id = $2`, [id, organizationId]),
    store.query<WorkflowJobRow>(
      `SELECT wj.name, wj.job_id, wj.queue_name, wj.depends_on, j.status, j.dependencies_met, j.priority, j.max_retries,
              j.timeout_seconds, j.last_error, j.idempotency_key, j.workflow_id
         FROM workflow_jobs wj
         JOIN workflows w ON w.id = wj.workflow_id AND w.organization_id = $2
         LEFT JOIN jobs j ON j.id = wj.job_id AND j.organization_id = $2
        WHERE wj.workflow_id = $1
        ORDER BY wj.position`,
      [id, organizationId],
    ),
  ]);
  const w = rows[0];
  return w ? { ...w, jobs } : null;
}
