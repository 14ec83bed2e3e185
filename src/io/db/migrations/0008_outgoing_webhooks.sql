-- Outgoing webhooks and their delivery history; per-job completion callbacks share the deliveries table.

-- An organization's endpoints. failure_count counts consecutive failed deliveries (not attempts); the 20th turns
-- last_status to 'auto_disabled' and enabled to false. Only enabled endpoints count against the webhooks quota.
CREATE TABLE outgoing_webhooks (
  id              uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name            text NOT NULL,
  url             text NOT NULL,
  events          text[] NOT NULL,
  secret          text,
  enabled         boolean NOT NULL,
  failure_count   integer NOT NULL DEFAULT 0,
  last_status     text CHECK (last_status IN ('success', 'failed', 'auto_disabled')),
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE INDEX outgoing_webhooks_org_created ON outgoing_webhooks (organization_id, created_at, id);

-- One row per delivery (one event to one endpoint, or one completion callback), written 'pending' before the
-- first attempt so that a node that stops mid-delivery resumes it at boot from `attempts`. The body is the exact
-- text sent: a resumed attempt sends the same bytes, and the signature covers them. kind 'callback' rows have
-- no webhook: their URL and secret are read from the job row (job_id) when they are sent.
CREATE TABLE webhook_deliveries (
  id              uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  kind            text NOT NULL CHECK (kind IN ('webhook', 'test', 'callback')),
  webhook_id      uuid REFERENCES outgoing_webhooks (id) ON DELETE CASCADE,
  job_id          uuid,
  event_id        text NOT NULL,
  event           text NOT NULL,
  body            text NOT NULL,
  status          text NOT NULL CHECK (status IN ('pending', 'success', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  response_status integer,
  error           text,
  created_at      timestamptz NOT NULL,
  completed_at    timestamptz
);
-- The newest deliveries of an endpoint (the API shows 100).
CREATE INDEX webhook_deliveries_webhook_created ON webhook_deliveries (webhook_id, created_at DESC, id DESC);
-- Resume at boot.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (created_at) WHERE status = 'pending';
-- History retention per organization.
CREATE INDEX webhook_deliveries_org_created ON webhook_deliveries (organization_id, created_at);
