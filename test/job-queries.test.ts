// The read side of jobs over real HTTP, on the store chosen by SLUICE_TEST_STORE: the list and its cursor
// (stable while jobs are inserted), every filter, limits, the Link / X-Next-Cursor headers, batch status,
// stats, the DLQ list, the 422s, permissions, and isolation between organizations. A ManualClock makes
// created_at exact, and ties on created_at common, so the id half of the keyset is exercised too.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { Api, startTestNode, type ApiResponse, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey, nextLink, orgOf } from './http-assert.js';

const JOBS = '/api/v1/jobs';
const T0 = Date.UTC(2030, 0, 1);
const STATUSES = ['pending', 'scheduled', 'processing', 'completed', 'deadletter', 'cancelled'];

let n: TestNode;
let api: Api;
let clock: ManualClock;

before(async () => {
  clock = new ManualClock(T0);
  n = await startTestNode({ clock });
  api = n.api;
});
after(() => n.stop());

/** Every page of a list, following Link; checks the headers of each page on the way. */
async function walk(a: Api, first: string, limit: number): Promise<{ items: any[]; pages: ApiResponse[] }> {
  const items: any[] = [];
  const pages: ApiResponse[] = [];
  let path: string | null = first;
  while (path !== null) {
    const r: ApiResponse = await a.get(path);
    assert.equal(r.status, 200, `${path}: ${r.status} ${JSON.stringify(r.body)}`);
    assert.ok(Array.isArray(r.body));
    assert.ok(r.body.length <= limit);
    pages.push(r);
    items.push(...r.body);
    const next = nextLink(r);
    const cursor = r.headers.get('x-next-cursor');
    // Both headers or neither; the Link carries the same cursor.
    assert.equal(next === null, cursor === null, `Link ${next} vs X-Next-Cursor ${cursor}`);
    if (next !== null) {
      assert.equal(r.body.length, limit, 'only a full page can have a next one');
      assert.equal(new URL(next, 'http://x').searchParams.get('cursor'), cursor);
    }
    path = next;
  }
  return { items, pages };
}

/** (created_at, id) strictly descending. */
function assertNewestFirst(items: Array<{ created_at: string; id: string }>): void {
  for (let i = 1; i < items.length; i++) {
    const a = items[i - 1]!;
    const b = items[i]!;
    assert.ok(a.created_at > b.created_at || (a.created_at === b.created_at && a.id > b.id), `out of order at ${i}: ${a.id} then ${b.id}`);
  }
}

async function claimOne(queue: string, a: Api = api): Promise<any> {
  const [job] = await a.claim(queue);
  assert.ok(job, `nothing to claim in ${queue}`);
  return job;
}

/** One job per status in `queue`, with the given tags; returns their ids by status. */
async function oneOfEach(queue: string, a: Api = api, tags: Record<string, string> = {}): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  const make = async () => (await a.enqueue({ queue_name: queue, tags })).id as string;
  // Claimed in order: FIFO within a priority.
  ids.completed = await make();
  ids.deadletter = await make();
  ids.processing = await make();
  ids.cancelled = await make();
  ids.pending = await make();
  ids.scheduled = (await a.enqueue({ queue_name: queue, tags, scheduled_at: new Date(clock.now() + 86_400_000).toISOString() })).id;
  const c1 = await claimOne(queue, a);
  assert.equal((await a.post(`${JOBS}/${c1.id}/complete`, { worker_id: 'w1', lease_id: c1.lease_id })).status, 200);
  const c2 = await claimOne(queue, a);
  const f = await a.post(`${JOBS}/${c2.id}/fail`, { worker_id: 'w1', lease_id: c2.lease_id, error: 'boom', retryable: false });
  assert.equal(f.body.status, 'deadletter');
  await claimOne(queue, a);
  assert.equal((await a.delete(`${JOBS}/${ids.cancelled}`)).status, 200);
  return ids;
}

describe('GET /api/v1/jobs', () => {
  test('a cursor walk over 1,000 jobs while others are inserted: no duplicates, no gaps, newest first', async () => {
    const queue = 'walk';
    const initial = new Set<string>();
    // Ten per millisecond: many rows share created_at, so pages must break ties on the id.
    for (let i = 0; i < 1000; i += 50) {
      const batch = await Promise.all(Array.from({ length: 50 }, (_, k) => api.enqueue({ queue_name: queue, payload: { i: i + k } })));
      for (const j of batch) initial.add(j.id);
      if (i % 100 === 50) await clock.advance(1);
    }
    assert.equal(initial.size, 1000);

    let walking = true;
    const insertedDuring = new Set<string>();
    const inserter = (async () => {
      while (walking) {
        const batch = await Promise.all(Array.from({ length: 5 }, () => api.enqueue({ queue_name: queue, payload: { late: true } })));
        for (const j of batch) insertedDuring.add(j.id);
        await clock.advance(1);
      }
    })();
    let items: any[];
    let pages: ApiResponse[];
    try {
      ({ items, pages } = await walk(api, `${JOBS}?queue_name=${queue}&limit=37`, 37));
    } finally {
      walking = false;
      await inserter;
    }
    assert.ok(insertedDuring.size > 0, 'jobs were inserted during the walk');
    const ids = items.map((j) => j.id as string);
    assert.equal(new Set(ids).size, ids.length, 'no job appears twice');
    for (const id of initial) assert.ok(ids.includes(id), `job ${id} that existed at the start was skipped`);
    for (const id of ids) assert.ok(initial.has(id) || insertedDuring.has(id));
    assertNewestFirst(items);
    assert.ok(pages.length >= Math.ceil(1000 / 37));
    const last = pages[pages.length - 1]!;
    assert.equal(last.headers.get('link'), null);
    assert.equal(last.headers.get('x-next-cursor'), null);
  });

  test('the default limit is 20, the maximum 100; the body holds full job records', async () => {
    const queue = 'limits';
    const made: string[] = [];
    for (let i = 0; i < 105; i++) made.push((await api.enqueue({ queue_name: queue, payload: { i }, tags: { n: String(i) } })).id);
    const def = await api.get(`${JOBS}?queue_name=${queue}`);
    assert.equal(def.status, 200);
    assert.equal(def.body.length, 20);
    assert.ok(def.headers.get('x-next-cursor'));
    // Newest first.
    assert.deepEqual(
      def.body.map((j: any) => j.id),
      made.slice(-20).reverse(),
    );
    const job = def.body[0];
    assert.equal(job.queue_name, queue);
    assert.equal(job.status, 'pending');
    assert.deepEqual(job.payload, { i: 104 });
    assert.deepEqual(job.tags, { n: '104' });
    assert.deepEqual(job.errors, []);
    assert.ok(!('completion_webhook_secret' in job));
    assert.ok(!('cursor_at' in job), 'the sort key stays inside the cursor');
    assert.match(job.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const max = await api.get(`${JOBS}?queue_name=${queue}&limit=100`);
    assert.equal(max.body.length, 100);
    const rest = await api.get(nextLink(max)!);
    assert.equal(rest.body.length, 5);
    assert.equal(rest.headers.get('link'), null);
    const one = await api.get(`${JOBS}?queue_name=${queue}&limit=1`);
    assert.equal(one.body.length, 1);

    for (const bad of ['0', '101', '-1', 'abc', '1.5', '', '1e2', '20&limit=30']) {
      assertInvalid(await api.get(`${JOBS}?limit=${bad}`), 'limit');
    }
  });

  test('Link and X-Next-Cursor: present on every page but the last, absent when the page is exact', async () => {
    const queue = 'link-q';
    for (let i = 0; i < 10; i++) await api.enqueue({ queue_name: queue, tags: { color: 'red' } });
    const exact = await api.get(`${JOBS}?queue_name=${queue}&limit=10`);
    assert.equal(exact.body.length, 10);
    assert.equal(exact.headers.get('link'), null);
    assert.equal(exact.headers.get('x-next-cursor'), null);

    const first = await api.get(`${JOBS}?queue=${queue}&tag=color:red&status=pending&limit=9`);
    assert.equal(first.body.length, 9);
    const link = nextLink(first)!;
    const cursor = first.headers.get('x-next-cursor')!;
    assert.match(cursor, /^[A-Za-z0-9_-]+$/, 'the cursor is base64url');
    // The Link is this path with the same filters and limit, and the cursor.
    const u = new URL(link, 'http://x');
    assert.equal(u.pathname, JOBS);
    assert.equal(u.searchParams.get('queue'), queue);
    assert.equal(u.searchParams.get('tag'), 'color:red');
    assert.equal(u.searchParams.get('status'), 'pending');
    assert.equal(u.searchParams.get('limit'), '9');
    assert.deepEqual(u.searchParams.getAll('cursor'), [cursor]);
    const second = await api.get(link);
    assert.equal(second.body.length, 1);
    assert.equal(second.headers.get('link'), null);
    assert.equal(second.headers.get('x-next-cursor'), null);
    // The cursor given by hand is the same page.
    const byHand = await api.get(`${JOBS}?queue_name=${queue}&limit=9&cursor=${cursor}`);
    assert.deepEqual(
      byHand.body.map((j: any) => j.id),
      second.body.map((j: any) => j.id),
    );
    // An organization with no jobs: an empty page, no next.
    const other = api.as((await insertKey(n)).key);
    const empty = await other.get(JOBS);
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, []);
    assert.equal(empty.headers.get('link'), null);
  });

  test('filters: queue_name and its alias queue, and status', async () => {
    const ids = await oneOfEach('filter-status');
    await oneOfEach('filter-status-other');
    const all = await api.get(`${JOBS}?queue_name=filter-status&limit=100`);
    assert.deepEqual(new Set(all.body.map((j: any) => j.id)), new Set(Object.values(ids)));
    const alias = await api.get(`${JOBS}?queue=filter-status&limit=100`);
    assert.deepEqual(alias.body, all.body);
    // Both spellings may be given when they agree.
    assert.equal((await api.get(`${JOBS}?queue=filter-status&queue_name=filter-status`)).status, 200);
    assertInvalid(await api.get(`${JOBS}?queue=filter-status&queue_name=filter-status-other`), 'queue_name');
    for (const status of STATUSES) {
      const r = await api.get(`${JOBS}?queue_name=filter-status&status=${status}`);
      assert.equal(r.status, 200);
      assert.deepEqual(
        r.body.map((j: any) => [j.id, j.status]),
        [[ids[status], status]],
        status,
      );
      // Without a queue filter, every job of that status in the organization, and only those.
      const org = await walk(api, `${JOBS}?status=${status}&limit=100`, 100);
      assert.ok(org.items.every((j) => j.status === status));
      assert.ok(org.items.some((j) => j.id === ids[status]));
    }
    assert.deepEqual((await api.get(`${JOBS}?queue_name=no-such-queue`)).body, []);
  });

  test('filters: tag key, tag key:value, several tags, array tags', async () => {
    const queue = 'filter-tags';
    const a = (await api.enqueue({ queue_name: queue, tags: { env: 'prod', team: 'core' } })).id;
    const b = (await api.enqueue({ queue_name: queue, tags: { env: 'dev' } })).id;
    const c = (await api.enqueue({ queue_name: queue, tags: ['urgent', 'env'] })).id;
    const d = (await api.enqueue({ queue_name: queue })).id;
    const e = (await api.enqueue({ queue_name: queue, tags: { 'with:colon': 'x:y' } })).id;
    const ids = async (q: string) => ((await api.get(`${JOBS}?queue_name=${queue}&${q}`)).body as any[]).map((j) => j.id).sort();
    assert.deepEqual(await ids('tag=env'), [a, b, c].sort());
    assert.deepEqual(await ids('tag=env:prod'), [a]);
    assert.deepEqual(await ids('tag=env:dev'), [b]);
    assert.deepEqual(await ids('tag=env:staging'), []);
    assert.deepEqual(await ids('tag=team'), [a]);
    assert.deepEqual(await ids('tag=env&tag=team'), [a]);
    assert.deepEqual(await ids('tag=env:prod&tag=team:core'), [a]);
    assert.deepEqual(await ids('tag=env:dev&tag=team'), []);
    // An array tag is a key with an empty value.
    assert.deepEqual(await ids('tag=urgent'), [c]);
    assert.deepEqual(await ids(`tag=${encodeURIComponent('urgent:')}`), [c]);
    // The key ends at the first colon: a value may hold colons, a key may not be asked for with one.
    assert.deepEqual(await ids(`tag=${encodeURIComponent('with:colon')}`), []);
    assert.deepEqual(await ids('tag=nothing'), []);
    assert.ok(d && e);
    for (const bad of ['', ':value', encodeURIComponent(':'), 'x'.repeat(101)]) {
      assertInvalid(await api.get(`${JOBS}?tag=${bad}`), 'tag');
    }
    assertInvalid(await api.get(`${JOBS}?tag=env:prod&tag=env:dev`), 'tag');
  });

  test('filters: created_after and created_before are exclusive bounds', async () => {
    const queue = 'filter-time';
    await clock.advance(60_000);
    const t1 = clock.now();
    const j1 = (await api.enqueue({ queue_name: queue })).id;
    await clock.advance(1000);
    const t2 = clock.now();
    const j2 = (await api.enqueue({ queue_name: queue })).id;
    await clock.advance(1000);
    const t3 = clock.now();
    const j3 = (await api.enqueue({ queue_name: queue })).id;
    const iso = (t: number) => encodeURIComponent(new Date(t).toISOString());
    const ids = async (q: string) => ((await api.get(`${JOBS}?queue_name=${queue}&${q}`)).body as any[]).map((j) => j.id);
    assert.deepEqual(await ids(`created_after=${iso(t1)}`), [j3, j2]);
    assert.deepEqual(await ids(`created_after=${iso(t1 - 1)}`), [j3, j2, j1]);
    assert.deepEqual(await ids(`created_before=${iso(t3)}`), [j2, j1]);
    assert.deepEqual(await ids(`created_after=${iso(t1)}&created_before=${iso(t3)}`), [j2]);
    assert.deepEqual(await ids(`created_after=${iso(t3)}`), []);
    // Any offset names the same instant.
    const offset = encodeURIComponent(new Date(t2).toISOString().replace('Z', '+00:00'));
    assert.deepEqual(await ids(`created_after=${offset}`), [j3]);
    // Filters and the cursor compose: a walk of one page at a time keeps the bounds.
    const walked = await walk(api, `${JOBS}?queue_name=${queue}&created_before=${iso(t3)}&limit=1`, 1);
    assert.deepEqual(
      walked.items.map((j) => j.id),
      [j2, j1],
    );
    for (const [field, bad] of [
      ['created_after', 'yesterday'],
      ['created_after', '2030-02-30T00:00:00Z'],
      ['created_before', '2030-01-01'],
      ['created_before', '2030-01-01T00:00:00'],
      ['created_before', ''],
    ] as const) {
      assertInvalid(await api.get(`${JOBS}?${field}=${encodeURIComponent(bad)}`), field);
    }
  });

  test('422 for an invalid status or queue name, and for every malformed cursor', async () => {
    for (const bad of ['done', 'PENDING', '', 'pending,completed']) assertInvalid(await api.get(`${JOBS}?status=${bad}`), 'status');
    assertInvalid(await api.get(`${JOBS}?status=pending&status=completed`), 'status');
    for (const bad of ['.hidden', '-dash', 'sp%20ace', 'x'.repeat(101), '']) {
      assertInvalid(await api.get(`${JOBS}?queue_name=${bad}`), 'queue_name');
    }
    const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
    const good = (await api.get(`${JOBS}?limit=1`)).headers.get('x-next-cursor')!;
    const [at, id] = JSON.parse(Buffer.from(good, 'base64url').toString()).k;
    const queuesCursor = (await walkFirstQueueCursor()) ?? b64({ l: 'queues', k: ['a'] });
    const cursors = [
      'not a cursor',
      '!!!!',
      b64('not json'),
      b64('null'),
      b64([at, id]),
      b64({ l: 'jobs' }),
      b64({ l: 'jobs', k: [at] }),
      b64({ l: 'jobs', k: [at, id, 'extra'] }),
      b64({ l: 'dlq', k: [at, id] }),
      queuesCursor,
      b64({ l: 'jobs', k: [at, 'not-a-uuid'] }),
      b64({ l: 'jobs', k: ['2030-02-30T00:00:00.000000Z', id] }),
      b64({ l: 'jobs', k: ['2030-01-01T25:00:00.000000Z', id] }),
      b64({ l: 'jobs', k: ['2030-01-01T00:00:00.000Z', id] }),
      b64({ l: 'jobs', k: [0, id] }),
      b64({ l: 'jobs', k: [at, id] }).repeat(16),
      `${good}=`,
    ];
    for (const c of cursors) assertInvalid(await api.get(`${JOBS}?cursor=${encodeURIComponent(c)}`), 'cursor');
    assertInvalid(await api.get(`${JOBS}?cursor=${good}&cursor=${good}`), 'cursor');
    assertInvalid(await api.get(`${JOBS}?cursor=`), 'cursor');
    // The genuine cursor still works.
    assert.equal((await api.get(`${JOBS}?limit=1&cursor=${good}`)).status, 200);
  });
});

/** A real cursor of the queue list (it must be refused by the job list). */
async function walkFirstQueueCursor(): Promise<string | null> {
  return (await api.get('/api/v1/queues?limit=1')).headers.get('x-next-cursor');
}

describe('GET /api/v1/jobs/status', () => {
  test('the status line of each known id, in the order asked, unknown ids left out', async () => {
    const ids = await oneOfEach('status-batch');
    const unknown = randomUUID();
    const asked = [ids.completed!, unknown, ids.pending!.toUpperCase(), ids.deadletter!, ids.completed!];
    const r = await api.get(`${JOBS}/status?ids=${asked.join(',')}`);
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.map((s: any) => [s.id, s.status]),
      [
        [ids.completed, 'completed'],
        [ids.pending, 'pending'],
        [ids.deadletter, 'deadletter'],
      ],
    );
    for (const s of r.body) {
      assert.deepEqual(Object.keys(s).sort(), ['id', 'queue_name', 'retry_count', 'status', 'updated_at']);
      assert.equal(s.queue_name, 'status-batch');
      assert.equal(s.retry_count, 0);
      assert.match(s.updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    // Repeated `ids` parameters add up; spaces around ids are ignored.
    const split = await api.get(`${JOBS}/status?ids=${ids.processing}&ids=${encodeURIComponent(` ${ids.cancelled} `)}`);
    assert.deepEqual(
      split.body.map((s: any) => s.status),
      ['processing', 'cancelled'],
    );
    assert.deepEqual((await api.get(`${JOBS}/status?ids=${unknown}`)).body, []);
  });

  test('100 ids are accepted; 101, none, and ids that are not UUIDs are 422', async () => {
    const known = (await api.enqueue({ queue_name: 'status-batch-100' })).id;
    const hundred = [known, ...Array.from({ length: 99 }, () => randomUUID())];
    const r = await api.get(`${JOBS}/status?ids=${hundred.join(',')}`);
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.map((s: any) => s.id),
      [known],
    );
    assertInvalid(await api.get(`${JOBS}/status?ids=${[...hundred, randomUUID()].join(',')}`), 'ids');
    assertInvalid(await api.get(`${JOBS}/status`), 'ids');
    assertInvalid(await api.get(`${JOBS}/status?ids=`), 'ids');
    assertInvalid(await api.get(`${JOBS}/status?ids=,,`), 'ids');
    assertInvalid(await api.get(`${JOBS}/status?ids=${known},not-a-uuid`), 'ids');
    assertInvalid(await api.get(`${JOBS}/status?ids=12345`), 'ids');
  });
});

describe('GET /api/v1/jobs/stats', () => {
  test('counts per status for a queue (every status present), and for the organization', async () => {
    const empty = await api.get(`${JOBS}/stats?queue_name=stats-none`);
    assert.equal(empty.status, 200);
    const none = { pending: 0, scheduled: 0, processing: 0, completed: 0, deadletter: 0, cancelled: 0 };
    // The counts are also at the top level (test/compat.test.ts).
    assert.deepEqual(empty.body, { queue_name: 'stats-none', counts: none, total: 0, ...none });

    await oneOfEach('stats-q');
    await api.enqueue({ queue_name: 'stats-q' });
    const q = await api.get(`${JOBS}/stats?queue=stats-q`);
    const counts = { pending: 2, scheduled: 1, processing: 1, completed: 1, deadletter: 1, cancelled: 1 };
    assert.deepEqual(q.body, { queue_name: 'stats-q', counts, total: 7, ...counts });
    assert.deepEqual((await api.get(`${JOBS}/stats?queue_name=stats-q`)).body, q.body);

    const org = await api.get(`${JOBS}/stats`);
    assert.equal(org.body.queue_name, null);
    assert.deepEqual(Object.keys(org.body.counts).sort(), [...STATUSES].sort());
    const sum = Object.values(org.body.counts as Record<string, number>).reduce((a, b) => a + b, 0);
    assert.equal(org.body.total, sum);
    // The organization's counts agree with the list.
    for (const status of ['deadletter', 'cancelled', 'processing']) {
      const listed = await walk(api, `${JOBS}?status=${status}&limit=100`, 100);
      assert.equal(org.body.counts[status], listed.items.length, status);
    }
  });

  test('422 for an invalid queue name', async () => {
    assertInvalid(await api.get(`${JOBS}/stats?queue_name=.bad`), 'queue_name');
    assertInvalid(await api.get(`${JOBS}/stats?queue=a&queue_name=b`), 'queue_name');
  });
});

describe('GET /api/v1/jobs/dlq', () => {
  test('dead-lettered jobs only, with payload and error history, newest first, with filters and cursor', async () => {
    const queue = 'dlq-list';
    const dead: string[] = [];
    for (let i = 0; i < 5; i++) {
      const job = await api.enqueue({ queue_name: queue, payload: { i }, tags: { kind: i % 2 ? 'odd' : 'even' }, max_retries: 1 });
      // One retryable failure first (it is scheduled again), then a final one.
      let c = await claimOne(queue);
      assert.equal(c.id, job.id);
      const f1 = await api.post(`${JOBS}/${c.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: `first ${i}` });
      assert.equal(f1.body.status, 'scheduled');
      await clock.advance(3_600_000);
      c = await claimOne(queue);
      assert.equal(c.id, job.id);
      const f2 = await api.post(`${JOBS}/${c.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: `final ${i}`, retryable: false });
      assert.equal(f2.body.status, 'deadletter');
      dead.push(job.id);
    }
    // Then one job of each status: the list must keep only the dead-lettered one.
    const mixed = await oneOfEach(queue);
    const r = await walk(api, `/api/v1/jobs/dlq?queue_name=${queue}&limit=2`, 2);
    assert.equal(r.pages.length, 3);
    assert.ok(r.items.every((j) => j.status === 'deadletter' && j.queue_name === queue));
    assert.deepEqual(
      r.items.map((j) => j.id),
      [mixed.deadletter, ...[...dead].reverse()],
    );
    const newest = r.items[1];
    assert.deepEqual(newest.payload, { i: 4 });
    assert.equal(newest.last_error, 'final 4');
    assert.deepEqual(
      newest.errors.map((e: any) => [e.attempt, e.error]),
      [
        [1, 'first 4'],
        [2, 'final 4'],
      ],
    );
    for (const e of newest.errors) assert.match(e.at, /^\d{4}-\d\d-\d\dT/);
    // The Link of the DLQ list stays on the DLQ path.
    assert.equal(new URL(nextLink(r.pages[0]!)!, 'http://x').pathname, '/api/v1/jobs/dlq');

    const odd = await api.get(`/api/v1/jobs/dlq?queue=${queue}&tag=kind:odd`);
    assert.deepEqual(
      odd.body.map((j: any) => j.id),
      [dead[3], dead[1]],
    );
    // status is not a filter of this list: it stays deadletter.
    const st = await api.get(`/api/v1/jobs/dlq?queue_name=${queue}&status=pending&limit=100`);
    assert.equal(st.body.length, 6);
    const at = (t: number) => encodeURIComponent(new Date(t).toISOString());
    const recent = await api.get(`/api/v1/jobs/dlq?queue_name=${queue}&created_after=${at(clock.now() - 1)}`);
    assert.deepEqual(
      recent.body.map((j: any) => j.id),
      [mixed.deadletter],
    );
    assert.deepEqual((await api.get(`/api/v1/jobs/dlq?queue_name=${queue}&created_after=${at(clock.now())}`)).body, []);
    assert.deepEqual((await api.get('/api/v1/jobs/dlq?queue_name=dlq-nothing')).body, []);
  });

  test('422 for bad parameters, and the cursor of the job list is not a DLQ cursor (nor the reverse)', async () => {
    const jobsCursor = (await api.get(`${JOBS}?limit=1`)).headers.get('x-next-cursor')!;
    assertInvalid(await api.get(`/api/v1/jobs/dlq?cursor=${jobsCursor}`), 'cursor');
    const dlqCursor = (await api.get('/api/v1/jobs/dlq?limit=1')).headers.get('x-next-cursor')!;
    assert.ok(dlqCursor);
    assert.equal((await api.get(`/api/v1/jobs/dlq?limit=1&cursor=${dlqCursor}`)).status, 200);
    assertInvalid(await api.get(`${JOBS}?cursor=${dlqCursor}`), 'cursor');
    assertInvalid(await api.get('/api/v1/jobs/dlq?limit=0'), 'limit');
    assertInvalid(await api.get('/api/v1/jobs/dlq?queue=..'), 'queue_name');
    assertInvalid(await api.get('/api/v1/jobs/dlq?tag='), 'tag');
    assertInvalid(await api.get('/api/v1/jobs/dlq?created_before=soon'), 'created_before');
  });
});

describe('permissions and isolation', () => {
  test('401 without a credential, 403 without the permission', async () => {
    const routes = [JOBS, `${JOBS}/status?ids=${randomUUID()}`, `${JOBS}/stats`, `${JOBS}/dlq`];
    for (const p of routes) {
      assertError(await api.as('').get(p), 401, 'UNAUTHORIZED');
      assertError(await api.get(`${p}${p.includes('?') ? '&' : '?'}api_key=${api.key}`), 401, 'UNAUTHORIZED');
    }
    const org = await orgOf(n, api.key);
    const jobsRead = api.as((await insertKey(n, { organizationId: org, permissions: ['jobs:read'] })).key);
    const dlqRead = api.as((await insertKey(n, { organizationId: org, permissions: ['dlq:read'] })).key);
    const writer = api.as((await insertKey(n, { organizationId: org, permissions: ['jobs:write', 'dlq:write', 'queues:read'] })).key);
    for (const p of routes.slice(0, 3)) {
      assert.equal((await jobsRead.get(p)).status, 200, p);
      assertError(await dlqRead.get(p), 403, 'FORBIDDEN');
      assertError(await writer.get(p), 403, 'FORBIDDEN');
    }
    assert.equal((await dlqRead.get(`${JOBS}/dlq`)).status, 200);
    assertError(await jobsRead.get(`${JOBS}/dlq`), 403, 'FORBIDDEN');
    assertError(await writer.get(`${JOBS}/dlq`), 403, 'FORBIDDEN');
  });

  test('no route shows another organization its jobs', async () => {
    const other = api.as((await insertKey(n, { plan: 'enterprise' })).key);
    const mine = await oneOfEach('iso-q');
    const theirs = await oneOfEach('iso-q', other, { owner: 'them' });

    const all = async (a: Api, path: string) => (await walk(a, path, 100)).items.map((j) => j.id as string);
    const theirList = await all(other, `${JOBS}?limit=100`);
    assert.deepEqual(new Set(theirList), new Set(Object.values(theirs)));
    const myList = await all(api, `${JOBS}?queue_name=iso-q&limit=100`);
    assert.deepEqual(new Set(myList), new Set(Object.values(mine)));
    assert.deepEqual(await all(api, `${JOBS}?tag=owner:them&limit=100`), []);
    assert.deepEqual(await all(other, `${JOBS}/dlq?limit=100`), [theirs.deadletter]);
    assert.ok(!(await all(api, `${JOBS}/dlq?limit=100`)).includes(theirs.deadletter!));

    const st = await other.get(`${JOBS}/status?ids=${[...Object.values(mine), theirs.pending].join(',')}`);
    assert.deepEqual(
      st.body.map((s: any) => s.id),
      [theirs.pending],
    );
    const stats = await other.get(`${JOBS}/stats`);
    assert.deepEqual(stats.body.counts, { pending: 1, scheduled: 1, processing: 1, completed: 1, deadletter: 1, cancelled: 1 });
    assert.equal(stats.body.total, 6);
    const myStats = await api.get(`${JOBS}/stats?queue_name=iso-q`);
    assert.equal(myStats.body.total, 6);

    // A cursor is a position, not a capability: one organization's cursor walks only the other's own rows.
    const theirCursor = (await other.get(`${JOBS}?limit=1`)).headers.get('x-next-cursor')!;
    const viaCursor = await all(api, `${JOBS}?limit=100&cursor=${theirCursor}`);
    for (const id of Object.values(theirs)) assert.ok(!viaCursor.includes(id));
  });
});
