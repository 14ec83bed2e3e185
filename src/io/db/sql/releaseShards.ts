// releaseShards — gives shards up at once (a clean shutdown, or rebalancing towards a new node) instead of
// letting their leases run out: another node may take them on its next round. Only under the epoch this node
// holds, so a release cannot undo a later owner's lease. Rows are locked in shard order (see renewShards).
import type { Store } from '../store.js';
import type { ShardLease } from './acquireShards.js';

export async function releaseShards(store: Store, node: string, leases: ShardLease[]): Promise<void> {
  if (leases.length === 0) return;
  await store.query(
    `UPDATE shards s SET owner = NULL, lease_until = NULL
     FROM (SELECT sh.shard FROM shards sh JOIN unnest($2::int[], $3::bigint[]) AS r(shard, epoch) ON sh.shard = r.shard AND sh.epoch = r.epoch
            WHERE sh.owner = $1 ORDER BY sh.shard FOR UPDATE OF sh) AS k
     WHERE s.shard = k.shard`,
    [node, `{${leases.map((l) => l.shard).join(',')}}`, `{${leases.map((l) => l.epoch).join(',')}}`],
  );
}
