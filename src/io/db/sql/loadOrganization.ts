// loadOrganization — what an OrgActor holds, re-derived from rows: the plan, and counters counted from live
// rows (active jobs, queues, keys, enabled outgoing webhooks). Jobs created today is the larger of the journaled daily count and the jobs
// rows created today: the journal covers revived dead letters (no new row), the rows cover a count that was
// admitted but whose journal write did not land before a crash.
import { utcDay, type OrgSnapshot } from '../../../actors/org/org-actor.js';
import { isPlanTier, type LimitOverrides } from '../../../actors/org/plans.js';
import type { Store } from '../store.js';

export async function loadOrganization(store: Store, organizationId: string, now: number): Promise<OrgSnapshot | null> {
  const day = utcDay(now);
  const rows = await store.query(
    `SELECT o.plan, o.limit_overrides,
            (SELECT count(*)::int FROM jobs j
              WHERE j.organization_id = o.id AND j.status IN ('pending', 'scheduled', 'processing')) AS active_jobs,
            (SELECT count(*)::int FROM jobs j WHERE j.organization_id = o.id AND j.created_at >= $2::date) AS created_today,
            (SELECT u.jobs_created FROM usage_daily u WHERE u.organization_id = o.id AND u.day = $2::date) AS journaled_today,
            (SELECT count(*)::int FROM queues q WHERE q.organization_id = o.id) AS queues,
            (SELECT count(*)::int FROM api_keys k WHERE k.organization_id = o.id AND k.revoked_at IS NULL) AS api_keys,
            (SELECT count(*)::int FROM schedules s WHERE s.organization_id = o.id) AS schedules,
            (SELECT count(*)::int FROM workers w WHERE w.organization_id = o.id) AS workers,
            (SELECT count(*)::int FROM outgoing_webhooks w WHERE w.organization_id = o.id AND w.enabled) AS webhooks,
            -- A workflow holds its slot until it ends (creating or running).
            (SELECT count(*)::int FROM workflows w
              WHERE w.organization_id = o.id AND w.status IN ('creating', 'running')) AS workflows
       FROM organizations o WHERE o.id = $1`,
    [organizationId, day],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    plan: isPlanTier(r.plan) ? r.plan : 'free',
    overrides: (r.limit_overrides ?? {}) as LimitOverrides,
    day,
    jobsToday: Math.max(r.created_today as number, (r.journaled_today as number | null) ?? 0),
    activeJobs: r.active_jobs as number,
    counts: { queues: r.queues, api_keys: r.api_keys, workers: r.workers, schedules: r.schedules, workflows: r.workflows, webhooks: r.webhooks },
  };
}
