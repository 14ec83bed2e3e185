-- The read side's indexes split by whether a job is live (issue 10). A live row was in seven indexes: every enqueue
-- and every claim (never a HOT update: status is in the partial indexes' predicates) wrote seven index entries, five
-- of them for lists, counts and stats that a worker never reads. Index insertion was 37 % of PostgreSQL's CPU in the
-- claim benchmarks; with those five gone a claim+complete cycle ran 19-32 % faster (docs/BENCHMARKS.md).
--
-- Now a live job is in four: the primary key, the actor's index (jobs_ready or jobs_held) and two list indexes; a
-- finished one (completed, deadletter, cancelled), which no longer changes, in four. Reads that span both (lists,
-- counts) are a UNION ALL of a live part and a finished part, each written with its index's predicate.
DROP INDEX jobs_live;
DROP INDEX jobs_org_created;
DROP INDEX jobs_org_status_created;
DROP INDEX jobs_org_queue_created;
DROP INDEX jobs_org_queue_updated;

-- Live jobs of a queue, oldest first: lists (newest first, backwards), counts per status (index-only), the probe
-- of liveQueues.
CREATE INDEX jobs_live_list ON jobs (organization_id, queue_name, created_at, id) INCLUDE (status)
  WHERE status IN ('pending', 'scheduled', 'processing');
-- Live jobs of an organization, oldest first: its lists without a queue. Read queue by queue instead, a page cost
-- 150-200 ms for an organization of 10,000 queues; this index cost about 8 % more WAL per claim and no measurable
-- throughput (docs/BENCHMARKS.md).
CREATE INDEX jobs_live_org ON jobs (organization_id, created_at, id)
  WHERE status IN ('pending', 'scheduled', 'processing');
-- Live jobs that have failed before: the failed attempts of a stats window. Only failing jobs pay for it.
CREATE INDEX jobs_live_failed ON jobs (organization_id, queue_name, updated_at)
  WHERE status IN ('pending', 'scheduled', 'processing') AND errors <> '[]'::jsonb;
-- What an actor holds (0023), keyed on status too, so that the running jobs of a queue (the claims of a stats
-- window) are one range however many are scheduled.
DROP INDEX jobs_held;
CREATE INDEX jobs_held ON jobs (organization_id, queue_name, status)
  WHERE status IN ('scheduled', 'processing') OR (status = 'pending' AND NOT dependencies_met);

-- Finished jobs by status (the dead-letter list, counts, retention, an organization's list per status).
CREATE INDEX jobs_done_status ON jobs (organization_id, status, created_at, id)
  WHERE status IN ('completed', 'deadletter', 'cancelled');
-- Finished jobs of a queue: its lists and counts (status included: index-only).
CREATE INDEX jobs_done_queue ON jobs (organization_id, queue_name, created_at, id) INCLUDE (status)
  WHERE status IN ('completed', 'deadletter', 'cancelled');
-- Finished jobs of a queue by their last change: the completions and dead letters of a stats window.
CREATE INDEX jobs_done_updated ON jobs (organization_id, queue_name, updated_at)
  WHERE status IN ('completed', 'deadletter', 'cancelled');
