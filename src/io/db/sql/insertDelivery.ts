// insertDelivery — a delivery, 'pending', written before its first attempt: a node that stops mid-delivery finds
// it at boot (pendingDeliveries) and resumes it.
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
}

export async function insertDelivery(store: Store, d: NewDelivery): Promise<void> {
  await store.query(
    `INSERT INTO webhook_deliveries (id, organization_id, kind, webhook_id, job_id, event_id, event, body, status, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9)`,
    [d.id, d.organizationId, d.kind, d.webhookId, d.jobId, d.eventId, d.event, d.body, d.at],
    'insert_delivery',
  );
}
