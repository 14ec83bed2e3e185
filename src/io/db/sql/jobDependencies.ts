// jobDependencies — the parents a workflow job waits for, with their states: the names in its depends_on, matched
// to their jobs within the same workflow (explain's "waiting for dependencies").
import type { Store } from '../store.js';

export interface Dependency {
  name: string;
  job_id: string;
  status: string;
}

export async function jobDependencies(store: Store, organizationId: string, jobId: string): Promise<Dependency[]> {
  return store.query<Dependency>(
    `SELECT p.name, p.job_id, j.status
       FROM workflow_jobs c
       JOIN workflow_jobs p ON p.workflow_id = c.workflow_id AND p.name = ANY (c.depends_on)
       JOIN jobs j ON j.id = p.job_id AND j.organization_id = $1
      WHERE c.job_id = $2
      ORDER BY p.position`,
    [organizationId, jobId],
  );
}
