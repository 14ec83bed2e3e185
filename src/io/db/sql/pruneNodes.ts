// pruneNodes — the leader tidies the registry: nodes whose heartbeat stopped `deadMs` ago are removed (their
// shards were taken by others when the leases ran out; this only forgets them). Answers the ids removed.
import type { Store } from '../store.js';

export async function pruneNodes(store: Store, deadMs: number): Promise<string[]> {
  const rows = await store.query<{ id: string }>(
    `DELETE FROM cluster_nodes WHERE heartbeat_at < now() - make_interval(secs => $1::double precision / 1000) RETURNING id`,
    [deadMs],
  );
  return rows.map((r) => r.id);
}
