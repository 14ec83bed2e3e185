// analyzeJobsIfGrown — takes the planner's statistics of `jobs` again when the rows inserted since they were taken
// outnumber the rows they counted (the table at least doubled), and returns the row count the statistics now hold.
// Autovacuum analyzes only after a minute or more, and not at all where it is off; meanwhile the planner took a queue
// filled seconds ago for one row and sorted all of it for every page a refill read (65,000 rows sorted for 500:
// 40–60 ms of PostgreSQL per refill, docs/BENCHMARKS.md). Growth, not churn, is what misleads it, so this runs on
// growth only; analyzeJobsIfStale keeps the churn rule at its slower pace.
import type { Store } from '../store.js';

export async function analyzeJobsIfGrown(store: Store, inserted: number): Promise<number> {
  const counted = async () =>
    Math.max(0, (await store.query<{ n: number }>(`SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'jobs'::regclass`))[0]?.n ?? 0);
  const before = await counted();
  if (inserted <= before) return before;
  await store.query('ANALYZE jobs');
  return counted();
}
