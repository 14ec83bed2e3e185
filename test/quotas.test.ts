// Plan quotas, enforced by the organization's quota actor: each resource stops at exactly its limit, also when
// 50 requests race for the last slot; finished jobs free active slots; jobs per day reset at UTC midnight (by
// the injected clock); revived dead letters count as creations; payloads over the plan cap are 413.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { startNode, type SluiceNode } from '../src/node.js';
import { Api, freshStore, startTestNode, type TestNode } from './helpers.js';
import { assertError, insertKey, QUOTA_EXTRAS } from './http-assert.js';

const clock = new ManualClock(Date.UTC(2030, 5, 1, 23, 0));
const ADMIN = 'admin-key-for-quota-tests';
let n: TestNode;
before(async () => {
  n = await startTestNode({ clock, env: { ADMIN_API_KEY: ADMIN } });
});
after(() => n.stop());

/** A fresh organization on `plan` with these limit overrides, and an Api for its key. */
async function org(plan: string, overrides: Record<string, number | null> = {}): Promise<{ api: Api; id: string }> {
  const { key, organizationId } = await insertKey(n, { plan });
  await n.node.store.query('UPDATE organizations SET limit_overrides = $2::jsonb WHERE id = $1', [organizationId, JSON.stringify(overrides)]);
  return { api: n.api.as(key), id: organizationId };
}


describe('quotas', () => {
  test('active_jobs stops at exactly the limit; a finished job frees its slot', async () => {
    const { api } = await org('free', { rate_per_second: null, burst: null });
    const jobs = [];
    for (let i = 0; i < 10; i++) jobs.push(await api.enqueue({ queue_name: 'q' }));
    const over = await api.post('/api/v1/jobs', { queue_name: 'q', payload: {} });
    assertError(over, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(over.body.error, 'limit_exceeded');
    assert.equal(over.body.resource, 'active_jobs');
    assert.equal(over.body.current, 10);
    assert.equal(over.body.limit, 10);
    assert.equal(over.body.plan, 'free');
    assert.equal(over.body.upgrade_to, 'starter');

    const [c] = await api.claim('q');
    assert.equal((await api.post(`/api/v1/jobs/${c.id}/complete`, { worker_id: 'w1', lease_id: c.lease_id })).status, 200);
    assert.equal((await api.post('/api/v1/jobs', { queue_name: 'q', payload: {} })).status, 201);
    assertError(await api.post('/api/v1/jobs', { queue_name: 'q', payload: {} }), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal((await api.delete(`/api/v1/jobs/${jobs[1].id}`)).status, 200);
    assert.equal((await api.post('/api/v1/jobs', { queue_name: 'q', payload: {} })).status, 201, 'a cancelled job frees its slot');
  });

  test('credit the node holds ahead never refuses jobs the plan has room for: 1 job, then 9 at once, on a limit of 10', async () => {
    // The first admission also takes credit for jobs ahead (2 here), which the quota actor counts as in use until
    // it is used or given back (after a second): the 9 were refused as 3 + 9 > 10 when they came within it.
    const { api, id } = await org('free', { rate_per_second: null, burst: null });
    await api.enqueue({ queue_name: 'credit' });
    const nine = await api.post('/api/v1/jobs/bulk', { queue_name: 'credit', jobs: Array.from({ length: 9 }, (_, i) => ({ payload: { i } })) });
    assert.equal(nine.status, 200);
    assert.equal(nine.body.success_count, 9);
    const over = await api.post('/api/v1/jobs', { queue_name: 'credit', payload: {} });
    assertError(over, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(over.body.current, 10);
    const rows = await n.node.store.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE organization_id = $1`, [id]);
    assert.equal(rows[0]!.n, 10);
  });

  test('50 concurrent enqueues for the last slot: exactly one wins', async () => {
    const { api, id } = await org('starter', { active_jobs: 20, rate_per_second: null, burst: null });
    for (let i = 0; i < 19; i++) await api.enqueue({ queue_name: `race-${i % 4}` });
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => api.post('/api/v1/jobs', { queue_name: `race-${i % 4}`, payload: { i } })));
    assert.equal(rs.filter((r) => r.status === 201).length, 1);
    assert.equal(rs.filter((r) => r.status === 429 && r.body.resource === 'active_jobs').length, 49);
    const rows = await n.node.store.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE organization_id = $1`, [id]);
    assert.equal(rows[0]!.n, 20);
  });

  test('duplicates by idempotency key do not count', async () => {
    const { api } = await org('free', { active_jobs: 2, rate_per_second: null, burst: null });
    await api.enqueue({ queue_name: 'dup', idempotency_key: 'same' });
    for (let i = 0; i < 5; i++) assert.equal((await api.post('/api/v1/jobs', { queue_name: 'dup', payload: {}, idempotency_key: 'same' })).status, 200);
    assert.equal((await api.post('/api/v1/jobs', { queue_name: 'dup', payload: {} })).status, 201);
    assertError(await api.post('/api/v1/jobs', { queue_name: 'dup', payload: {} }), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
  });

  test('jobs_per_day stops at the limit and resets at UTC midnight; DLQ retry counts as creation', async () => {
    const { api } = await org('free', { jobs_per_day: 3, rate_per_second: null, burst: null });
    const a = await api.enqueue({ queue_name: 'daily' });
    await api.enqueue({ queue_name: 'daily' });
    const [c] = await api.claim('daily');
    assert.equal(c.id, a.id);
    await api.post(`/api/v1/jobs/${a.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: 'x', retryable: false });
    // Third creation of the day: the revived dead letter.
    assert.equal((await api.post('/api/v1/jobs/dlq/retry', { job_ids: [a.id] })).body.retried, 1);
    const over = await api.post('/api/v1/jobs', { queue_name: 'daily', payload: {} });
    assertError(over, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(over.body.resource, 'jobs_per_day');
    assert.equal(over.body.current, 3);

    const bulk = await api.post('/api/v1/jobs/bulk', { jobs: [{ queue_name: 'daily', payload: {} }] });
    assertError(bulk, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);

    await clock.set(Date.UTC(2030, 5, 2, 0, 0)); // midnight UTC
    assert.equal((await api.post('/api/v1/jobs', { queue_name: 'daily', payload: {} })).status, 201);
    const usage = await api.get('/api/v1/organizations/usage');
    assert.equal(usage.body.usage.jobs_today.current, 1);
    assert.equal(usage.body.period.day, '2030-06-02');
  });

  test('queues: POST /queues stops at the limit, 50 racing for the last one', async () => {
    const { api } = await org('starter', { queues: 5, rate_per_second: null, burst: null });
    await api.enqueue({ queue_name: 'implicit' }); // a queue created by its first job counts
    for (let i = 0; i < 3; i++) assert.equal((await api.post('/api/v1/queues', { name: `made-${i}` })).status, 201);
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => api.post('/api/v1/queues', { name: `race-${i}` })));
    assert.equal(rs.filter((r) => r.status === 201).length, 1);
    const refused = rs.filter((r) => r.status === 429);
    assert.equal(refused.length, 49);
    for (const r of refused) {
      assertError(r, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
      assert.equal(r.body.resource, 'queues');
    }
    assert.equal((await api.delete('/api/v1/queues/made-0')).status, 200);
    assert.equal((await api.post('/api/v1/queues', { name: 'after-delete' })).status, 201, 'a deleted queue frees its slot');
    assertError(await api.post('/api/v1/queues', { name: 'one-more' }), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
  });

  test('api_keys: 50 racing for the last key; a revoked key frees its slot', async () => {
    const { api } = await org('starter', { rate_per_second: null, burst: null }); // 5 keys, 1 in use
    for (let i = 0; i < 3; i++) assert.equal((await api.post('/api/v1/api-keys', { name: `k${i}` })).status, 201);
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => api.post('/api/v1/api-keys', { name: `race-${i}` })));
    const made = rs.filter((r) => r.status === 201);
    assert.equal(made.length, 1);
    for (const r of rs.filter((x) => x.status !== 201)) {
      assertError(r, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
      assert.equal(r.body.resource, 'api_keys');
      assert.equal(r.body.current, 5);
    }
    assert.equal((await api.delete(`/api/v1/api-keys/${made[0]!.body.id}`)).status, 200);
    assert.equal((await api.delete(`/api/v1/api-keys/${made[0]!.body.id}`)).status, 200, 'revoking twice frees one slot');
    assert.equal((await api.post('/api/v1/api-keys', { name: 'after-revoke' })).status, 201);
    assertError(await api.post('/api/v1/api-keys', { name: 'one-more' }), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
  });

  test('an admin limit change applies at once, admission credit included', async () => {
    const { api, id } = await org('pro', { rate_per_second: null, burst: null });
    // Far from the limits: the main thread now holds admission credit for this organization.
    for (let i = 0; i < 3; i++) await api.enqueue({ queue_name: 'credit' });
    const admin = (body: unknown) => n.api.as('').call('PUT', `/api/v1/admin/organizations/${id}/limits`, body, { 'x-admin-key': ADMIN });
    assertError(await n.api.as('').call('PUT', `/api/v1/admin/organizations/${id}/limits`, { limits: {} }), 401, 'UNAUTHORIZED');
    const r = await admin({ limits: { active_jobs: 4, rate_per_second: null, burst: null } });
    assert.equal(r.status, 200);
    assert.equal((await api.post('/api/v1/jobs', { queue_name: 'credit', payload: {} })).status, 201);
    const over = await api.post('/api/v1/jobs', { queue_name: 'credit', payload: {} });
    assertError(over, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(over.body.current, 4, 'credit handed out before the change is not counted as used');
    const usage = await api.get('/api/v1/organizations/usage');
    assert.deepEqual(usage.body.usage.active_jobs, { current: 4, limit: 4, percentage: 100 });
    assert.equal(usage.body.usage.jobs_today.current, 4);

    const plan = await n.api.as('').call('PUT', `/api/v1/admin/organizations/${id}/plan`, { plan: 'enterprise' }, { 'x-admin-key': ADMIN });
    assert.equal(plan.status, 200);
    assert.equal((await api.post('/api/v1/jobs', { queue_name: 'credit', payload: {} })).status, 429, 'the override still wins');
    await admin({ limits: { rate_per_second: null, burst: null } });
    assert.equal((await api.post('/api/v1/jobs', { queue_name: 'credit', payload: {} })).status, 201, 'enterprise: unlimited');
  });

  test('a payload above the plan cap is 413 with the figures', async () => {
    const { api } = await org('free', { rate_per_second: null, burst: null });
    const big = { blob: 'x'.repeat(64 * 1024) };
    const r = await api.post('/api/v1/jobs', { queue_name: 'big', payload: big });
    assertError(r, 413, 'PAYLOAD_TOO_LARGE', ['current', 'limit', 'plan', 'upgrade_to']);
    assert.equal(r.body.error, 'payload_too_large');
    assert.equal(r.body.limit, 64 * 1024);
    assert.equal(r.body.current, Buffer.byteLength(JSON.stringify(big)));
    assert.equal(r.body.plan, 'free');
    assert.equal(r.body.upgrade_to, 'starter');
    assert.equal((await api.post('/api/v1/jobs', { queue_name: 'big', payload: { blob: 'x'.repeat(60 * 1024) } })).status, 201);
  });

  test('the usage endpoint reports plan, quotas and API calls', async () => {
    const { api } = await org('starter', { rate_per_second: null, burst: null });
    await api.enqueue({ queue_name: 'u1' });
    await api.enqueue({ queue_name: 'u2' });
    const r = await api.get('/api/v1/organizations/usage');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.plan, { tier: 'starter', display_name: 'Starter' });
    assert.deepEqual(r.body.usage.jobs_today, { current: 2, limit: 10_000, percentage: 0.02 });
    assert.deepEqual(r.body.usage.active_jobs, { current: 2, limit: 500, percentage: 0.4 });
    assert.deepEqual(r.body.usage.queues, { current: 2, limit: 10 });
    assert.deepEqual(r.body.usage.workers, { current: 0, limit: 5 });
    assert.equal(r.body.jobs.by_status.pending, 2);
    assert.ok(r.body.api_calls.today >= 3);
  });
});

describe('rate limits', () => {
  test('burst in one second, then 429 with Retry-After', async () => {
    const { api } = await org('free'); // 5/s, burst 10
    const rs = [];
    for (let i = 0; i < 12; i++) rs.push(await api.get('/api/v1/organizations/usage'));
    assert.deepEqual(rs.map((r) => r.status), [...Array(10).fill(200), 429, 429]);
    const limited = rs[10]!;
    assertError(limited, 429, 'RATE_LIMITED', ['retry_after']);
    assert.equal(limited.headers.get('retry-after'), '1');
    await clock.advance(1_000);
    assert.equal((await api.get('/api/v1/organizations/usage')).status, 200, 'a new second, a new burst');
  });

  test('no 60-second window admits more than rate × 60, wherever it starts (no whole-second rounding)', async () => {
    const { api } = await org('free'); // 5/s: 300 a minute, burst 10
    const admitted: number[] = [];
    const send = async (n: number) => {
      for (let i = 0; i < n; i++) if ((await api.get('/api/v1/organizations/usage')).status === 200) admitted.push(clock.now());
    };
    // Ten at the very end of a second, 290 spread over the next 58 s, then ten more at the start of the second
    // that ends the minute: counting whole seconds drops the first ten a moment too early and lets 310 through
    // the 60 s window that starts just after them.
    await clock.advance(1_000 - (clock.now() % 1_000) + 900);
    await send(10);
    await clock.advance(100);
    for (let i = 0; i < 290; i++) {
      await send(1);
      await clock.advance(200);
    }
    await clock.advance(1_000);
    await send(10);
    let worst = 0;
    for (let lo = 0, hi = 0; hi < admitted.length; hi++) {
      while (admitted[hi]! - admitted[lo]! >= 60_000) lo++;
      worst = Math.max(worst, hi - lo + 1);
    }
    assert.equal(worst, 300, 'the busiest 60 s window holds exactly rate × 60');
  });

  test('the minute window holds rate × 60', async () => {
    const { api } = await org('free', { burst: 1000, rate_per_second: 1 }); // 60 a minute
    let ok = 0;
    for (let i = 0; i < 61; i++) if ((await api.get('/api/v1/organizations/usage')).status === 200) ok++;
    assert.equal(ok, 60);
    const r = await api.get('/api/v1/organizations/usage');
    assertError(r, 429, 'RATE_LIMITED', ['retry_after']);
    assert.ok(Number(r.headers.get('retry-after')) >= 59);
    await clock.advance(60_000);
    assert.equal((await api.get('/api/v1/organizations/usage')).status, 200);
  });
});

test('API calls counted but not yet written when a node stops are written then: the next boot reports them', async () => {
  const store = await freshStore();
  const day = new ManualClock(Date.UTC(2030, 5, 2, 12, 0));
  const first = await startTestNode({ store, clock: day });
  let second: SluiceNode | null = null;
  try {
    for (let i = 0; i < 3; i++) assert.equal((await first.api.get('/api/v1/auth/me')).status, 200);
    await first.stop();
    second = await startNode({ config: loadConfig(first.env), clock: day });
    const r = await new Api(second.url, first.api.key).get('/api/v1/organizations/usage');
    assert.equal(r.status, 200);
    assert.equal(r.body.api_calls.today, 4, 'three calls before the restart, and this one');
  } finally {
    await first.stop();
    await second?.stop();
    await store.dispose();
  }
});
