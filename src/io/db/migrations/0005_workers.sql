-- Workers (SPEC Workers) and the organization's incoming-webhook token.

-- A registered worker. Ids are global: the same id cannot belong to two organizations (SPEC: "an id owned by
-- another organization returns 409"), so the id alone is the key. A row occupies a slot of the 'workers' quota
-- until it is deregistered or the stale-worker reaper removes it.
CREATE TABLE workers (
  id                text PRIMARY KEY,
  organization_id   uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  queue_name        text,
  hostname          text,
  max_concurrency   integer,
  metadata          jsonb NOT NULL DEFAULT '{}',
  registered_at     timestamptz NOT NULL,
  last_heartbeat_at timestamptz NOT NULL
);
-- Lists: an organization's workers by id in byte order.
CREATE INDEX workers_org_id ON workers (organization_id, id COLLATE "C");
-- The reaper: the oldest heartbeats first, across organizations.
CREATE INDEX workers_heartbeat ON workers (last_heartbeat_at);

-- X-Webhook-Token of POST /api/v1/webhooks/:org_id/custom. Null until the first GET of the token (created
-- lazily); it must be shown again on GET, so it is stored as is, like the secrets of outgoing webhooks.
ALTER TABLE organizations ADD COLUMN webhook_token text;
