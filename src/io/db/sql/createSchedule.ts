// createSchedule — a new schedule, its first fire time already computed (null when created paused).
import type { Store } from '../store.js';
import { SCHEDULE_COLUMNS, type ScheduleRow } from './getSchedule.js';

export type ScheduleFields = Pick<
  ScheduleRow,
  'name' | 'description' | 'cron_expression' | 'timezone' | 'queue_name' | 'payload_template' | 'priority' | 'max_retries' | 'timeout_seconds' | 'paused'
> & { next_run_at: Date | null };

/** The definition as statement parameters, in the column order both create and update use. */
export const fieldValues = (f: ScheduleFields): unknown[] => [
  f.name,
  f.cron_expression,
  f.timezone,
  f.queue_name,
  JSON.stringify(f.payload_template),
  f.priority,
  f.max_retries,
  f.timeout_seconds,
  f.paused,
  f.next_run_at,
  f.description,
];

export async function createSchedule(store: Store, id: string, organizationId: string, f: ScheduleFields, at: Date): Promise<ScheduleRow> {
  const rows = await store.query<ScheduleRow>(
    `INSERT INTO schedules (id, organization_id, name, cron_expression, timezone, queue_name, payload_template, priority,
                            max_retries, timeout_seconds, paused, next_run_at, description, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $14, $14)
     RETURNING ${SCHEDULE_COLUMNS}`,
    [id, organizationId, ...fieldValues(f), at],
  );
  return rows[0]!;
}
