// pendingDeliveries — deliveries a node left unfinished (stopped between attempts or mid-request), oldest
// first, to resume at boot from the attempt after the last one recorded.
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

export async function pendingDeliveries(store: Store, limit: number): Promise<PendingDelivery[]> {
  return store.query<PendingDelivery>(
    `SELECT id, organization_id, kind, webhook_id, job_id, event, body, attempts
       FROM webhook_deliveries WHERE status = 'pending' ORDER BY created_at LIMIT $1`,
    [limit],
  );
}
