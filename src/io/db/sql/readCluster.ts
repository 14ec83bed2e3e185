// readCluster — who owns what: every shard's owner and epoch (a lease that ran out counts as unowned), and the
// nodes whose heartbeat is younger than `aliveMs`, with their node-to-node addresses.
import type { Store } from '../store.js';

export interface ClusterView {
  shards: Array<{ shard: number; owner: string | null; epoch: string }>;
  nodes: Array<{ id: string; address: string | null; leaving: boolean }>;
}

export async function readCluster(store: Store, aliveMs: number): Promise<ClusterView> {
  const [shards, nodes] = await Promise.all([
    store.query<ClusterView['shards'][number]>(
      `SELECT shard, CASE WHEN lease_until > now() THEN owner END AS owner, epoch::text AS epoch FROM shards ORDER BY shard`,
    ),
    store.query<ClusterView['nodes'][number]>(
      `SELECT id, address, leaving FROM cluster_nodes WHERE heartbeat_at > now() - make_interval(secs => $1::double precision / 1000) ORDER BY id`,
      [aliveMs],
    ),
  ]);
  return { shards, nodes };
}
