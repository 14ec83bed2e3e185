// readUsageDay — one organization's stored usage row for a UTC day (zeros when there is none yet).
import type { Store } from '../store.js';

export async function readUsageDay(
  store: Store,
  organizationId: string,
  day: string,
): Promise<{ jobs_created: number; api_calls: number; rate_limited: number }> {
  const rows = await store.query(
    `SELECT jobs_created, api_calls::int AS api_calls, rate_limited::int AS rate_limited
       FROM usage_daily WHERE organization_id = $1 AND day = $2::date`,
    [organizationId, day],
  );
  const r = rows[0];
  return { jobs_created: r?.jobs_created ?? 0, api_calls: r?.api_calls ?? 0, rate_limited: r?.rate_limited ?? 0 };
}
