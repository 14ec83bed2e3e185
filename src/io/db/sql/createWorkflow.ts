// createWorkflow — a workflow and its graph in one statement, with status 'creating': the graph is durable
// before any of its jobs exists, so whatever a crash interrupts, reconciliation finds the workflow and its
// job ids. The edges travel as one JSON array per job (unnest would flatten a text[][]).
import type { Store } from '../store.js';

export interface NewWorkflow {
  id: string;
  organizationId: string;
  name: string;
  at: Date;
  jobs: Array<{ name: string; job_id: string; queue_name: string; depends_on: string[] }>;
}

export async function createWorkflow(store: Store, w: NewWorkflow): Promise<void> {
  await store.query(
    `WITH w AS (
       INSERT INTO workflows (id, organization_id, name, status, created_at, updated_at)
       VALUES ($1, $2, $3, 'creating', $4, $4)
       RETURNING id)
     INSERT INTO workflow_jobs (workflow_id, name, position, job_id, queue_name, depends_on)
     SELECT w.id, t.name, t.ord::int - 1, t.job_id, t.queue_name, ARRAY(SELECT jsonb_array_elements_text(t.deps::jsonb))
       FROM w, unnest($5::text[], $6::uuid[], $7::text[], $8::text[]) WITH ORDINALITY AS t(name, job_id, queue_name, deps, ord)`,
    [
      w.id,
      w.organizationId,
      w.name,
      w.at,
      w.jobs.map((j) => j.name),
      w.jobs.map((j) => j.job_id),
      w.jobs.map((j) => j.queue_name),
      w.jobs.map((j) => JSON.stringify(j.depends_on)),
    ],
  );
}
