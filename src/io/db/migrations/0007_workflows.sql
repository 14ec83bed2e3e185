-- Workflows: dependency graphs of jobs. The graph (names, queues, edges) is written before its jobs exist and
-- never changes; the jobs' progress is read from their own rows (jobs.workflow_id, jobs.dependencies_met).

-- status: creating (graph written, jobs being enqueued blocked; nothing of it runs yet), running, completed,
-- failed (a job dead-lettered), cancelled. The 'workflows' quota counts creating + running rows.
CREATE TABLE workflows (
  id              uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name            text NOT NULL,
  status          text NOT NULL CHECK (status IN ('creating', 'running', 'completed', 'failed', 'cancelled')),
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  completed_at    timestamptz
);
-- Listing pages walk (created_at, id) per organization.
CREATE INDEX workflows_org_created ON workflows (organization_id, created_at, id);
-- Reconciliation reads the unfinished ones.
CREATE INDEX workflows_unfinished ON workflows (status) WHERE status IN ('creating', 'running');

-- One row per job of a graph; position keeps the order of the request.
CREATE TABLE workflow_jobs (
  workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  name        text NOT NULL,
  position    integer NOT NULL,
  job_id      uuid NOT NULL UNIQUE,
  queue_name  text NOT NULL,
  depends_on  text[] NOT NULL DEFAULT '{}',
  PRIMARY KEY (workflow_id, name)
);

CREATE INDEX jobs_workflow ON jobs (workflow_id) WHERE workflow_id IS NOT NULL;
