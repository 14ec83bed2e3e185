// updateSchedule — replaces a schedule's definition and its next fire time (the route merged the change into
// the current row and recomputed the time). Null when the schedule is not the organization's.
import type { Store } from '../store.js';
import { fieldValues, type ScheduleFields } from './createSchedule.js';
import { SCHEDULE_COLUMNS, type ScheduleRow } from './getSchedule.js';

export async function updateSchedule(store: Store, organizationId: string, id: string, f: ScheduleFields, at: Date): Promise<ScheduleRow | null> {
  const rows = await store.query<ScheduleRow>(
    `UPDATE schedules SET name = $3, cron_expression = $4, timezone = $5, queue_name = $6, payload_template = $7::jsonb,
            priority = $8, max_retries = $9, timeout_seconds = $10, paused = $11, next_run_at = $12, description = $13, updated_at = $14
      WHERE organization_id = $1 AND id = $2
      RETURNING ${SCHEDULE_COLUMNS}`,
    [organizationId, id, ...fieldValues(f), at],
  );
  return rows[0] ?? null;
}
