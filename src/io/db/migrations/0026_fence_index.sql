-- The fence's read of the shards, cheaper (issue 10). As written in 0025 the planner joined the commit's shards to
-- the shards table by a hash over a sequential scan: every row of the table and its dead versions (each lease
-- renewal leaves one per shard) visited on every commit, about 150 µs of PostgreSQL's CPU per commit and 12 % of
-- it in the claim → complete benchmark (perf). Now each of the commit's shards is looked up by its key, and the
-- lock is taken as a simple expression, which plpgsql evaluates without starting an executor (PERFORM ran a
-- query). The order and the snapshots are as before: the lock first, then a read that sees what committed before
-- it; the body is the same wherever older nodes call it (a rolling update).
CREATE OR REPLACE FUNCTION sluice_fence(node uuid, shard_ids int[], epochs bigint[]) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  held text;
BEGIN
  held := pg_advisory_xact_lock_shared(1397506889, hashtext(node::text))::text;
  RETURN NOT EXISTS (
    SELECT FROM unnest(shard_ids, epochs) AS f(shard, epoch)
    WHERE NOT EXISTS (SELECT FROM shards s WHERE s.shard = f.shard AND s.epoch = f.epoch AND s.owner = node));
END $$;
