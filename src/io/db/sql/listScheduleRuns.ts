// listScheduleRuns — one schedule's run history, newest first: ORDER BY triggered_at DESC, id DESC, keyset to the
// microsecond, over schedule_runs_history (0006). The organization is in the filter: another organization's
// schedule has no runs here.
import type { Store } from '../store.js';

export interface ScheduleRunRow {
  id: string;
  schedule_id: string;
  scheduled_for: Date | string;
  triggered_at: Date | string;
  manual: boolean;
  job_id: string | null;
  status: 'enqueued' | 'failed';
  error: string | null;
  cursor_at: string;
}

const COLUMNS = `id, schedule_id, scheduled_for, triggered_at, manual, job_id, status, error,
  to_char(triggered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at`;

export async function listScheduleRuns(
  store: Store,
  organizationId: string,
  scheduleId: string,
  after: [at: string, id: string] | null,
  limit: number,
): Promise<ScheduleRunRow[]> {
  return store.query<ScheduleRunRow>(
    after === null
      ? `SELECT ${COLUMNS} FROM schedule_runs WHERE schedule_id = $2 AND organization_id = $1
          ORDER BY triggered_at DESC, id DESC LIMIT $3`
      : `SELECT ${COLUMNS} FROM schedule_runs WHERE schedule_id = $2 AND organization_id = $1
            AND (triggered_at, id) < ($4::timestamptz, $5::uuid)
          ORDER BY triggered_at DESC, id DESC LIMIT $3`,
    after === null ? [organizationId, scheduleId, limit + 1] : [organizationId, scheduleId, limit + 1, after[0], after[1]],
  );
}
