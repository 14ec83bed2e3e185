// insertDelivery — a delivery, 'pending', written before its first attempt under the id of the node sending it:
// if that node stops mid-delivery, a live node adopts it (adoptDeliveries) and resumes it.
import type { Store } from '../store.js';

export interface NewDelivery {
  id: string;
  organizationId: string;
  kind: 'webhook' | 'test' | 'callback';
  webhookId: string | null;
  jobId: string | null;
  eventId: string;
  event: string;
  body: string;
  at: Date;
  /** The node sending it. */
  nodeId: string;
}

export async function insertDelivery(store: Store, d: NewDelivery): Promise<void> {
  await store.query(
    `INSERT INTO webhook_deliveries (id, organization_id, kind, webhook_id, job_id, event_id, event, body, status, created_at, node_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10)`,
    [d.id, d.organizationId, d.kind, d.webhookId, d.jobId, d.eventId, d.event, d.body, d.at, d.nodeId],
    'insert_delivery',
  );
}
