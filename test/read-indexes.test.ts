// The read side over the split indexes (migration 0027, src/io/db/jobHalves.ts): an enqueue or a claim enters
// only the live half's indexes, a finished job only the finished half's, so every read spanning both is a union of
// parts. These tests hold those reads to what they answered as single scans of the whole table (the reference
// queries below are those definitions), page a list across its parts, and check on a table where another
// organization holds tens of thousands of live and finished jobs that none of them reads the table whole.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { JobStatus } from '../src/actors/records.js';
import { clusterJobGauges, type StateCounts } from '../src/io/db/sql/clusterJobGauges.js';
import { countOrganizationJobs } from '../src/io/db/sql/countOrganizationJobs.js';
import { jobStats } from '../src/io/db/sql/jobStats.js';
import { jobThroughput } from '../src/io/db/sql/jobThroughput.js';
import { listJobs, type JobFilter, type JobKey } from '../src/io/db/sql/listJobs.js';
import { liveQueues } from '../src/io/db/sql/liveQueues.js';
import { loadQueue } from '../src/io/db/sql/loadQueue.js';
import { purgeDeadLetters } from '../src/io/db/sql/purgeDeadLetters.js';
import { queueCounts } from '../src/io/db/sql/queueCounts.js';
import { queueJobGauges } from '../src/io/db/sql/queueJobGauges.js';
import { queueStats } from '../src/io/db/sql/queueStats.js';
import { sweepRetention } from '../src/io/db/sql/sweepRetention.js';
import { terminalJobs } from '../src/io/db/sql/terminalJobs.js';
import type { Row, Store } from '../src/io/db/store.js';
import { openStore } from './fixtures/direct-host.js';
import { freshStore, type StoreLocation } from './helpers.js';

const ORG = '00000000-0000-4000-8000-000000000071';
const BIG = '00000000-0000-4000-8000-000000000072';
const NOW = Date.parse('2026-11-27T12:00:00Z');
const MIN = 60_000;
const at = (ms: number): string => new Date(ms).toISOString();

let location: StoreLocation;
let store: Store;

interface Seed {
  queue: string;
  status: JobStatus;
  created: number;
  blocked?: boolean;
  scheduled?: number;
  started?: number;
  completed?: number;
  errors?: number[];
  tags?: Record<string, string>;
}

/** The small organization's jobs: every status in two queues, created in ties and apart, failed in and out of the window. */
function seeds(): Seed[] {
  const out: Seed[] = [];
  for (let i = 0; i < 30; i++) out.push({ queue: 'a', status: 'pending', created: NOW - (i % 10) * MIN, tags: i % 3 === 0 ? { env: 'prod' } : undefined });
  for (let i = 0; i < 3; i++) out.push({ queue: 'a', status: 'pending', created: NOW - 5 * MIN, blocked: true });
  for (let i = 0; i < 5; i++) out.push({ queue: 'a', status: 'scheduled', created: NOW - 90 * MIN, scheduled: NOW + i * MIN, errors: i < 2 ? [NOW - 20 * MIN] : undefined });
  for (let i = 0; i < 4; i++) out.push({ queue: 'a', status: 'processing', created: NOW - 40 * MIN, started: NOW - (i + 1) * MIN, errors: i === 0 ? [NOW - 30 * MIN] : undefined });
  out.push({ queue: 'a', status: 'processing', created: NOW - 300 * MIN, started: NOW - 200 * MIN });
  for (let i = 0; i < 20; i++) {
    const completed = i < 15 ? NOW - i * MIN : NOW - 120 * MIN;
    out.push({ queue: 'a', status: 'completed', created: completed - 3 * MIN, started: completed - MIN, completed, tags: i % 4 === 0 ? { env: 'prod' } : undefined });
  }
  for (let i = 0; i < 6; i++) {
    out.push({ queue: 'a', status: 'deadletter', created: NOW - 50 * MIN, started: NOW - 10 * MIN, completed: NOW - 9 * MIN, errors: [NOW - 30 * MIN, NOW - 9 * MIN] });
  }
  for (let i = 0; i < 3; i++) out.push({ queue: 'a', status: 'cancelled', created: NOW - (200 + i) * MIN, completed: NOW - 150 * MIN });
  for (let i = 0; i < 10; i++) out.push({ queue: 'b', status: 'pending', created: NOW - i * 7 * MIN });
  for (let i = 0; i < 10; i++) out.push({ queue: 'b', status: 'completed', created: NOW - 400 * MIN, started: NOW - 3 * MIN, completed: NOW - 2 * MIN });
  return out;
}

async function insert(org: string, rows: Seed[]): Promise<void> {
  const cols = rows.map((r) => [
    randomUUID(),
    r.queue,
    r.status,
    at(r.created),
    r.scheduled === undefined ? null : at(r.scheduled),
    r.started === undefined ? null : at(r.started),
    r.completed === undefined ? null : at(r.completed),
    // updated_at: the job's last change.
    at(Math.max(r.created, r.started ?? 0, r.completed ?? 0, ...(r.errors ?? []))),
    JSON.stringify((r.errors ?? []).map((e, k) => ({ attempt: k + 1, error: 'boom', at: at(e) }))),
    JSON.stringify(r.tags ?? {}),
    !r.blocked,
  ]);
  const col = (k: number): unknown[] => cols.map((c) => c[k]);
  await store.query(
    `INSERT INTO jobs (id, organization_id, queue_name, status, payload, max_retries, timeout_seconds, created_at, scheduled_at,
                       started_at, completed_at, updated_at, errors, tags, dependencies_met)
     SELECT id, $1, q, s, '{}', 3, 60, c, sch, st, co, u, e, t, d
       FROM unnest($2::uuid[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[],
                   $9::timestamptz[], $10::jsonb[], $11::jsonb[], $12::bool[]) AS x(id, q, s, c, sch, st, co, u, e, t, d)`,
    [org, col(0), col(1), col(2), col(3), col(4), col(5), col(6), col(7), col(8), col(9), col(10)],
  );
}

before(async () => {
  location = await freshStore();
  store = await openStore(location);
  for (const [id, slug] of [[ORG, 'small'], [BIG, 'big']] as const) {
    await store.query(
      `INSERT INTO organizations (id, name, slug, plan, limit_overrides, created_at, updated_at) VALUES ($1, $2, $2, 'enterprise', '{}', now(), now())`,
      [id, slug],
    );
  }
  for (const [org, name] of [[ORG, 'a'], [ORG, 'b'], [ORG, 'c'], [BIG, 'big'], [BIG, 'other']] as const) {
    await store.query(`INSERT INTO queues (organization_id, name, created_at, updated_at) VALUES ($1, $2, now(), now())`, [org, name]);
  }
  await insert(ORG, seeds());
  // Another tenant's bulk: a backlog of live jobs and many more finished ones, all recent.
  await store.query(
    `INSERT INTO jobs (id, organization_id, queue_name, status, payload, max_retries, timeout_seconds, created_at, updated_at,
                       started_at, completed_at, errors)
     SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, $1, 'big', s, '{}', 3, 60,
            $2::timestamptz - i * interval '1 ms', $2::timestamptz - i * interval '1 ms',
            CASE WHEN s = 'pending' THEN NULL ELSE $2::timestamptz - i * interval '1 ms' END,
            CASE WHEN s IN ('completed', 'deadletter') THEN $2::timestamptz - i * interval '1 ms' END,
            CASE WHEN s = 'deadletter' THEN jsonb_build_array(jsonb_build_object('attempt', 1, 'error', 'x', 'at', $2::timestamptz)) ELSE '[]' END
       FROM generate_series(1, 60000) AS i,
            LATERAL (SELECT CASE WHEN i % 3 = 0 THEN 'pending' WHEN i % 100 = 1 THEN 'deadletter' ELSE 'completed' END AS s) x`,
    [BIG, at(NOW)],
  );
  await store.query('ANALYZE jobs');
  await store.query('ANALYZE queues');
});
after(async () => {
  await store.close();
  await location.dispose();
});

/** The plan of every statement `run` sends, which is not executed. */
async function plans(run: (s: Store) => Promise<unknown>): Promise<string> {
  const out: string[] = [];
  const explaining: Store = {
    query: async <T extends Row>(sql: string, params?: readonly unknown[]): Promise<T[]> => {
      const rows = await store.query(`EXPLAIN ${sql}`, params);
      out.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
      return [];
    },
    exec: () => Promise.reject(new Error('not here')),
    close: async () => {},
  };
  // An empty answer may trip the caller's reading of it; only the plans are wanted.
  await run(explaining).catch(() => {});
  assert.ok(out.length > 0, 'a statement was planned');
  return out.join('\n---\n');
}

const NO_FILTER: JobFilter = { queueName: null, status: null, tagKeys: [], tagValues: {}, createdAfter: null, createdBefore: null };

/** Every page of a list, 7 rows at a time, following the cursor as the route does. */
async function pageAll(filter: JobFilter): Promise<string[]> {
  const ids: string[] = [];
  let after: JobKey | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const rows = await listJobs(store, ORG, filter, after, 7);
    const page = rows.slice(0, 7);
    ids.push(...page.map((r) => r.id as string));
    if (rows.length <= 7) return ids;
    const last = page[page.length - 1]!;
    after = [last.cursor_at as string, last.id as string];
  }
  throw new Error('did not end');
}

describe('reads over the live and finished halves answer what a scan of the whole table does', () => {
  const cases: Array<[string, Partial<JobFilter>, string, unknown[]]> = [
    ['no filter', {}, 'true', []],
    ['one queue', { queueName: 'a' }, `queue_name = 'a'`, []],
    ['a live status', { status: 'pending' }, `status = 'pending'`, []],
    ['a finished status', { status: 'completed' }, `status = 'completed'`, []],
    ['queue and status', { queueName: 'a', status: 'deadletter' }, `queue_name = 'a' AND status = 'deadletter'`, []],
    ['a tag', { tagValues: { env: 'prod' } }, `tags @> '{"env":"prod"}'`, []],
    ['created after', { createdAfter: new Date(NOW - 8 * MIN) }, 'created_at > $2', [at(NOW - 8 * MIN)]],
  ];
  for (const [name, filter, where, params] of cases) {
    test(`a list, page by page: ${name}`, async () => {
      const expected = (
        await store.query(`SELECT id FROM jobs WHERE organization_id = $1 AND ${where} ORDER BY created_at DESC, id DESC`, [ORG, ...params])
      ).map((r) => r.id as string);
      assert.ok(expected.length > 0);
      assert.deepEqual(await pageAll({ ...NO_FILTER, ...filter }), expected);
    });
  }

  test('counts per status, of the organization, of a queue, of a page of queues', async () => {
    const reference = async (where: string): Promise<Record<string, number>> => {
      const out: Record<string, number> = { pending: 0, scheduled: 0, processing: 0, completed: 0, deadletter: 0, cancelled: 0 };
      for (const r of await store.query(`SELECT status, count(*)::int AS n FROM jobs WHERE organization_id = $1 AND ${where} GROUP BY status`, [ORG])) {
        out[r.status as string] = r.n as number;
      }
      return out;
    };
    assert.deepEqual(await jobStats(store, ORG, null), await reference('true'));
    assert.deepEqual(await jobStats(store, ORG, 'a'), await reference(`queue_name = 'a'`));
    const page = await queueCounts(store, ORG, ['a', 'b', 'c']);
    assert.deepEqual(page.get('b'), await reference(`queue_name = 'b'`));
    assert.deepEqual(page.get('c'), await reference(`queue_name = 'c'`));
    const day = new Date(NOW).toISOString().slice(0, 10);
    const [ref] = await store.query(
      `SELECT count(*) FILTER (WHERE status IN ('pending', 'scheduled', 'processing'))::int AS active,
              count(*) FILTER (WHERE created_at >= $2::date)::int AS today FROM jobs WHERE organization_id = $1`,
      [ORG, day],
    );
    assert.deepEqual(await countOrganizationJobs(store, ORG, day), { activeJobs: ref!.active, createdToday: ref!.today });
  });

  test('the gauges: live states and dead letters per queue and for the cluster', async () => {
    const STATE = `CASE WHEN status = 'pending' AND NOT dependencies_met THEN 'blocked' ELSE status::text END`;
    const reference = async (where: string, params: unknown[]): Promise<StateCounts> => {
      const out: StateCounts = { counts: { pending: 0, blocked: 0, scheduled: 0, processing: 0, deadletter: 0 }, oldestDue: null };
      const rows = await store.query(
        `SELECT ${STATE} AS state, count(*)::int AS n,
                min(COALESCE(scheduled_at, created_at)) FILTER (WHERE status = 'pending' AND dependencies_met) AS oldest
           FROM jobs WHERE ${where} AND status IN ('pending', 'scheduled', 'processing', 'deadletter') GROUP BY 1`,
        params,
      );
      for (const r of rows) {
        out.counts[r.state as keyof StateCounts['counts']] += r.n as number;
        const due = r.oldest === null ? null : new Date(r.oldest as string).getTime();
        if (due !== null && (out.oldestDue === null || due < out.oldestDue)) out.oldestDue = due;
      }
      return out;
    };
    const gauges = await queueJobGauges(store, ORG);
    assert.deepEqual({ ...gauges.get('a')!, paused: undefined }, { ...(await reference(`organization_id = $1 AND queue_name = 'a'`, [ORG])), paused: undefined });
    assert.deepEqual(gauges.get('c')!.counts, { pending: 0, blocked: 0, scheduled: 0, processing: 0, deadletter: 0 });
    assert.deepEqual(await clusterJobGauges(store), await reference('true', []));
  });

  test('the windows of queue stats and of the dashboard: completions, dead letters, failed attempts, waits', async () => {
    const now = new Date(NOW);
    const since = new Date(NOW - 60 * MIN);
    const [q] = await store.query(
      `SELECT
         (SELECT min(coalesce(scheduled_at, created_at)) FROM jobs
           WHERE organization_id = $1 AND queue_name = $2 AND status = 'pending') AS oldest_pending,
         (SELECT count(*)::int FROM jobs
           WHERE organization_id = $1 AND queue_name = $2 AND updated_at > $3::timestamptz
             AND status = 'completed' AND completed_at > $3::timestamptz AND completed_at <= $4::timestamptz) AS completed,
         (SELECT count(*)::int FROM jobs j CROSS JOIN LATERAL jsonb_array_elements(j.errors) AS e
           WHERE j.organization_id = $1 AND j.queue_name = $2 AND j.updated_at > $3::timestamptz
             AND (e ->> 'at')::timestamptz > $3::timestamptz AND (e ->> 'at')::timestamptz <= $4::timestamptz) AS failed`,
      [ORG, 'a', since.toISOString(), now.toISOString()],
    );
    const stats = await queueStats(store, ORG, 'a', now, 60 * MIN);
    assert.deepEqual({ ...stats, oldest_pending: new Date(stats.oldest_pending!).getTime() }, { ...q, oldest_pending: new Date(q!.oldest_pending).getTime() });
    assert.ok((q!.failed as number) > 0 && (q!.completed as number) > 0);

    const [t] = await store.query(
      `SELECT
         count(*) FILTER (WHERE j.status = 'completed' AND j.completed_at > $2 AND j.completed_at <= $3)::int AS completed,
         count(*) FILTER (WHERE j.status = 'deadletter' AND j.completed_at > $2 AND j.completed_at <= $3)::int AS deadlettered,
         coalesce(sum((SELECT count(*) FROM jsonb_array_elements(j.errors) AS e
                        WHERE (e ->> 'at')::timestamptz > $2 AND (e ->> 'at')::timestamptz <= $3)), 0)::int AS failed_attempts,
         avg(extract(epoch FROM j.started_at - coalesce(j.scheduled_at, j.created_at)))
           FILTER (WHERE j.started_at > $2 AND j.started_at <= $3 AND j.status NOT IN ('pending', 'scheduled')
                     AND j.started_at >= coalesce(j.scheduled_at, j.created_at))::float8 AS avg_wait,
         avg(extract(epoch FROM j.completed_at - j.started_at))
           FILTER (WHERE j.status = 'completed' AND j.completed_at > $2 AND j.completed_at <= $3 AND j.started_at IS NOT NULL)::float8 AS avg_processing
       FROM queues q JOIN jobs j ON j.organization_id = q.organization_id AND j.queue_name = q.name AND j.updated_at > $2
       WHERE q.organization_id = $1`,
      [ORG, since, now],
    );
    const got = await jobThroughput(store, ORG, since, now);
    assert.deepEqual({ ...got, avg_wait: got.avg_wait?.toFixed(6), avg_processing: got.avg_processing?.toFixed(6) }, {
      ...t,
      avg_wait: (t!.avg_wait as number).toFixed(6),
      avg_processing: (t!.avg_processing as number).toFixed(6),
    });
    assert.ok((t!.failed_attempts as number) > 0 && (t!.deadlettered as number) > 0);
  });

  test('dead letters and cancelled jobs to revive, oldest first', async () => {
    const got = await terminalJobs(store, ORG, { queue: 'a', statuses: ['deadletter', 'cancelled'] });
    const ref = await store.query(
      `SELECT id FROM jobs WHERE organization_id = $1 AND queue_name = 'a' AND status IN ('deadletter', 'cancelled') ORDER BY created_at, id`,
      [ORG],
    );
    assert.deepEqual(got.map((r) => r.id), ref.map((r) => r.id));
  });
});

describe('no read of one organization scans the table another fills', () => {
  const reads: Array<[string, (s: Store) => Promise<unknown>, RegExp[]]> = [
    ['list, no filter', (s) => listJobs(s, ORG, NO_FILTER, null, 50), [/jobs_live_org/, /jobs_done_status/]],
    ['list of a queue', (s) => listJobs(s, ORG, { ...NO_FILTER, queueName: 'a' }, null, 50), [/jobs_live_list/, /jobs_done_queue/]],
    ['list of a live status', (s) => listJobs(s, ORG, { ...NO_FILTER, status: 'pending' }, null, 50), []],
    ['list of dead letters', (s) => listJobs(s, ORG, { ...NO_FILTER, status: 'deadletter' }, null, 50), [/jobs_done/]],
    ['counts of the organization', (s) => jobStats(s, ORG, null), []],
    ['counts of a queue', (s) => jobStats(s, ORG, 'a'), []],
    ['counts of a page of queues', (s) => queueCounts(s, ORG, ['a', 'b', 'c']), []],
    ['the organization’s counters', (s) => countOrganizationJobs(s, ORG, '2026-11-27'), []],
    ['queue gauges', (s) => queueJobGauges(s, ORG), []],
    ['queue stats', (s) => queueStats(s, ORG, 'a', new Date(NOW), 60 * MIN), [/jobs_done_updated/, /jobs_live_failed/]],
    ['dashboard throughput', (s) => jobThroughput(s, ORG, new Date(NOW - 60 * MIN), new Date(NOW)), [/jobs_done_updated/, /jobs_live_failed/]],
    ['revivable jobs', (s) => terminalJobs(s, ORG, { queue: 'a', statuses: ['deadletter'] }), []],
    ['purge of dead letters', (s) => purgeDeadLetters(s, ORG, { ids: null, queue: 'a', olderThan: null }), []],
    ['retention sweep', (s) => sweepRetention(s, ORG, new Date(NOW), 500), [/jobs_done_/]],
    ['queues with live jobs', (s) => liveQueues(s), [/jobs_live_list/]],
    // The rebuild of a queue actor reads the jobs it holds over jobs_held, which 0027 keyed on status too.
    ['a queue actor’s rebuild', (s) => loadQueue(s, ORG, 'a', 500), [/jobs_held/]],
  ];
  for (const [name, run, uses] of reads) {
    test(name, async () => {
      const plan = await plans(run);
      assert.doesNotMatch(plan, /Seq Scan on jobs/, plan);
      for (const index of uses) assert.match(plan, index, plan);
    });
  }
});
