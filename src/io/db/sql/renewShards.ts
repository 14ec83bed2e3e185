// renewShards — extends the leases the node holds, by (shard, epoch) as it knows them (shard -1 is the leader
// lease), and answers which it still has: a lease missing from the answer was taken by another node after it ran
// out (this node was paused or cut off), and its actors here must go. Only leases the node knows are renewed, so
// a row written for it by someone else cannot stay held by a node that does not serve it. The lease runs `ttlMs`
// from the database's clock. Rows are locked in shard order, as every statement on shards locks them: two
// statements locking several shard rows in different orders could deadlock. A renewal changes neither owner nor
// epoch, so it takes no fence lock (migration 0025): it neither waits for the commits in flight nor makes them
// wait, while a takeover, which locks the row, still waits for it.
import type { Store } from '../store.js';
import type { ShardLease } from './acquireShards.js';

export async function renewShards(store: Store, node: string, ttlMs: number, leases: readonly ShardLease[]): Promise<ShardLease[]> {
  if (leases.length === 0) return [];
  return store.query<ShardLease>(
    `UPDATE shards s SET lease_until = now() + make_interval(secs => $2::double precision / 1000)
     FROM (SELECT sh.shard FROM shards sh JOIN unnest($3::int[], $4::bigint[]) AS l(shard, epoch) ON sh.shard = l.shard AND sh.epoch = l.epoch
            WHERE sh.owner = $1 AND sh.lease_until > now() ORDER BY sh.shard FOR NO KEY UPDATE OF sh) AS k
     WHERE s.shard = k.shard
     RETURNING s.shard, s.epoch::text AS epoch`,
    [node, ttlMs, `{${leases.map((l) => l.shard).join(',')}}`, `{${leases.map((l) => l.epoch).join(',')}}`],
  );
}
