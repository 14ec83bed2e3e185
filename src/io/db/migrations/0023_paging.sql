-- Bounded queue actors (QUEUE_WINDOW, docs/architecture.md "Paging"): an actor holds the head of its queue's
-- claim order and reads the rest page by page, so its rebuild and its refills must read the ready jobs in claim
-- order without sorting the backlog, and the jobs it always holds without walking the ready ones.

-- Ready jobs (pending, dependencies met) in claim order: highest priority, then oldest id. Keyed on -priority so
-- that "after the last row read" is one row comparison, (-priority, id) > (…), an index range, not a filter.
CREATE INDEX jobs_ready ON jobs (organization_id, queue_name, (-priority), id)
  WHERE status = 'pending' AND dependencies_met;
-- The same per concurrency key: a queue with keys keeps the head of every key's lane (fairness, issue 14).
CREATE INDEX jobs_ready_keys ON jobs (organization_id, queue_name, concurrency_key, (-priority), id)
  WHERE status = 'pending' AND dependencies_met AND concurrency_key IS NOT NULL;
-- What an actor always holds: scheduled, processing (bounded by claims) and blocked workflow jobs.
CREATE INDEX jobs_held ON jobs (organization_id, queue_name)
  WHERE status IN ('scheduled', 'processing') OR (status = 'pending' AND NOT dependencies_met);
-- Ready jobs an actor must find without holding them: an expiry to fire, a debounce key to absorb a burst.
CREATE INDEX jobs_ready_marks ON jobs (organization_id, queue_name)
  WHERE status = 'pending' AND dependencies_met AND (expires_at IS NOT NULL OR debounce_key IS NOT NULL);
