// loadOrganization — what an OrgActor holds first, re-derived from rows: the plan, the counts of its resources
// (queues, keys, enabled outgoing webhooks, …) and the journaled jobs of today. Its job counters come after, from
// countOrganizationJobs: counting a large backlog takes seconds, and nothing but an admission needs them.
import { utcDay, type OrgSnapshot } from '../../../actors/org/org-actor.js';
import { isPlanTier, type LimitOverrides } from '../../../actors/org/plans.js';
import type { Store } from '../store.js';

export async function loadOrganization(store: Store, organizationId: string, now: number): Promise<OrgSnapshot | null> {
  const day = utcDay(now);
  const rows = await store.query(
    `SELECT o.plan, o.limit_overrides,
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
    jobsToday: (r.journaled_today as number | null) ?? 0,
    activeJobs: null,
    counts: { queues: r.queues, api_keys: r.api_keys, workers: r.workers, schedules: r.schedules, workflows: r.workflows, webhooks: r.webhooks },
  };
}
