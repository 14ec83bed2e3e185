-- No planner statistics for the columns no statement filters, joins or sorts on (issue 10): a job's payload and
-- result, its progress, its last error and its completion callback are only ever read back whole, yet ANALYZE
-- detoasted, compared and sorted their values for histograms: 10-38 % of its time (docs/BENCHMARKS.md). A node
-- analyzes `jobs` each time its own inserts double the table (analyzeJobsIfGrown), some 150 ms of PostgreSQL's CPU
-- in the first 20,000 jobs of a fresh table. Autovacuum's analyses skip them too.
ALTER TABLE jobs
  ALTER COLUMN payload SET STATISTICS 0,
  ALTER COLUMN result SET STATISTICS 0,
  ALTER COLUMN progress SET STATISTICS 0,
  ALTER COLUMN last_error SET STATISTICS 0,
  ALTER COLUMN completion_webhook SET STATISTICS 0,
  ALTER COLUMN completion_webhook_secret SET STATISTICS 0;
