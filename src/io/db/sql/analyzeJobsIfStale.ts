// analyzeJobsIfStale — takes the planner's statistics of `jobs` again once as many rows changed since they were
// taken as autovacuum waits for (50 + 10 % of the table), for a database where autovacuum is off or behind. Without
// them the planner takes a queue of a million jobs for one row, and may read it whole to sort one page of it
// (a refill's 500 rows took 0.6 s instead of 1 ms, docs/BENCHMARKS.md). ANALYZE samples a bounded number of rows
// and blocks no reads or writes. A table never analyzed is analyzed once it holds a megabyte (the embedded store
// keeps no change counts). True when it ran.
import type { Store } from '../store.js';

export async function analyzeJobsIfStale(store: Store): Promise<boolean> {
  const rows = await store.query<{ changed: number | null; tuples: number; bytes: number }>(
    `SELECT s.n_mod_since_analyze::float8 AS changed, c.reltuples::float8 AS tuples, pg_relation_size(c.oid)::float8 AS bytes
       FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.relid = 'jobs'::regclass`,
  );
  const r = rows[0];
  if (!r) return false;
  const never = r.tuples < 0 && r.bytes >= 1 << 20;
  const changed = r.changed !== null && r.changed > 50 + 0.1 * Math.max(r.tuples, 0);
  if (!never && !changed) return false;
  await store.query('ANALYZE jobs');
  return true;
}
