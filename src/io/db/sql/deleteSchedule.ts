// deleteSchedule — removes a schedule and its run history (ON DELETE CASCADE). False when there was none: only
// a deletion that removed a row gives its quota slot back.
import type { Store } from '../store.js';

export async function deleteSchedule(store: Store, organizationId: string, id: string): Promise<boolean> {
  const rows = await store.query('DELETE FROM schedules WHERE organization_id = $1 AND id = $2 RETURNING id', [organizationId, id]);
  return rows.length > 0;
}
