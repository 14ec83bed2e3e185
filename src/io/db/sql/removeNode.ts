// removeNode — a node leaves the registry at the end of a clean shutdown, once its shards are handed over.
import type { Store } from '../store.js';

export async function removeNode(store: Store, id: string): Promise<void> {
  await store.query(`DELETE FROM cluster_nodes WHERE id = $1`, [id]);
}
