// The planner's statistics of `jobs` are taken again when autovacuum has not (it may be off, or behind a bulk
// load): without them a queue of a million jobs is planned as one row, and a refill's page of 500 rows read the
// queue whole to sort it (0.6 s instead of 1 ms). At boot and after each retention sweep, analyzeJobsIfStale
// analyzes a table that was never analyzed or changed by more than autovacuum's threshold, and leaves it alone after.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { analyzeJobsIfStale } from '../src/io/db/sql/analyzeJobsIfStale.js';
import type { Store } from '../src/io/db/store.js';
import { freshStore, sleep, startTestNode, type StoreLocation } from './helpers.js';
import { openStore } from './fixtures/direct-host.js';

const ORG = '00000000-0000-4000-8000-000000000006';
let location: StoreLocation;
let store: Store;

before(async () => {
  location = await freshStore();
  store = await openStore(location);
  await store.query(
    `INSERT INTO organizations (id, name, slug, plan, limit_overrides, created_at, updated_at) VALUES ($1, 'Stats', 'stats', 'enterprise', '{}', now(), now())`,
    [ORG],
  );
});
after(async () => {
  await store.close();
  await location.dispose();
});

test('a jobs table filled since its statistics were taken is analyzed once, then left alone', async () => {
  // The load's change counts are flushed with it, as they are long before a node boots on it: a backend otherwise
  // reports them up to a second later, after the ANALYZE below, and they would count as changes since it.
  await store.query(
    `WITH load AS (
       INSERT INTO jobs (id, organization_id, queue_name, status, payload, max_retries, timeout_seconds, created_at, updated_at)
       SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, $1, 'q', 'pending', '{}', 3, 60, now(), now()
         FROM generate_series(1, 20000) AS i)
     SELECT pg_stat_force_next_flush()`,
    [ORG],
  );
  assert.equal(await analyzeJobsIfStale(store), true, 'analyzed');
  const [stats] = await store.query<{ tuples: number }>(`SELECT reltuples::float8 AS tuples FROM pg_class WHERE oid = 'jobs'::regclass`);
  assert.ok(stats!.tuples > 10_000, `the planner now counts the rows: ${stats!.tuples}`);
  assert.equal(await analyzeJobsIfStale(store), false, 'nothing changed since');

  // What the planner uses is counted; the columns no statement filters or sorts on are not (migration 0028): an
  // analysis no longer spends its time on payloads and results.
  const counted = new Set(
    (await store.query<{ attname: string }>(`SELECT attname FROM pg_stats WHERE schemaname = 'public' AND tablename = 'jobs'`)).map((r) => r.attname),
  );
  for (const column of ['organization_id', 'queue_name', 'status', 'priority', 'created_at']) assert.ok(counted.has(column), `statistics of ${column}`);
  for (const column of ['payload', 'result', 'progress', 'last_error', 'completion_webhook', 'completion_webhook_secret']) {
    assert.ok(!counted.has(column), `no statistics of ${column}`);
  }
});

// The node itself analyzes a table its own inserts grew past what the statistics counted, within seconds and
// whether autovacuum runs or not: with statistics that count none of a queue's rows, a refill of a queue filled moments
// ago sorted all of it for each page (jobs_live, then a sort of every pending row) instead of reading jobs_ready.
test('a node that has just doubled the jobs table analyzes it, and the planner then sees the queue’s rows', async () => {
  const n = await startTestNode({ env: { ACTOR_THREADS: '0' } });
  try {
    const before = await n.node.store.query<{ n: number }>(`SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'jobs'::regclass`);
    assert.ok(before[0]!.n <= 0, `never analyzed yet: ${before[0]!.n}`);
    for (let i = 0; i < 15; i++) {
      const r = await n.api.post('/api/v1/jobs/bulk', { queue_name: 'grown', jobs: Array.from({ length: 100 }, (_, k) => ({ payload: { n: i * 100 + k } })) });
      assert.equal(r.body.success_count, 100, JSON.stringify(r.body).slice(0, 300));
    }
    let tuples = 0;
    for (let t = 0; t < 100 && tuples < 1_000; t++) {
      await sleep(50);
      tuples = (await n.node.store.query<{ n: number }>(`SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'jobs'::regclass`))[0]!.n;
    }
    assert.ok(tuples >= 1_000, `the statistics count the inserted rows: ${tuples}`);
    // The planner now takes the queue for about what it holds, not for one row (which made it sort a queue's
    // whole backlog to read a page of it: at 1,500 rows a sort is still its right choice, so the estimate is checked).
    const plan = (await n.node.store.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM jobs WHERE organization_id = $1 AND queue_name = 'grown' AND status = 'pending' AND dependencies_met`,
      [(await n.node.store.query<{ o: string }>(`SELECT organization_id AS o FROM jobs LIMIT 1`))[0]!.o],
    ))[0]!['QUERY PLAN'];
    const estimate = Number(/rows=(\d+)/.exec(plan)?.[1]);
    assert.ok(estimate >= 1_000, plan);
  } finally {
    await n.stop();
  }
});
