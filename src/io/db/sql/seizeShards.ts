// seizeShards — a node that runs alone (the embedded store, or PostgreSQL without CLUSTER_SECRET) takes every
// shard and the leader lease at once under new epochs, whoever held them: the only other holder can be its own
// previous run, killed before its leases ran out, and waiting them out would leave a restarted node unable to
// serve for a lease's length. The new epochs fence anything that previous run could still write. Rows are
// locked in shard order (see renewShards).
import type { Store } from '../store.js';
import type { ShardLease } from './acquireShards.js';

export async function seizeShards(store: Store, node: string, ttlMs: number): Promise<ShardLease[]> {
  return store.query<ShardLease>(
    `UPDATE shards s SET owner = $1, epoch = s.epoch + 1, lease_until = now() + make_interval(secs => $2::double precision / 1000)
     FROM (SELECT shard FROM shards ORDER BY shard FOR UPDATE) AS k
     WHERE s.shard = k.shard
     RETURNING s.shard, s.epoch::text AS epoch`,
    [node, ttlMs],
  );
}
