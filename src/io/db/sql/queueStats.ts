// queueStats — the time-based figures of one queue, relative to `now` (the node's clock, not the store's):
//   oldest_pending  the earliest instant a pending job became due: its scheduled_at when it was delayed or
//                   retried, else its created_at (served by the partial index jobs_live_list)
//   completed       jobs whose completed_at is in (now - window, now]
//   failed          error-history entries whose `at` is in (now - window, now]: one per failed attempt (a fail
//                   call or a lease expiry), including the one that moved a job to the dead-letter queue
// Appending an error or completing sets updated_at to the same instant, so `updated_at > since` bounds both scans
// to the jobs touched within the window: finished ones over jobs_done_updated, live ones that have failed over
// jobs_live_failed (a live job without errors has no failed attempt to count).
import type { Store } from '../store.js';
import { DONE, LIVE } from '../jobHalves.js';

export interface QueueTimes {
  oldest_pending: Date | string | null;
  completed: number;
  failed: number;
}

export async function queueStats(store: Store, organizationId: string, name: string, now: Date, windowMs: number): Promise<QueueTimes> {
  const since = new Date(now.getTime() - windowMs).toISOString();
  const rows = await store.query<QueueTimes>(
    `SELECT
       (SELECT min(coalesce(scheduled_at, created_at)) FROM jobs
         WHERE organization_id = $1 AND queue_name = $2 AND status = 'pending' AND ${LIVE}) AS oldest_pending,
       (SELECT count(*)::int FROM jobs
         WHERE organization_id = $1 AND queue_name = $2 AND updated_at > $3::timestamptz
           AND status = 'completed' AND completed_at > $3::timestamptz AND completed_at <= $4::timestamptz) AS completed,
       (SELECT count(*)::int
          FROM (SELECT errors FROM jobs WHERE organization_id = $1 AND queue_name = $2 AND updated_at > $3::timestamptz
                   AND ${LIVE} AND errors <> '[]'::jsonb
                UNION ALL
                SELECT errors FROM jobs WHERE organization_id = $1 AND queue_name = $2 AND updated_at > $3::timestamptz
                   AND ${DONE} AND errors <> '[]'::jsonb) j
          CROSS JOIN LATERAL jsonb_array_elements(j.errors) AS e
         WHERE (e ->> 'at')::timestamptz > $3::timestamptz AND (e ->> 'at')::timestamptz <= $4::timestamptz) AS failed`,
    [organizationId, name, since, now.toISOString()],
  );
  return rows[0]!;
}
