// setWorkflowStatus — a workflow's status transition, conditional on its current status: exactly one caller
// wins each transition, which is what lets the winner alone give back the 'workflows' quota slot.
import type { WorkflowStatus } from '../../../actors/workflow/graph.js';
import type { Store } from '../store.js';

const FINISHED: ReadonlySet<WorkflowStatus> = new Set(['completed', 'failed', 'cancelled']);

/** True when the row was in one of `from` and is now `to`. */
export async function setWorkflowStatus(
  store: Store,
  organizationId: string,
  id: string,
  to: WorkflowStatus,
  from: WorkflowStatus[],
  at: Date,
): Promise<boolean> {
  const rows = await store.query(
    `UPDATE workflows SET status = $3, updated_at = $5, completed_at = $6
      WHERE id = $1 AND organization_id = $2 AND status = ANY ($4::text[])
      RETURNING id`,
    [id, organizationId, to, from, at, FINISHED.has(to) ? at : null],
  );
  return rows.length > 0;
}
