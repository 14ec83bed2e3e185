// Job retention on the store chosen by SLUICE_TEST_STORE, with a ManualClock: completed and cancelled jobs
// older than their organization's plan window are deleted by the sweep; younger ones, live ones and
// dead-lettered ones stay. Sweeps are triggered through the node's sweeper (`sweepOnce`), so the moment is
// the test's, not a timer's.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PLANS, PLAN_TIERS, planLimit } from '../src/actors/org/plans.js';
import { ManualClock } from '../src/clock.js';
import type { Store } from '../src/io/db/store.js';
import { RetentionSweeper } from '../src/app/retention.js';
import { sleep, startTestNode, type Api, type TestNode } from './helpers.js';
import { insertKey } from './http-assert.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2030, 0, 1);

let n: TestNode;
let api: Api;
let clock: ManualClock;

before(async () => {
  clock = new ManualClock(T0);
  n = await startTestNode({ clock });
  api = n.api;
  // The bootstrap organization is on enterprise (90 days); these tests want the free plan's 3-day window, with
  // its quotas lifted (they are not what is tested here).
  await n.node.store.query(
    `UPDATE organizations SET plan = 'free', limit_overrides = $1::jsonb WHERE slug = 'default'`,
    [JSON.stringify({ rate_per_second: null, burst: null, active_jobs: null, jobs_per_day: null })],
  );
});
after(() => n.stop());

async function completed(a: Api, queue: string): Promise<string> {
  const job = await a.enqueue({ queue_name: queue });
  const [c] = await a.claim(queue);
  assert.equal(c.id, job.id);
  assert.equal((await a.post(`/api/v1/jobs/${c.id}/complete`, { worker_id: 'w1', lease_id: c.lease_id })).status, 200);
  return job.id;
}

async function cancelled(a: Api, queue: string): Promise<string> {
  const job = await a.enqueue({ queue_name: queue });
  assert.equal((await a.delete(`/api/v1/jobs/${job.id}`)).status, 200);
  return job.id;
}

async function deadLettered(a: Api, queue: string): Promise<string> {
  const job = await a.enqueue({ queue_name: queue });
  const [c] = await a.claim(queue);
  assert.equal(c.id, job.id);
  const f = await a.post(`/api/v1/jobs/${c.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: 'no', retryable: false });
  assert.equal(f.body.status, 'deadletter');
  return job.id;
}

async function statusOf(a: Api, id: string): Promise<string | null> {
  const r = await a.get(`/api/v1/jobs/${id}`);
  if (r.status === 404) return null;
  assert.equal(r.status, 200);
  return r.body.status;
}

describe('the plan table', () => {
  test('every tier has every resource; retention days are 3/14/30/90 and 1/7/30/90', () => {
    assert.deepEqual([...PLAN_TIERS], ['free', 'starter', 'pro', 'enterprise']);
    assert.deepEqual(
      PLAN_TIERS.map((t) => planLimit(t, 'job_retention_days')),
      [3, 14, 30, 90],
    );
    assert.deepEqual(
      PLAN_TIERS.map((t) => planLimit(t, 'history_retention_days')),
      [1, 7, 30, 90],
    );
    assert.deepEqual(
      PLAN_TIERS.map((t) => planLimit(t, 'jobs_per_day')),
      [1_000, 10_000, 100_000, null],
    );
    assert.equal(planLimit('free', 'workflows'), 0);
    assert.equal(planLimit('free', 'max_payload_bytes'), 64 * 1024);
    assert.equal(planLimit('enterprise', 'max_payload_bytes'), 1024 * 1024);
    assert.equal(planLimit('enterprise', 'burst'), 1000);
    const resources = Object.keys(PLANS.free.limits).sort();
    for (const t of PLAN_TIERS) assert.deepEqual(Object.keys(PLANS[t].limits).sort(), resources);
    assert.ok(Object.isFrozen(PLANS.pro.limits), 'the defaults cannot be changed in place');
  });
});

describe('retention sweep', () => {
  test('finished jobs past the plan window go; younger, live and dead-lettered jobs stay', async () => {
    const starter = api.as((await insertKey(n, { plan: 'starter' })).key);
    const legacy = api.as((await insertKey(n, { plan: 'legacy-plan' })).key);

    // At T0, on the free plan (3 days).
    const oldDone = await completed(api, 'ret');
    const oldCancelled = await cancelled(api, 'ret');
    const oldDead = await deadLettered(api, 'ret');
    const pending = (await api.enqueue({ queue_name: 'ret-idle' })).id;
    const scheduled = (await api.enqueue({ queue_name: 'ret-idle', scheduled_at: new Date(T0 + 30 * DAY).toISOString() })).id;
    const processing = (await api.enqueue({ queue_name: 'ret-later' })).id;
    const starterDone = await completed(starter, 'ret');
    const legacyDone = await completed(legacy, 'ret');

    await clock.advance(2 * DAY);
    const youngDone = await completed(api, 'ret');
    const youngCancelled = await cancelled(api, 'ret');

    // Exactly 3 days after: not yet older than the window.
    await clock.set(T0 + 3 * DAY);
    const [held] = await api.claim('ret-later');
    assert.equal(held.id, processing);
    const report = await n.node.retention.sweepOnce();
    assert.equal(report.deleted, 0);
    assert.equal(report.organizations, 2, 'free and starter; the unknown plan is skipped');
    assert.equal(await statusOf(api, oldDone), 'completed');
    assert.equal(await statusOf(api, oldCancelled), 'cancelled');

    await clock.advance(1);
    await n.node.retention.sweepOnce();
    assert.equal(await statusOf(api, oldDone), null);
    assert.equal(await statusOf(api, oldCancelled), null);
    assert.equal(await statusOf(api, oldDead), 'deadletter');
    assert.equal(await statusOf(api, pending), 'pending');
    assert.equal(await statusOf(api, scheduled), 'scheduled');
    assert.equal(await statusOf(api, processing), 'processing');
    assert.equal(await statusOf(api, youngDone), 'completed');
    assert.equal(await statusOf(api, youngCancelled), 'cancelled');
    assert.equal(await statusOf(starter, starterDone), 'completed');
    assert.equal(await statusOf(legacy, legacyDone), 'completed');
    // Lists and counts no longer show them.
    const listed = ((await api.get('/api/v1/jobs?queue_name=ret&limit=100')).body as any[]).map((j) => j.id);
    assert.deepEqual(new Set(listed), new Set([oldDead, youngDone, youngCancelled]));
    assert.deepEqual((await api.get('/api/v1/jobs/stats?queue_name=ret')).body.counts, {
      pending: 0,
      scheduled: 0,
      processing: 0,
      completed: 1,
      deadletter: 1,
      cancelled: 1,
    });

    // The younger ones go once they are 3 days old.
    await clock.set(T0 + 5 * DAY + 1);
    await n.node.retention.sweepOnce();
    assert.equal(await statusOf(api, youngDone), null);
    assert.equal(await statusOf(api, youngCancelled), null);
    assert.equal(await statusOf(starter, starterDone), 'completed', 'starter keeps 14 days');

    await clock.set(T0 + 14 * DAY + 1);
    await n.node.retention.sweepOnce();
    assert.equal(await statusOf(starter, starterDone), null);
    // An organization whose plan this node does not know keeps its jobs; dead letters wait for a purge.
    assert.equal(await statusOf(legacy, legacyDone), 'completed');
    assert.equal(await statusOf(api, oldDead), 'deadletter');
    assert.equal(await statusOf(api, scheduled), 'scheduled');
    // The claimed job's lease ran out meanwhile: it is live again, not finished, so it stays.
    assert.equal(await statusOf(api, processing), 'pending');
    assert.equal(await statusOf(api, pending), 'pending');
  });

  test('a backlog is deleted in bounded batches, one DELETE statement per batch', async () => {
    const org = await insertKey(n, { plan: 'free' });
    const a = api.as(org.key);
    const start = clock.now();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await a.enqueue({ queue_name: 'backlog' })).id);
    const jobs = await a.claim('backlog', { limit: 30 });
    assert.equal(jobs.length, 30);
    await Promise.all(jobs.map((j: any) => a.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: 'w1', lease_id: j.lease_id })));
    const live = (await a.enqueue({ queue_name: 'backlog' })).id;

    // The node's store, recording the DELETE statements for this organization and how many rows each took.
    const batches: number[] = [];
    const real = n.node.store;
    const counting: Store = {
      query: async (sql, params, name) => {
        const rows = await real.query(sql, params, name);
        if (/^\s*WITH gone AS \(\s*DELETE FROM jobs/.test(sql) && params?.[0] === org.organizationId) batches.push(rows[0]!.n);
        return rows as any[];
      },
      exec: (sql) => real.exec(sql),
      close: async () => {},
    };
    const sweeper = new RetentionSweeper({ store: counting, clock, batchSize: 7 });
    await clock.set(start + 3 * DAY + 1);
    await sweeper.sweepOnce();
    // 30 rows at most 7 a statement: four full batches, then one short batch that ends the loop.
    assert.deepEqual(batches, [7, 7, 7, 7, 2]);
    for (const id of ids) assert.equal(await statusOf(a, id), null);
    assert.equal(await statusOf(a, live), 'pending');
    await sweeper.stop();
  });

  test('started, it sweeps on its own every intervalMs; stopped, it does not', async () => {
    const a = api.as((await insertKey(n, { plan: 'free' })).key);
    const stopped = new RetentionSweeper({ store: n.node.store, clock, intervalMs: 20 });
    stopped.start();
    await stopped.stop();
    const id = await completed(a, 'timed');
    await clock.advance(3 * DAY + 1);
    await sleep(200);
    assert.equal(await statusOf(a, id), 'completed', 'a stopped sweeper does not sweep');
    const sweeper = new RetentionSweeper({ store: n.node.store, clock, intervalMs: 20 });
    sweeper.start();
    try {
      for (let i = 0; i < 250 && (await statusOf(a, id)) !== null; i++) await sleep(20);
      assert.equal(await statusOf(a, id), null, 'the timer swept');
    } finally {
      await sweeper.stop();
    }
    assert.throws(() => new RetentionSweeper({ store: n.node.store, clock, batchSize: 0 }), RangeError);
    assert.throws(() => new RetentionSweeper({ store: n.node.store, clock, intervalMs: 0 }), RangeError);
  });
});
