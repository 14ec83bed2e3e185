// The read side of queues over real HTTP, on the store chosen by SLUICE_TEST_STORE: the list and its
// cursor, one queue's record, and its stats — counts, the oldest pending age and the last minute's
// throughput, measured against a ManualClock — with permissions, 404s and isolation.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { startTestNode, type Api, type ApiResponse, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey, nextLink, orgOf } from './http-assert.js';

const QUEUES = '/api/v1/queues';
const T0 = Date.UTC(2030, 0, 1);
const ZERO = { pending: 0, scheduled: 0, processing: 0, completed: 0, deadletter: 0, cancelled: 0 };

let n: TestNode;
let api: Api;
let clock: ManualClock;

before(async () => {
  clock = new ManualClock(T0);
  n = await startTestNode({ clock });
  api = n.api;
});
after(() => n.stop());

async function complete(queue: string, count: number): Promise<void> {
  const jobs = await api.claim(queue, { limit: count });
  assert.equal(jobs.length, count);
  for (const j of jobs) assert.equal((await api.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: 'w1', lease_id: j.lease_id })).status, 200);
}

async function fail(queue: string, count: number, retryable: boolean): Promise<void> {
  const jobs = await api.claim(queue, { limit: count });
  assert.equal(jobs.length, count);
  for (const j of jobs) {
    const r = await api.post(`/api/v1/jobs/${j.id}/fail`, { worker_id: 'w1', lease_id: j.lease_id, error: 'x', retryable });
    assert.equal(r.body.status, retryable ? 'scheduled' : 'deadletter');
  }
}

describe('GET /api/v1/queues/:name', () => {
  test('the record: name, paused, reason, config, counts, times', async () => {
    const created = await api.post(QUEUES, { name: 'rec', max_retries: 7, lease_duration_secs: 120 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const empty = await api.get(`${QUEUES}/rec`);
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, {
      name: 'rec',
      queue_name: 'rec',
      paused: false,
      paused_reason: null,
      paused_at: null,
      config: { max_retries: 7, lease_duration_secs: 120, concurrency_per_key: null, max_concurrency: null, rate_limit: null },
      counts: ZERO,
      created_at: new Date(T0).toISOString(),
      updated_at: new Date(T0).toISOString(),
    });

    for (let i = 0; i < 4; i++) await api.enqueue({ queue_name: 'rec' });
    await api.enqueue({ queue_name: 'rec', scheduled_at: new Date(T0 + 3_600_000).toISOString() });
    await complete('rec', 1);
    await fail('rec', 1, false);
    const [held] = await api.claim('rec');
    assert.ok(held);
    await clock.advance(1000);
    assert.equal((await api.post(`${QUEUES}/rec/pause`, { reason: 'maintenance' })).status, 200);
    const r = await api.get(`${QUEUES}/rec`);
    assert.equal(r.body.paused, true);
    assert.equal(r.body.paused_reason, 'maintenance');
    assert.deepEqual(r.body.counts, { ...ZERO, pending: 1, scheduled: 1, processing: 1, completed: 1, deadletter: 1 });
    assert.equal(r.body.created_at, new Date(T0).toISOString());
    assert.equal(r.body.updated_at, new Date(T0 + 1000).toISOString());
    assert.equal((await api.post(`${QUEUES}/rec/resume`)).status, 200);

    // A queue made by an enqueue has no overrides.
    await api.enqueue({ queue_name: 'rec-auto' });
    const auto = await api.get(`${QUEUES}/rec-auto`);
    assert.deepEqual(auto.body.config, { max_retries: null, lease_duration_secs: null, concurrency_per_key: null, max_concurrency: null, rate_limit: null });
    assert.deepEqual(auto.body.counts, { ...ZERO, pending: 1 });
  });

  test('404 not_found for an unknown queue and for a name no queue can have', async () => {
    for (const p of ['nope', '.hidden', '-dash', 'x'.repeat(101), 'sp%20ace']) {
      assertError(await api.get(`${QUEUES}/${p}`), 404, 'NOT_FOUND');
      assertError(await api.get(`${QUEUES}/${p}/stats`), 404, 'NOT_FOUND');
    }
    // The longest valid name is a name.
    const long = `q${'x'.repeat(99)}`;
    await api.enqueue({ queue_name: long });
    assert.equal((await api.get(`${QUEUES}/${long}`)).status, 200);
    assert.equal((await api.get(`${QUEUES}/${long}/stats`)).status, 200);
  });
});

describe('GET /api/v1/queues', () => {
  test('every queue of the organization, by name, page by page with Link and X-Next-Cursor', async () => {
    const other = api.as((await insertKey(n, { plan: 'enterprise' })).key);
    const names = Array.from({ length: 25 }, (_, i) => `list-${String(i).padStart(2, '0')}`);
    // Created out of order; byte order puts upper case before lower case.
    for (const name of [...names].reverse()) await other.enqueue({ queue_name: name });
    await other.enqueue({ queue_name: 'Upper' });
    await other.enqueue({ queue_name: 'list-00' });
    await api.enqueue({ queue_name: 'list-99-not-theirs' });

    const seen: any[] = [];
    let path: string | null = `${QUEUES}?limit=10`;
    let pages = 0;
    while (path !== null) {
      const r: ApiResponse = await other.get(path);
      assert.equal(r.status, 200);
      pages++;
      seen.push(...r.body);
      const link = nextLink(r);
      assert.equal(link === null, r.headers.get('x-next-cursor') === null);
      if (link) assert.equal(new URL(link, 'http://x').searchParams.get('cursor'), r.headers.get('x-next-cursor'));
      path = link;
    }
    assert.equal(pages, 3);
    assert.deepEqual(
      seen.map((q) => q.name),
      ['Upper', ...names],
    );
    const first = seen.find((q) => q.name === 'list-00');
    assert.deepEqual(first.counts, { ...ZERO, pending: 2 });
    assert.deepEqual(Object.keys(first).sort(), ['config', 'counts', 'created_at', 'name', 'paused', 'paused_at', 'paused_reason', 'queue_name', 'updated_at']);

    // Exactly one page: no next.
    const exact = await other.get(`${QUEUES}?limit=26`);
    assert.equal(exact.body.length, 26);
    assert.equal(exact.headers.get('link'), null);
    assert.equal(exact.headers.get('x-next-cursor'), null);
    // The default limit is 20.
    assert.equal((await other.get(QUEUES)).body.length, 20);
  });

  test('422 for a bad limit or cursor', async () => {
    for (const bad of ['0', '101', 'x']) assertInvalid(await api.get(`${QUEUES}?limit=${bad}`), 'limit');
    const jobsCursor = (await api.get('/api/v1/jobs?limit=1')).headers.get('x-next-cursor')!;
    assert.ok(jobsCursor);
    for (const bad of [jobsCursor, 'garbage!', Buffer.from(JSON.stringify({ l: 'queues', k: [''] })).toString('base64url')]) {
      assertInvalid(await api.get(`${QUEUES}?cursor=${encodeURIComponent(bad)}`), 'cursor');
    }
  });
});

describe('GET /api/v1/queues/:name/stats', () => {
  test('counts, oldest pending age from when the job became due, throughput over the last minute', async () => {
    const q = 'st';
    const start = clock.now();
    const empty = await api.post(QUEUES, { name: q });
    assert.equal(empty.status, 201);
    assert.deepEqual((await api.get(`${QUEUES}/${q}/stats`)).body, {
      name: q,
      paused: false,
      ...ZERO,
      oldest_pending_age_seconds: null,
      throughput_last_minute: { completed: 0, failed: 0 },
      busiest_keys: [],
    });

    // A delayed job counts from its scheduled_at, not its created_at.
    await api.enqueue({ queue_name: q, scheduled_at: new Date(start + 30_000).toISOString(), priority: -100 });
    await clock.advance(10_000);
    for (let i = 0; i < 8; i++) await api.enqueue({ queue_name: q });
    let s = (await api.get(`${QUEUES}/${q}/stats`)).body;
    assert.equal(s.pending, 8);
    assert.equal(s.scheduled, 1);
    assert.equal(s.oldest_pending_age_seconds, 0);
    await clock.advance(45_500);
    s = (await api.get(`${QUEUES}/${q}/stats`)).body;
    assert.equal(s.pending, 9, 'the delayed job is due');
    assert.equal(s.oldest_pending_age_seconds, 45, 'whole seconds since the oldest became due');

    // At t = 55.5 s: 3 completed, 2 failed for good, 1 failed and scheduled again.
    await complete(q, 3);
    await fail(q, 2, false);
    await fail(q, 1, true);
    s = (await api.get(`${QUEUES}/${q}/stats`)).body;
    assert.deepEqual(s.throughput_last_minute, { completed: 3, failed: 3 });
    assert.equal(s.completed, 3);
    assert.equal(s.deadletter, 2);
    assert.equal(s.scheduled, 1);
    assert.equal(s.pending, 3);
    // A lease that runs out is a failed attempt too (default lease: 300 s).
    const [held] = await api.claim(q);
    assert.ok(held);
    await clock.advance(30_000);
    await complete(q, 1);
    s = (await api.get(`${QUEUES}/${q}/stats`)).body;
    assert.deepEqual(s.throughput_last_minute, { completed: 4, failed: 3 });
    assert.equal(s.processing, 1);
    // The one pending job left is the delayed one: due at t = 30 s (created at 0), now t = 85.5 s.
    assert.equal(s.oldest_pending_age_seconds, 55);

    // 60 s after the first burst it has left the window (the bound is exclusive); the later completion has not.
    await clock.advance(30_000);
    s = (await api.get(`${QUEUES}/${q}/stats`)).body;
    assert.deepEqual(s.throughput_last_minute, { completed: 1, failed: 0 });
    await clock.advance(300_000);
    s = (await api.get(`${QUEUES}/${q}/stats`)).body;
    assert.equal(s.processing, 0);
    // The lease expired at 355.5 s, given up by the timers fired when the clock moved to 415.5 s.
    assert.deepEqual(s.throughput_last_minute, { completed: 0, failed: 1 }, 'the expired lease');

    // Paused shows; the counts stay.
    assert.equal((await api.post(`${QUEUES}/${q}/pause`)).status, 200);
    const paused = (await api.get(`${QUEUES}/${q}/stats`)).body;
    assert.equal(paused.paused, true);
    assert.equal(paused.completed, 4);
    assert.equal((await api.post(`${QUEUES}/${q}/resume`)).status, 200);
  });
});

describe('permissions and isolation', () => {
  test('queues:read is needed; 401 without a credential', async () => {
    await api.enqueue({ queue_name: 'perm-q' });
    const org = await orgOf(n, api.key);
    const reader = api.as((await insertKey(n, { organizationId: org, permissions: ['queues:read'] })).key);
    const jobsOnly = api.as((await insertKey(n, { organizationId: org, permissions: ['jobs:read', 'queues:write'] })).key);
    for (const p of [QUEUES, `${QUEUES}/perm-q`, `${QUEUES}/perm-q/stats`]) {
      assert.equal((await reader.get(p)).status, 200, p);
      assertError(await jobsOnly.get(p), 403, 'FORBIDDEN');
      assertError(await api.as('').get(p), 401, 'UNAUTHORIZED');
      assertError(await api.get(`${p}?token=${api.key}`), 401, 'UNAUTHORIZED');
    }
  });

  test("another organization's queue is 404 and absent from the list, even under the same name", async () => {
    const other = api.as((await insertKey(n, { plan: 'enterprise' })).key);
    await other.enqueue({ queue_name: 'theirs' });
    await other.enqueue({ queue_name: 'shared-name' });
    await other.enqueue({ queue_name: 'shared-name' });
    await api.enqueue({ queue_name: 'shared-name' });
    assertError(await api.get(`${QUEUES}/theirs`), 404, 'NOT_FOUND');
    assertError(await api.get(`${QUEUES}/theirs/stats`), 404, 'NOT_FOUND');
    const mine = await api.get(`${QUEUES}/shared-name`);
    assert.deepEqual(mine.body.counts, { ...ZERO, pending: 1 });
    assert.equal((await api.get(`${QUEUES}/shared-name/stats`)).body.pending, 1);
    assert.equal((await other.get(`${QUEUES}/shared-name/stats`)).body.pending, 2);
    const all: string[] = [];
    let path: string | null = `${QUEUES}?limit=100`;
    while (path) {
      const r: ApiResponse = await api.get(path);
      all.push(...r.body.map((q: any) => q.name));
      path = nextLink(r);
    }
    assert.ok(!all.includes('theirs'));
    assert.deepEqual(
      ((await other.get(QUEUES)).body as any[]).map((q) => q.name),
      ['shared-name', 'theirs'],
    );
  });
});
