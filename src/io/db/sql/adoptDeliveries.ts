// adoptDeliveries — the deliveries left pending by nodes that are gone (stopped between attempts or
// mid-request, or killed), taken over by this node, oldest first: each row names the node sending it
// (node_id), so a delivery another live node is still sending is never taken, and SKIP LOCKED lets two
// adopting nodes share the rest without both taking one. A node's own previous run counts as gone: a node
// comes back under a new id.
import type { Store } from '../store.js';

export interface PendingDelivery {
  id: string;
  organization_id: string;
  kind: 'webhook' | 'test' | 'callback';
  webhook_id: string | null;
  job_id: string | null;
  event: string;
  body: string;
  attempts: number;
}

export async function adoptDeliveries(store: Store, node: string, aliveMs: number, limit: number): Promise<PendingDelivery[]> {
  return store.query<PendingDelivery>(
    `UPDATE webhook_deliveries d SET node_id = $1
      WHERE d.id IN (
        SELECT id FROM webhook_deliveries
         WHERE status = 'pending' AND (node_id IS NULL OR (node_id <> $1 AND node_id NOT IN (
           SELECT id FROM cluster_nodes WHERE heartbeat_at > now() - make_interval(secs => $2::double precision / 1000))))
         ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING d.id, d.organization_id, d.kind, d.webhook_id, d.job_id, d.event, d.body, d.attempts`,
    [node, aliveMs, limit],
  );
}
