// unfinishedWorkflows — what workflow reconciliation visits: every organization's 'creating' and 'running'
// workflows, over the partial index workflows_unfinished.
import type { Store } from '../store.js';

export async function unfinishedWorkflows(
  store: Store,
): Promise<Array<{ id: string; organization_id: string; status: 'creating' | 'running'; created_at: Date | string }>> {
  return store.query(`SELECT id, organization_id, status, created_at FROM workflows WHERE status IN ('creating', 'running')`);
}
