// releaseShards — gives shards up at once (a clean shutdown, or rebalancing towards a new node) instead of
// letting their leases run out: another node may take them on its next round. Only under the epoch this node
// holds, so a release cannot undo a later owner's lease.
import type { Store } from '../store.js';
import type { ShardLease } from './acquireShards.js';

export async function releaseShards(store: Store, node: string, leases: ShardLease[]): Promise<void> {
  if (leases.length === 0) return;
  await store.query(
    `UPDATE shards s SET owner = NULL, lease_until = NULL
     FROM unnest($2::int[], $3::bigint[]) AS r(shard, epoch)
     WHERE s.shard = r.shard AND s.epoch = r.epoch AND s.owner = $1`,
    [node, `{${leases.map((l) => l.shard).join(',')}}`, `{${leases.map((l) => l.epoch).join(',')}}`],
  );
}
