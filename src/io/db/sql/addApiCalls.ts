// addApiCalls — adds counted API calls to each organization's day, creating the day's row when needed.
import type { Store } from '../store.js';

export async function addApiCalls(
  store: Store,
  batch: Array<{ organization_id: string; day: string; calls: number; limited: number }>,
): Promise<void> {
  await store.query(
    `INSERT INTO usage_daily (organization_id, day, api_calls, rate_limited)
     SELECT * FROM unnest($1::uuid[], $2::date[], $3::bigint[], $4::bigint[])
     ON CONFLICT (organization_id, day) DO UPDATE
       SET api_calls = usage_daily.api_calls + EXCLUDED.api_calls,
           rate_limited = usage_daily.rate_limited + EXCLUDED.rate_limited`,
    [batch.map((b) => b.organization_id), batch.map((b) => b.day), batch.map((b) => b.calls), batch.map((b) => b.limited)],
  );
}
