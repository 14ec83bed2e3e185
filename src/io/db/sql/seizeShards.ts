// seizeShards — a node that runs alone (the embedded store, or PostgreSQL without CLUSTER_SECRET) takes every
// shard and the leader lease at once under new epochs, whoever held them: the only other holder can be its own
// previous run, killed before its leases ran out, and waiting them out would leave a restarted node unable to
// serve for a lease's length. The new epochs fence anything that previous run could still write.
import type { Store } from '../store.js';
import type { ShardLease } from './acquireShards.js';

export async function seizeShards(store: Store, node: string, ttlMs: number): Promise<ShardLease[]> {
  return store.query<ShardLease>(
    `UPDATE shards SET owner = $1, epoch = epoch + 1, lease_until = now() + make_interval(secs => $2::double precision / 1000)
     RETURNING shard, epoch::text AS epoch`,
    [node, ttlMs],
  );
}
