-- Flow control (docs/flow-control.md): per-key fairness and concurrency, queue limits, debounce, idempotency
-- windows and progress. Everything the queue actor needs to come back with the same keys, limits and debounce
-- state is on these rows; the rate window's recent hand-outs are not (a rebuilt actor starts a fresh window).

ALTER TABLE queues
  ADD COLUMN concurrency_per_key   integer CHECK (concurrency_per_key > 0),
  ADD COLUMN max_concurrency       integer CHECK (max_concurrency > 0),
  ADD COLUMN rate_limit_jobs       integer CHECK (rate_limit_jobs > 0),
  ADD COLUMN rate_limit_per_seconds integer CHECK (rate_limit_per_seconds > 0),
  ADD COLUMN paused_at             timestamptz;

ALTER TABLE jobs
  ADD COLUMN concurrency_key        text,
  -- The idempotency key frees itself at this instant (idempotency_ttl_secs): the next insert with the key takes
  -- it over in the same statement (commitBatch). Null: the key is held while the row exists.
  ADD COLUMN idempotency_expires_at timestamptz,
  ADD COLUMN debounce_key           text,
  -- A debounced job's run is never pushed past this instant (max_delay_ms).
  ADD COLUMN debounce_until         timestamptz,
  -- The lease holder's last report: {progress, message, data, at}.
  ADD COLUMN progress               jsonb;

-- Queue stats list the busiest keys of a queue's live jobs.
CREATE INDEX jobs_live_keys ON jobs (organization_id, queue_name, concurrency_key)
  WHERE concurrency_key IS NOT NULL AND status IN ('pending', 'scheduled', 'processing');
