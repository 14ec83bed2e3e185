// Bounded queue actors end to end (QUEUE_WINDOW, docs/architecture.md "Paging"), over real HTTP on the store
// chosen by SLUICE_TEST_STORE: a window of 20 jobs and backlogs several times larger, so every claim order, lookup
// and count below crosses pages of the backlog; then a restart, whose rebuild reads the head again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { startNode } from '../src/node.js';
import { Api, freshStore, sleep, startTestNode, type StoreLocation, type TestNode } from './helpers.js';

const WINDOW = '20';

/** Enqueues through the bulk route, 100 at a time; each item's fields from `item(i)`. The ids in order. */
async function bulk(api: Api, queue: string, n: number, item: (i: number) => Record<string, unknown> = () => ({})): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 100) {
    const jobs = Array.from({ length: Math.min(100, n - i) }, (_, k) => ({ payload: { i: i + k }, ...item(i + k) }));
    const r = await api.post('/api/v1/jobs/bulk', { queue_name: queue, jobs });
    assert.equal(r.body.failure_count, 0, JSON.stringify(r.body.failed?.[0]));
    ids.push(...r.body.succeeded.map((s: { id: string }) => s.id));
  }
  return ids;
}

/** Claims until the queue answers nothing: the ids in the order they came. */
async function drain(api: Api, queue: string, limit = 7): Promise<string[]> {
  const got: string[] = [];
  for (let jobs = await api.claim(queue, { limit }); jobs.length > 0; jobs = await api.claim(queue, { limit })) got.push(...jobs.map((j) => j.id));
  return got;
}

/** Ids sorted in claim order: higher priority first, then oldest (ids are UUIDv7). */
const claimOrder = (jobs: Array<{ id: string; priority: number }>): string[] =>
  [...jobs].sort((a, b) => (a.priority !== b.priority ? b.priority - a.priority : a.id < b.id ? -1 : 1)).map((j) => j.id);

describe('paging: a queue larger than its actor window', () => {
  let store: StoreLocation;
  let n: { api: Api; env: Record<string, string>; stop(): Promise<void> };
  let api: Api;
  before(async () => {
    store = await freshStore();
    n = await startTestNode({ store, env: { QUEUE_WINDOW: WINDOW } });
    api = n.api;
  });
  after(async () => {
    await n.stop();
    await store.dispose();
  });

  test('claims in exact priority and FIFO order across pages; a high priority enqueued behind a paged backlog comes first', async () => {
    const prio = (i: number) => [0, 10, -10, 0, 5][i % 5]!;
    const ids = await bulk(api, 'order', 150, (i) => ({ priority: prio(i) }));
    const jobs = ids.map((id, i) => ({ id, priority: prio(i) }));
    const first = (await api.claim('order', { limit: 30 })).map((j) => j.id);
    const urgent = await api.enqueue({ queue_name: 'order', priority: 50 });
    const [next] = await api.claim('order');
    assert.equal(next.id, urgent.id);
    const rest = await drain(api, 'order');
    assert.deepEqual([...first, ...rest], claimOrder(jobs));
  });

  test('get, explain, cancel and retry reach a paged-out job; stats and usage stay exact', async () => {
    const active = async (): Promise<number> => (await api.get('/api/v1/organizations/usage')).body.usage.active_jobs.current;
    const before = await active();
    const ids = await bulk(api, 'lookup', 120);
    const deep = ids[100]!;
    const got = await api.get(`/api/v1/jobs/${deep}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.status, 'pending');
    const explained = await api.get(`/api/v1/jobs/${deep}/explain`);
    assert.equal(explained.status, 200, JSON.stringify(explained.body));
    const ahead = explained.body.reasons.find((r: { reason: string }) => r.reason === 'behind_other_jobs');
    assert.equal(ahead?.count, 100, JSON.stringify(explained.body.reasons));
    const cancelled = await api.delete(`/api/v1/jobs/${deep}`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal((await api.get(`/api/v1/jobs/${deep}`)).body.status, 'cancelled');
    const stats = await api.get('/api/v1/jobs/stats?queue_name=lookup');
    assert.equal(stats.body.pending, 119);
    assert.equal(stats.body.cancelled, 1);
    assert.equal(await active(), before + 119);
    // Raised above the backlog while paged out: claimed first.
    const raised = await api.put(`/api/v1/jobs/${ids[110]}/priority`, { priority: 20 });
    assert.equal(raised.status, 200, JSON.stringify(raised.body));
    const [top] = await api.claim('lookup');
    assert.equal(top.id, ids[110]);
    // A retried job comes back with its old id: ahead of the backlog, as FIFO says.
    const retried = await api.post(`/api/v1/jobs/${deep}/retry`);
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    const rest = await drain(api, 'lookup');
    assert.deepEqual(rest, ids.filter((id) => id !== ids[110]));
    const after = await api.get('/api/v1/jobs/stats?queue_name=lookup');
    assert.equal(after.body.pending, 0);
    assert.equal(after.body.processing, 120);
  });

  test('idempotency keys and debounce keys of paged-out jobs', async () => {
    const ids = await bulk(api, 'dedupe', 80, (i) => (i === 70 ? { idempotency_key: 'deep-key' } : {}));
    const again = await api.post('/api/v1/jobs', { queue_name: 'dedupe', payload: { again: true }, idempotency_key: 'deep-key' });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.created, false);
    assert.equal(again.body.id, ids[70]);
    const burst = await api.enqueue({ queue_name: 'dedupe', payload: { v: 1 }, debounce: { key: 'deep-burst', delay_ms: 0 } });
    const absorbed = await api.post('/api/v1/jobs', { queue_name: 'dedupe', payload: { v: 2 }, debounce: { key: 'deep-burst', delay_ms: 0 } });
    assert.equal(absorbed.status, 200, JSON.stringify(absorbed.body));
    assert.equal(absorbed.body.id, burst.id);
    assert.deepEqual((await api.get(`/api/v1/jobs/${burst.id}`)).body.payload, { v: 2 });
    const all = await drain(api, 'dedupe');
    assert.deepEqual(all, [...ids, burst.id]);
  });

  test('concurrency keys stay fair: a key with 10 jobs is not hidden behind a paged backlog of 150', async () => {
    const a = await bulk(api, 'fair', 150, () => ({ concurrency_key: 'A' }));
    const b = await bulk(api, 'fair', 10, () => ({ concurrency_key: 'B' }));
    const first: string[] = [];
    for (let i = 0; i < 20; i++) first.push(...(await api.claim('fair')).map((j) => j.id));
    assert.deepEqual(first.filter((id) => b.includes(id)), b);
    const rest = await drain(api, 'fair');
    assert.deepEqual([...first, ...rest].filter((id) => a.includes(id)), a);
  });

  test('a queue with paged-out jobs cannot be deleted', async () => {
    await bulk(api, 'keep', 60);
    const r = await api.delete('/api/v1/queues/keep');
    assert.equal(r.status, 409);
    assert.equal(r.body.details?.active_jobs ?? r.body.active_jobs, 60, JSON.stringify(r.body));
  });

  test('after a restart, the rebuilt actor claims in order from the head of its backlog', async () => {
    const prio = (i: number) => (i % 3 === 0 ? 5 : 0);
    const ids = await bulk(api, 'restart', 130, (i) => ({ priority: prio(i), concurrency_key: i % 4 === 0 ? 'k' : null }));
    await n.stop();
    const node = await startNode({ config: loadConfig(n.env) });
    n = { api: new Api(node.url, api.key), env: n.env, stop: () => node.stop() };
    api = n.api;
    // Ready once the threads have rebuilt their queues (503 until then).
    let ready = await api.get('/health/ready');
    for (let i = 0; i < 200 && ready.status !== 200; i++, ready = await api.get('/health/ready')) await sleep(25);
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    const got = await drain(api, 'restart', 1);
    // Keys take turns within a priority level; FIFO within each key and level.
    const jobs = ids.map((id, i) => ({ id, priority: prio(i), key: i % 4 === 0 ? 'k' : null }));
    assert.equal(got.length, 130);
    for (const level of [5, 0]) {
      for (const key of ['k', null]) {
        const expected = jobs.filter((j) => j.priority === level && j.key === key).map((j) => j.id);
        assert.deepEqual(got.filter((id) => expected.includes(id)), expected);
      }
      const levelIds = new Set(jobs.filter((j) => j.priority === level).map((j) => j.id));
      const positions = got.flatMap((id, i) => (levelIds.has(id) ? [i] : []));
      assert.equal(Math.max(...positions) - Math.min(...positions) + 1, levelIds.size, 'a priority level is claimed before the next');
    }
  });
});

describe('paging with a manual clock: jobs that fall due, expire or come back behind a paged backlog', () => {
  const T0 = Date.UTC(2030, 0, 1, 12);
  const clock = new ManualClock(T0);
  let n: TestNode;
  let api: Api;
  before(async () => {
    n = await startTestNode({ clock, env: { QUEUE_WINDOW: WINDOW, RETRY_UNIT_MS: '1000' } });
    api = n.api;
  });
  after(() => n.stop());

  test('a paged-out job whose expires_at comes is cancelled as expired; scheduled jobs fall due into their place', async () => {
    const ids = await bulk(api, 'timed', 60);
    const doomed = await api.enqueue({ queue_name: 'timed', expires_at: new Date(T0 + 5_000).toISOString() });
    const soon = await api.enqueue({ queue_name: 'timed', priority: 5, scheduled_at: new Date(T0 + 3_000).toISOString() });
    await clock.advance(5_000);
    const expired = await api.get(`/api/v1/jobs/${doomed.id}`);
    assert.equal(expired.body.status, 'cancelled');
    assert.equal(expired.body.last_error, 'expired');
    const got = await drain(api, 'timed');
    assert.deepEqual(got, [soon.id, ...ids]);
  });

  test('a failed job retried after its backoff, and a dead letter retried from the DLQ, take their place by id', async () => {
    const [first] = await bulk(api, 'again', 1, () => ({ max_retries: 1 }));
    const [dead] = await bulk(api, 'again', 1, () => ({ max_retries: 0 }));
    const backlog = await bulk(api, 'again', 70);
    const claimed = await api.claim('again', { limit: 2 });
    assert.deepEqual(claimed.map((j) => j.id), [first, dead]);
    for (const j of claimed) {
      const f = await api.post(`/api/v1/jobs/${j.id}/fail`, { worker_id: 'w1', lease_id: j.lease_id, error: 'boom' });
      assert.equal(f.status, 200, JSON.stringify(f.body));
    }
    await clock.advance(1_000);
    const retried = await api.post('/api/v1/jobs/dlq/retry', { job_ids: [dead] });
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    // Both are older than the whole backlog: claimed before it, in id order.
    const got = await drain(api, 'again');
    assert.deepEqual(got, [first, dead, ...backlog]);
  });
});
