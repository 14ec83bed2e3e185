// heartbeatNode — the node is alive (heartbeat now) and says whether it is leaving. False when its row is gone:
// the others took it for dead and pruned it, so it must register again.
import type { Store } from '../store.js';

export async function heartbeatNode(store: Store, id: string, leaving: boolean): Promise<boolean> {
  const rows = await store.query(`UPDATE cluster_nodes SET heartbeat_at = now(), leaving = $2 WHERE id = $1 RETURNING id`, [id, leaving]);
  return rows.length > 0;
}
