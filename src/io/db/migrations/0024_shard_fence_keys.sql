-- A group commit fences its shard rows FOR KEY SHARE (commitBatch), the weakest row lock: it conflicts only with
-- FOR UPDATE, which PostgreSQL takes for an update that changes a column of a unique index. This index makes the
-- owner and the epoch such columns, so every statement that hands a shard to another node or to nobody waits for
-- the commits in flight, however it is written, while a lease renewal (lease_until alone, FOR NO KEY UPDATE)
-- neither waits for them nor holds them up.
CREATE UNIQUE INDEX shards_fence ON shards (shard, epoch, owner);
