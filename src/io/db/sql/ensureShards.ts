// ensureShards — the first node creates shards 0..count-1; every node then checks that the cluster has exactly
// `count` shards, because the shard of an (organization, queue) is a hash modulo that count: two nodes that
// disagree would both own one queue.
import type { Store } from '../store.js';

export async function ensureShards(store: Store, count: number): Promise<number> {
  await store.query(
    `INSERT INTO shards (shard) SELECT s FROM generate_series(0, $1::int - 1) AS s
     WHERE NOT EXISTS (SELECT 1 FROM shards WHERE shard >= 0)
     ON CONFLICT (shard) DO NOTHING`,
    [count],
  );
  const [row] = await store.query<{ n: number }>(`SELECT count(*)::int AS n FROM shards WHERE shard >= 0`);
  return row?.n ?? 0;
}
