-- Organizations, their API keys, queues and jobs: what the single-node service needs.

CREATE TABLE organizations (
  id              uuid PRIMARY KEY,
  name            text NOT NULL,
  slug            text NOT NULL UNIQUE,
  plan            text NOT NULL DEFAULT 'free',
  owner_email     text,
  limit_overrides jsonb NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);

CREATE TABLE api_keys (
  id              uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name            text NOT NULL,
  -- SHA-256 of the whole key, hex. The key itself is never stored.
  key_digest      text NOT NULL UNIQUE,
  -- The first characters of the key, to recognise it in a list.
  key_prefix      text NOT NULL,
  permissions     text[] NOT NULL DEFAULT '{*}',
  created_at      timestamptz NOT NULL,
  last_used_at    timestamptz,
  revoked_at      timestamptz
);
CREATE INDEX api_keys_org ON api_keys (organization_id);

CREATE TABLE queues (
  organization_id     uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name                text NOT NULL,
  paused              boolean NOT NULL DEFAULT false,
  paused_reason       text,
  -- Overrides for jobs enqueued without their own value.
  max_retries         integer,
  lease_duration_secs integer,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  PRIMARY KEY (organization_id, name)
);

CREATE TABLE jobs (
  id                        uuid PRIMARY KEY,
  organization_id           uuid NOT NULL,
  queue_name                text NOT NULL,
  status                    text NOT NULL
    CHECK (status IN ('pending', 'scheduled', 'processing', 'completed', 'deadletter', 'cancelled')),
  payload                   jsonb NOT NULL,
  result                    jsonb,
  priority                  integer NOT NULL DEFAULT 0,
  retry_count               integer NOT NULL DEFAULT 0,
  max_retries               integer NOT NULL,
  last_error                text,
  -- Error history: [{attempt, error, at}], appended by each failure and lease expiry.
  errors                    jsonb NOT NULL DEFAULT '[]',
  tags                      jsonb NOT NULL DEFAULT '{}',
  idempotency_key           text,
  timeout_seconds           integer NOT NULL,
  scheduled_at              timestamptz,
  created_at                timestamptz NOT NULL,
  started_at                timestamptz,
  completed_at              timestamptz,
  updated_at                timestamptz NOT NULL,
  assigned_worker_id        text,
  lease_id                  uuid,
  lease_expires_at          timestamptz,
  workflow_id               uuid,
  dependencies_met          boolean NOT NULL DEFAULT true,
  completion_webhook        text,
  completion_webhook_secret text
);
-- Idempotency keys are unique per organization, across its queues.
CREATE UNIQUE INDEX jobs_idempotency ON jobs (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- Rebuilding a queue actor reads the live jobs of one queue.
CREATE INDEX jobs_live ON jobs (organization_id, queue_name) WHERE status IN ('pending', 'scheduled', 'processing');
-- Listing pages walk (created_at, id) per organization.
CREATE INDEX jobs_org_created ON jobs (organization_id, created_at, id);
