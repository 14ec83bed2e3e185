// acquireShards — takes up to `limit` shards that nobody holds (never owned, released, or a lease that ran out),
// each under a new epoch: from then on the previous owner's commits of that shard write nothing. SKIP LOCKED
// leaves a shard whose previous owner is committing right now (its commit holds the row FOR KEY SHARE) for the next
// round, instead of waiting on it. `which` names the shards to look at (-1: the leader lease).
import type { Store } from '../store.js';

export interface ShardLease {
  shard: number;
  /** bigint as text: epochs only grow. */
  epoch: string;
}

export async function acquireShards(store: Store, node: string, ttlMs: number, which: 'shards' | 'leader', limit: number): Promise<ShardLease[]> {
  return store.query<ShardLease>(
    `UPDATE shards s SET owner = $1, epoch = s.epoch + 1, lease_until = now() + make_interval(secs => $2::double precision / 1000)
     WHERE s.shard IN (
       SELECT shard FROM shards
       WHERE ${which === 'leader' ? 'shard = -1' : 'shard >= 0'} AND (owner IS NULL OR lease_until IS NULL OR lease_until <= now())
       ORDER BY shard LIMIT $3 FOR UPDATE SKIP LOCKED
     ) AND (s.owner IS NULL OR s.lease_until IS NULL OR s.lease_until <= now())
     RETURNING s.shard, s.epoch::text AS epoch`,
    [node, ttlMs, limit],
  );
}
