-- Many nodes on one database (docs/operations.md, "Many nodes"). PostgreSQL is the coordinator: the nodes that
-- are alive, and the shards of (organization, queue), each owned by one node at a time under an epoch. Every
-- group commit of a shard checks its epoch in the same statement (commitBatch), so a deposed owner writes
-- nothing. Lease times are the database's clock (now()), never a node's.

CREATE TABLE cluster_nodes (
  id           uuid PRIMARY KEY,
  -- host:port of its node-to-node channel; null when it takes no forwarded messages (a node on its own).
  address      text,
  started_at   timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL,
  -- Set by a clean shutdown while it hands its shards over: it takes no new shards.
  leaving      boolean NOT NULL DEFAULT false
);

-- Shards 0..n-1 are created by the first node to boot (SHARD_COUNT; every node must agree). The row with shard
-- -1 is the leader lease: the one node that runs the cluster-wide singletons (scheduler, stale-worker reaper,
-- retention sweep, workflow reconciliation, resuming a dead node's webhook deliveries).
CREATE TABLE shards (
  shard       integer PRIMARY KEY,
  owner       uuid,
  epoch       bigint NOT NULL DEFAULT 0,
  lease_until timestamptz
);
INSERT INTO shards (shard) VALUES (-1);

-- Which node is sending a delivery: it resumes its own at boot; the leader resumes those of a node that died.
ALTER TABLE webhook_deliveries ADD COLUMN node_id uuid;
