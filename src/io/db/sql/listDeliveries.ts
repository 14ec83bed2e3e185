// listDeliveries — the newest deliveries of one endpoint of one organization (the API reads at most 100), over
// webhook_deliveries_webhook_created (0008).
import type { Store } from '../store.js';

export interface DeliveryRow {
  id: string;
  event_id: string;
  event: string;
  kind: string;
  status: string;
  attempts: number;
  response_status: number | null;
  error: string | null;
  created_at: Date | string;
  completed_at: Date | string | null;
}

export async function listDeliveries(store: Store, organizationId: string, webhookId: string, limit: number): Promise<DeliveryRow[]> {
  return store.query<DeliveryRow>(
    `SELECT id, event_id, event, kind, status, attempts, response_status, error, created_at, completed_at
       FROM webhook_deliveries WHERE webhook_id = $1 AND organization_id = $2
      ORDER BY created_at DESC, id DESC LIMIT $3`,
    [webhookId, organizationId, limit],
  );
}
