-- The fence of a group commit without row locks (issue 10: the cost of many queues). A commit used to take each
-- of its shard rows FOR KEY SHARE (migration 0024): a group with a hundred queues locked about a hundred rows, each
-- lock a heap write and a WAL record, and with two commits in flight each row needed a MultiXact. With 100 queues
-- enqueue ran at 0.6 of one queue's rate, at the same rate with no fence.
--
-- Now a commit takes one shared advisory lock, its node's, and then reads its shards' owner and epoch with a
-- snapshot taken after that lock (sluice_fence, a VOLATILE function: each statement in it sees what committed
-- before it started, where the commit statement's own snapshot is older than the lock). Every change of a
-- shard's owner or epoch, however it is written, takes the previous owner's lock exclusively first (the trigger):
-- it waits for that owner's commits in flight, and a commit that starts while it is open waits for it to end and
-- then finds the new epoch and writes nothing. Either way a new owner loads a shard's rows only after the old
-- owner's last write. A lease renewal changes neither column and takes no advisory lock.
--
-- Safe beside nodes that fence with row locks (a rolling update): their takeovers run this trigger too, and their
-- commits' KEY SHARE still makes any takeover (an update of a key column, migration 0024) wait for them.
--
-- The lock is (class 1397506889, hashtext(node id)); the two-integer form never meets the migrations' one-bigint
-- key. Two nodes whose ids hash alike only wait for each other's commits during a takeover.

CREATE FUNCTION sluice_fence(node uuid, shard_ids int[], epochs bigint[]) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(1397506889, hashtext(node::text));
  RETURN (SELECT count(*) FROM shards s JOIN unnest(shard_ids, epochs) AS f(shard, epoch) ON s.shard = f.shard AND s.epoch = f.epoch
          WHERE s.owner = node) = cardinality(shard_ids);
END $$;

CREATE FUNCTION sluice_shard_handover() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.owner IS NOT NULL AND (TG_OP = 'DELETE' OR NEW.owner IS DISTINCT FROM OLD.owner OR NEW.epoch IS DISTINCT FROM OLD.epoch) THEN
    PERFORM pg_advisory_xact_lock(1397506889, hashtext(OLD.owner::text));
  END IF;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END $$;

-- For a statement that would rather skip a shard whose owner is committing than wait (acquireShards): the same
-- exclusive lock, tried.
CREATE FUNCTION sluice_try_handover(owner uuid) RETURNS boolean
LANGUAGE sql VOLATILE AS $$ SELECT pg_try_advisory_xact_lock(1397506889, hashtext(owner::text)) $$;

CREATE TRIGGER shards_handover BEFORE UPDATE OR DELETE ON shards FOR EACH ROW EXECUTE FUNCTION sluice_shard_handover();
