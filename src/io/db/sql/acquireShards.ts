// acquireShards — takes up to `limit` shards that nobody holds (never owned, released, or a lease that ran out),
// each under a new epoch: from then on the previous owner's commits of that shard write nothing. A shard whose
// previous owner is committing right now (its commit holds that node's fence lock shared, migration 0025) is left
// for the next round instead of waited on: the selection tries that lock first, so the update's trigger finds it
// held already. Trying rather than waiting also keeps two nodes' acquisitions, which meet owners in shard order,
// from deadlocking on each other's locks. SKIP LOCKED leaves a row another acquisition holds. `which` names the
// shards to look at (-1: the leader lease).
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
       WHERE ${which === 'leader' ? 'shard = -1' : 'shard >= 0'}
         AND CASE WHEN owner IS NULL THEN true
                  WHEN lease_until IS NULL OR lease_until <= now() THEN sluice_try_handover(owner)
                  ELSE false END
       ORDER BY shard LIMIT $3 FOR UPDATE SKIP LOCKED
     ) AND (s.owner IS NULL OR s.lease_until IS NULL OR s.lease_until <= now())
     RETURNING s.shard, s.epoch::text AS epoch`,
    [node, ttlMs, limit],
  );
}
