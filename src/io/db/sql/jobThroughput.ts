// jobThroughput — one organization's job outcomes and times over a window (the dashboard's last 24 hours):
//   completed         jobs whose completed_at is in (since, now]
//   deadlettered      jobs dead-lettered in it (completed_at is also the instant a job ends in the DLQ)
//   failed_attempts   error-history entries whose `at` is in it (fail calls and lease expiries)
//   avg_wait          seconds from due (scheduled_at, else created_at) to started_at, of the jobs claimed in it
//                     (their latest claim; a job waiting again — a retry, an expired lease — is left out: its
//                     scheduled_at or status no longer describes the claim started_at records)
//   avg_processing    seconds from started_at to completed_at, of the jobs completed in it
// Every one of these moves updated_at to its instant, so `updated_at > since` bounds the scan to the jobs
// touched in the window, per queue of the organization (a job whose queue row was deleted meanwhile is not
// counted), in three disjoint parts (../jobHalves.ts): finished jobs (jobs_done_updated), live jobs that have failed
// (jobs_live_failed), and running jobs that have not, claimed in the window (jobs_held) — a live job without errors
// counts only if claimed. Averages are null when nothing was claimed or completed.
import type { Store } from '../store.js';
import { DONE, LIVE } from '../jobHalves.js';

export interface Throughput {
  completed: number;
  deadlettered: number;
  failed_attempts: number;
  avg_wait: number | null;
  avg_processing: number | null;
}

export async function jobThroughput(store: Store, organizationId: string, since: Date, now: Date): Promise<Throughput> {
  const rows = await store.query<Throughput>(
    `SELECT
       count(*) FILTER (WHERE j.status = 'completed' AND j.completed_at > $2 AND j.completed_at <= $3)::int AS completed,
       count(*) FILTER (WHERE j.status = 'deadletter' AND j.completed_at > $2 AND j.completed_at <= $3)::int AS deadlettered,
       coalesce(sum((SELECT count(*) FROM jsonb_array_elements(j.errors) AS e
                      WHERE (e ->> 'at')::timestamptz > $2 AND (e ->> 'at')::timestamptz <= $3)), 0)::int AS failed_attempts,
       avg(extract(epoch FROM j.started_at - coalesce(j.scheduled_at, j.created_at)))
         FILTER (WHERE j.started_at > $2 AND j.started_at <= $3 AND j.status NOT IN ('pending', 'scheduled')
                   AND j.started_at >= coalesce(j.scheduled_at, j.created_at))::float8 AS avg_wait,
       avg(extract(epoch FROM j.completed_at - j.started_at))
         FILTER (WHERE j.status = 'completed' AND j.completed_at > $2 AND j.completed_at <= $3 AND j.started_at IS NOT NULL)::float8 AS avg_processing
     FROM queues q
     CROSS JOIN LATERAL (
       SELECT status, errors, created_at, scheduled_at, started_at, completed_at FROM jobs
        WHERE organization_id = q.organization_id AND queue_name = q.name AND updated_at > $2 AND ${DONE}
       UNION ALL
       SELECT status, errors, created_at, scheduled_at, started_at, completed_at FROM jobs
        WHERE organization_id = q.organization_id AND queue_name = q.name AND updated_at > $2 AND ${LIVE}
          AND errors <> '[]'::jsonb
       UNION ALL
       SELECT status, errors, created_at, scheduled_at, started_at, completed_at FROM jobs
        WHERE organization_id = q.organization_id AND queue_name = q.name AND status = 'processing' AND started_at > $2
          AND errors = '[]'::jsonb) j
     WHERE q.organization_id = $1`,
    [organizationId, since, now],
  );
  return rows[0]!;
}
