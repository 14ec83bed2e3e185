// setSchedulePaused — pause (next_run_at null: nothing fires) or resume (the next fire time after now, computed by
// the caller). Null when the schedule is not the organization's.
import type { Store } from '../store.js';
import { SCHEDULE_COLUMNS, type ScheduleRow } from './getSchedule.js';

export async function setSchedulePaused(
  store: Store,
  organizationId: string,
  id: string,
  paused: boolean,
  nextRunAt: Date | null,
  at: Date,
): Promise<ScheduleRow | null> {
  const rows = await store.query<ScheduleRow>(
    `UPDATE schedules SET paused = $3, next_run_at = $4, updated_at = $5
      WHERE organization_id = $1 AND id = $2
      RETURNING ${SCHEDULE_COLUMNS}`,
    [organizationId, id, paused, nextRunAt, at],
  );
  return rows[0] ?? null;
}
