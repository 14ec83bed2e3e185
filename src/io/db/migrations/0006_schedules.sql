-- Schedules: cron expressions that enqueue a job at each fire time, and the history of their runs.

-- next_run_at is the next fire time, computed once per fire (cron-parser's next() is too costly to repeat per
-- tick); null while paused. Every node loads the active ones at boot (schedules_due).
CREATE TABLE schedules (
  id               uuid PRIMARY KEY,
  organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name             text NOT NULL,
  cron_expression  text NOT NULL,
  timezone         text NOT NULL,
  queue_name       text NOT NULL,
  payload_template jsonb NOT NULL,
  priority         integer NOT NULL DEFAULT 0,
  max_retries      integer,
  timeout_seconds  integer,
  paused           boolean NOT NULL DEFAULT false,
  next_run_at      timestamptz,
  last_run_at      timestamptz,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
-- Lists: an organization's schedules, newest first.
CREATE INDEX schedules_org_created ON schedules (organization_id, created_at, id);
-- Boot: the active schedules of every organization.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused;

-- One row per fire: automatic (scheduled_for is the cron time) or manual (scheduled_for is the trigger time).
-- An automatic fire time has at most one run, so a fire repeated after a crash records nothing new.
CREATE TABLE schedule_runs (
  id              uuid PRIMARY KEY,
  schedule_id     uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  scheduled_for   timestamptz NOT NULL,
  triggered_at    timestamptz NOT NULL,
  manual          boolean NOT NULL,
  job_id          uuid,
  status          text NOT NULL CHECK (status IN ('enqueued', 'failed')),
  error           text
);
CREATE UNIQUE INDEX schedule_runs_fire ON schedule_runs (schedule_id, scheduled_for) WHERE NOT manual;
-- History: a schedule's runs, newest first.
CREATE INDEX schedule_runs_history ON schedule_runs (schedule_id, triggered_at, id);
