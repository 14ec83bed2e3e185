-- The fence's read of the shards, cheaper (issue 10). As written in 0025 the planner joined the commit's shards to
-- the shards table over a sequential scan (hashed, or materialized when the statistics are those of a new
-- database): every row of the table and its dead versions (each lease renewal leaves one per shard) visited on
-- every commit, about 150 µs of PostgreSQL's CPU per commit and 12-14 % of it in the claim benchmarks (perf). Now
-- each of the commit's shards is looked up by its key: a subquery per shard (OFFSET 0 keeps the planner from
-- turning it into a join) read through an index (enable_seqscan off: plpgsql plans the query once per connection,
-- and at a node's first commit the table looks a page long, so a sequential scan would be chosen and kept while
-- renewals grow the table with dead row versions). The lock is taken as a simple expression, which plpgsql
-- evaluates without starting an executor (PERFORM ran a query). The order and the snapshots are as before: the
-- lock first, then a read that sees what committed before it; the body is the same wherever older nodes call it
-- (a rolling update).
CREATE OR REPLACE FUNCTION sluice_fence(node uuid, shard_ids int[], epochs bigint[]) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $$
DECLARE
  held text;
BEGIN
  held := pg_advisory_xact_lock_shared(1397506889, hashtext(node::text))::text;
  RETURN NOT EXISTS (
    SELECT FROM unnest(shard_ids, epochs) AS f(shard, epoch)
    WHERE (SELECT s.epoch FROM shards s WHERE s.shard = f.shard AND s.owner = node OFFSET 0) IS DISTINCT FROM f.epoch);
END $$;
