-- Sessions and email login: revoked JWT ids, login codes, the per-address mail throttle, and the lookups they need.

-- JWT ids revoked by logout. Every node loads the live ones into memory at boot; a row is useless once the token
-- it names has expired (expires_at), so old rows may be deleted.
CREATE TABLE revoked_tokens (
  jti             text PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  expires_at      timestamptz NOT NULL,
  revoked_at      timestamptz NOT NULL
);
CREATE INDEX revoked_tokens_expires ON revoked_tokens (expires_at);

-- Email login codes. Only an HMAC of (email, code) is stored: a 6-digit code has too few values for a plain hash.
-- A code is live while used_at is null, expires_at is ahead and attempts < 5; a newer code for the same
-- address ends the older ones (used_at set).
CREATE TABLE email_login_codes (
  id              uuid PRIMARY KEY,
  email           text NOT NULL,
  code_digest     text NOT NULL,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  attempts        integer NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  used_at         timestamptz
);
CREATE INDEX email_login_codes_email ON email_login_codes (email, created_at);
CREATE INDEX email_login_codes_expires ON email_login_codes (expires_at);

-- Codes sent per address in the last hour, for every address asked for, known or not: the throttle must answer
-- the same for both, or a 429 would tell which addresses have an account. One row per address, so concurrent
-- requests serialise on its row lock.
CREATE TABLE email_login_throttle (
  email      text PRIMARY KEY,
  sent_at    timestamptz[] NOT NULL,
  admitted   boolean NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX email_login_throttle_updated ON email_login_throttle (updated_at);

-- Email login finds the organization by its owner's address, case-insensitively.
CREATE INDEX organizations_owner_email ON organizations (lower(owner_email), created_at) WHERE owner_email IS NOT NULL;

-- API key lists: an organization's keys, newest first.
CREATE INDEX api_keys_org_created ON api_keys (organization_id, created_at, id);
