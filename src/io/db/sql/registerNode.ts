// registerNode — a node joins: its row in cluster_nodes, heartbeat now (the database's clock). A node that
// restarts comes back under a new id; a row left by a crash is removed by pruneNodes once its heartbeat is old.
import type { Store } from '../store.js';

export async function registerNode(store: Store, id: string, address: string | null): Promise<void> {
  await store.query(
    `INSERT INTO cluster_nodes (id, address, started_at, heartbeat_at) VALUES ($1, $2, now(), now())
     ON CONFLICT (id) DO UPDATE SET address = EXCLUDED.address, heartbeat_at = now(), leaving = false`,
    [id, address],
  );
}
