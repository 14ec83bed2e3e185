// jobDependents — the jobs of the same workflow that wait for this one (its name is in their depends_on), with
// their states; the reverse of jobDependencies. The job's graph row is found by workflow_jobs.job_id (unique),
// then its workflow's rows (at most 100) are matched on depends_on. Jobs retention deleted are left out, as there.
import type { Store } from '../store.js';
import type { Dependency } from './jobDependencies.js';

export async function jobDependents(store: Store, organizationId: string, jobId: string): Promise<Dependency[]> {
  return store.query<Dependency>(
    `SELECT c.name, c.job_id, j.status
       FROM workflow_jobs p
       JOIN workflow_jobs c ON c.workflow_id = p.workflow_id AND p.name = ANY (c.depends_on)
       JOIN jobs j ON j.id = c.job_id AND j.organization_id = $1
      WHERE p.job_id = $2
      ORDER BY c.position`,
    [organizationId, jobId],
  );
}
