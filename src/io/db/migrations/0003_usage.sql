-- Daily usage per organization. jobs_created is written by the organization's quota actor (the absolute count
-- for the day, journaled with its group commit); api_calls is added to by each node's request counter.
CREATE TABLE usage_daily (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  day             date NOT NULL,
  jobs_created    integer NOT NULL DEFAULT 0,
  api_calls       bigint NOT NULL DEFAULT 0,
  rate_limited    bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (organization_id, day)
);
