// recordScheduleRun — after a fire: the run row, last_run_at, and (automatic fires) next_run_at moved forward, in
// one statement. next_run_at moves only if it still holds the fire time this run was for: a schedule changed
// meanwhile (updated, paused, resumed) keeps the time its route computed. An automatic fire time already
// recorded (a fire repeated after a crash) adds no second run. Nothing happens for a deleted schedule.
import type { Store } from '../store.js';

export interface ScheduleRun {
  id: string;
  scheduleId: string;
  organizationId: string;
  scheduledFor: Date;
  triggeredAt: Date;
  manual: boolean;
  jobId: string | null;
  status: 'enqueued' | 'failed';
  error: string | null;
  /** Automatic fires: the fire time the schedule row should still hold, and the one after it. */
  advance: { from: Date; to: Date } | null;
}

/** True when the run was recorded (false: the schedule is gone, or this fire time has its run already). */
export async function recordScheduleRun(store: Store, r: ScheduleRun): Promise<boolean> {
  const rows = await store.query<{ recorded: number }>(
    `WITH s AS (
       UPDATE schedules
          SET last_run_at = greatest(last_run_at, $5::timestamptz),
              next_run_at = CASE WHEN next_run_at = $10::timestamptz THEN $11::timestamptz ELSE next_run_at END
        WHERE organization_id = $3 AND id = $2
        RETURNING id
     ), run AS (
       INSERT INTO schedule_runs (id, schedule_id, organization_id, scheduled_for, triggered_at, manual, job_id, status, error)
       SELECT $1, s.id, $3, $4, $5, $6, $7, $8, $9 FROM s
       ON CONFLICT (schedule_id, scheduled_for) WHERE NOT manual DO NOTHING
       RETURNING id
     )
     SELECT count(*)::int AS recorded FROM run`,
    [
      r.id,
      r.scheduleId,
      r.organizationId,
      r.scheduledFor,
      r.triggeredAt,
      r.manual,
      r.jobId,
      r.status,
      r.error,
      r.advance?.from ?? null,
      r.advance?.to ?? null,
    ],
  );
  return rows[0]!.recorded > 0;
}
