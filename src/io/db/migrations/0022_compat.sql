-- What clients written for the hosted service send and expect to read back (docs/api.md, "Answers existing
-- clients expect"). Nullable columns without a default: adding them rewrites no rows.

-- The worker's own version string, sent on register (informational, like hostname and metadata).
ALTER TABLE workers ADD COLUMN version text;

-- A schedule's free-text description.
ALTER TABLE schedules ADD COLUMN description text;

-- A job not started by this instant is cancelled with last_error 'expired' (the queue actor's timer; a rebuilt
-- actor reads it back with the live jobs). Null: it never expires. Cleared when a retry revives the job.
ALTER TABLE jobs ADD COLUMN expires_at timestamptz;
