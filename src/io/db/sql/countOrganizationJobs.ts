// countOrganizationJobs — the job counters of an OrgActor, counted from rows after it serves (loadOrganization):
// its live jobs (pending, scheduled, processing) and the jobs rows created on `day`. Jobs created today is then the
// larger of this and the journaled count: the journal covers revived dead letters (no new row), the rows cover a
// count that was admitted but whose journal write did not land before a crash. Each count reads one half of the
// table's indexes (../jobHalves.ts).
import type { Store } from '../store.js';
import { DONE, LIVE } from '../jobHalves.js';

export async function countOrganizationJobs(store: Store, organizationId: string, day: string): Promise<{ activeJobs: number; createdToday: number }> {
  const rows = await store.query(
    `SELECT (SELECT count(*)::int FROM jobs WHERE organization_id = $1 AND ${LIVE}) AS active_jobs,
            (SELECT count(*)::int FROM jobs WHERE organization_id = $1 AND ${LIVE} AND created_at >= $2::date)
          + (SELECT count(*)::int FROM jobs WHERE organization_id = $1 AND ${DONE} AND created_at >= $2::date) AS created_today`,
    [organizationId, day],
  );
  return { activeJobs: rows[0]!.active_jobs as number, createdToday: rows[0]!.created_today as number };
}
