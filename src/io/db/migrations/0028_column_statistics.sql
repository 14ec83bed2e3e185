-- No planner statistics for the columns no statement filters, joins or sorts on (issue 10): a job's payload and
-- result, its progress, its last error and its completion callback are only ever read back whole. ANALYZE spent
-- most of its time on them (jsonb values detoasted, compared and sorted for histograms), and a node analyzes `jobs`
-- each time its own inserts double the table (analyzeJobsIfGrown): some 150 ms of PostgreSQL's CPU in the first
-- 20,000 jobs of a fresh table, beside the inserts themselves (docs/BENCHMARKS.md). Autovacuum's analyses skip
-- them too.
ALTER TABLE jobs
  ALTER COLUMN payload SET STATISTICS 0,
  ALTER COLUMN result SET STATISTICS 0,
  ALTER COLUMN progress SET STATISTICS 0,
  ALTER COLUMN last_error SET STATISTICS 0,
  ALTER COLUMN completion_webhook SET STATISTICS 0,
  ALTER COLUMN completion_webhook_secret SET STATISTICS 0;
