// listSchedules — an organization's schedules, newest first: ORDER BY created_at DESC, id DESC with the keyset of
// the other lists (`cursor_at` to the microsecond), over schedules_org_created (0006).
import type { Store } from '../store.js';
import { SCHEDULE_COLUMNS, type ScheduleRow } from './getSchedule.js';
import { CURSOR_AT } from './listJobs.js';

export async function listSchedules(
  store: Store,
  organizationId: string,
  after: [at: string, id: string] | null,
  limit: number,
): Promise<Array<ScheduleRow & { cursor_at: string }>> {
  return store.query(
    after === null
      ? `SELECT ${SCHEDULE_COLUMNS}, ${CURSOR_AT} AS cursor_at FROM schedules WHERE organization_id = $1
          ORDER BY created_at DESC, id DESC LIMIT $2`
      : `SELECT ${SCHEDULE_COLUMNS}, ${CURSOR_AT} AS cursor_at FROM schedules WHERE organization_id = $1
            AND (created_at, id) < ($3::timestamptz, $4::uuid)
          ORDER BY created_at DESC, id DESC LIMIT $2`,
    after === null ? [organizationId, limit + 1] : [organizationId, limit + 1, after[0], after[1]],
  );
}
