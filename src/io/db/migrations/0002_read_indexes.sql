-- Indexes of the read side: job lists and their filters, counts per status, queue stats, retention.
-- Each index is one more write on every job insert and status change, so there are only these four.

-- Lists filtered by status (the DLQ list among them), counts per status of an organization, and the
-- retention sweep (completed/cancelled, oldest first).
CREATE INDEX jobs_org_status_created ON jobs (organization_id, status, created_at, id);

-- Lists filtered by queue; status is included so that counts per queue are index-only scans.
CREATE INDEX jobs_org_queue_created ON jobs (organization_id, queue_name, created_at, id) INCLUDE (status);

-- Queue throughput over the last minute reads only the jobs of the queue touched within it.
CREATE INDEX jobs_org_queue_updated ON jobs (organization_id, queue_name, updated_at);

-- Tag filters (`tags ? key`, `tags @> {key: value}`). Partial: untagged jobs, the common case, cost nothing
-- here; queries repeat the predicate `tags <> '{}'` so the planner may use it.
CREATE INDEX jobs_tags ON jobs USING gin (tags) WHERE tags <> '{}'::jsonb;
