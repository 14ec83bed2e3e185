// getSchedule — one schedule of one organization (another organization's schedule is null, like a missing one).
import type { Store } from '../store.js';

export interface ScheduleRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  cron_expression: string;
  timezone: string;
  queue_name: string;
  payload_template: Record<string, unknown>;
  priority: number;
  max_retries: number | null;
  timeout_seconds: number | null;
  paused: boolean;
  next_run_at: Date | string | null;
  last_run_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

export const SCHEDULE_COLUMNS = `id, organization_id, name, description, cron_expression, timezone, queue_name, payload_template, priority,
  max_retries, timeout_seconds, paused, next_run_at, last_run_at, created_at, updated_at`;

export async function getSchedule(store: Store, organizationId: string, id: string): Promise<ScheduleRow | null> {
  const rows = await store.query<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE organization_id = $1 AND id = $2`, [
    organizationId,
    id,
  ]);
  return rows[0] ?? null;
}
