// renewShards — extends the leases the node still holds (shard -1 is the leader lease) and answers which they
// are, with their epochs: a lease missing from the answer was taken by another node after it ran out, and its
// actors here must go. The lease runs `ttlMs` from the database's clock.
import type { Store } from '../store.js';
import type { ShardLease } from './acquireShards.js';

export async function renewShards(store: Store, node: string, ttlMs: number): Promise<ShardLease[]> {
  return store.query<ShardLease>(
    `UPDATE shards SET lease_until = now() + make_interval(secs => $2::double precision / 1000)
     WHERE owner = $1 AND lease_until > now()
     RETURNING shard, epoch::text AS epoch`,
    [node, ttlMs],
  );
}
