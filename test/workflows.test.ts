// Workflows over HTTP on the store chosen by SLUICE_TEST_STORE: a diamond runs in dependency order across
// queues, a failure cancels what depends on it and a retry finishes the graph, quotas (Free refused, job quotas
// for the whole graph, the workflows slot exact under 50 concurrent creates), validation, cancel, a restart
// in the middle of a workflow (and reconciliation of a lost release and of an abandoned creation), isolation.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { CREATING_GRACE_MS } from '../src/app/workflows.js';
import { startNode } from '../src/node.js';
import { Api, freshStore, startTestNode, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey, nextLink, QUOTA_EXTRAS } from './http-assert.js';

const clock = new ManualClock(Date.UTC(2030, 5, 1, 12, 0));
let n: TestNode;
before(async () => {
  n = await startTestNode({ clock });
});
after(() => n.stop());

let unique = 0;
const q = (name: string) => `${name}-${++unique}`;

/** A fresh organization on `plan`, rate limits off unless overridden. */
async function org(plan: string, overrides: Record<string, number | null> = {}): Promise<{ api: Api; id: string }> {
  const { key, organizationId } = await insertKey(n, { plan });
  const limits = { rate_per_second: null, burst: null, ...overrides };
  await n.node.store.query('UPDATE organizations SET limit_overrides = $2::jsonb WHERE id = $1', [organizationId, JSON.stringify(limits)]);
  return { api: n.api.as(key), id: organizationId };
}

/** Waits until the coordinator has acted on every job end it heard of. */
const settle = (node = n.node) => node.workflows.idle();

async function claimAll(api: Api, queue: string): Promise<any[]> {
  return api.claim(queue, { limit: 100 });
}

async function complete(api: Api, job: { id: string; lease_id: string }, node = n.node): Promise<void> {
  const r = await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: job.lease_id, result: { ok: true } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await settle(node);
}

function diamond(q1: string, q2: string, over: Record<string, Record<string, unknown>> = {}) {
  return {
    name: 'diamond',
    jobs: [
      { name: 'A', queue_name: q1, payload: { step: 'A' }, ...over.A },
      { name: 'B', queue_name: q1, payload: { step: 'B' }, depends_on: ['A'], ...over.B },
      { name: 'C', queue_name: q1, payload: { step: 'C' }, depends_on: ['A'], ...over.C },
      { name: 'D', queue_name: q2, payload: { step: 'D' }, depends_on: ['B', 'C'], ...over.D },
    ],
  };
}

const byName = (wf: any) => Object.fromEntries(wf.jobs.map((j: any) => [j.name, j]));

describe('workflows', () => {
  test('a diamond runs A, then B and C in parallel, then D (another queue), and completes', async () => {
    const api = n.api;
    const [q1, q2] = [q('dia'), q('dia-end')];
    const r = await api.post('/api/v1/workflows', diamond(q1, q2, { D: { priority: 7, timeout_seconds: 30, max_retries: 1, tags: { k: 'v' } } }));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.status, 'running');
    assert.equal(r.body.name, 'diamond');
    assert.equal(r.body.job_count, 4);
    const jobs = byName(r.body);
    assert.deepEqual(jobs.D.depends_on, ['B', 'C']);
    assert.equal(jobs.D.queue_name, q2);
    assert.equal(jobs.A.dependencies_met, true);
    assert.equal(jobs.B.dependencies_met, false);

    const d = await api.get(`/api/v1/jobs/${jobs.D.id}`);
    assert.equal(d.body.status, 'pending');
    assert.equal(d.body.dependencies_met, false);
    assert.equal(d.body.workflow_id, r.body.id);
    assert.deepEqual([d.body.priority, d.body.timeout_seconds, d.body.max_retries, d.body.tags], [7, 30, 1, { k: 'v' }]);

    const first = await claimAll(api, q1);
    assert.deepEqual(first.map((j) => j.payload.step), ['A']);
    assert.deepEqual(await claimAll(api, q2), []);
    await complete(api, first[0]);

    const second = await claimAll(api, q1);
    assert.deepEqual(second.map((j) => j.payload.step).sort(), ['B', 'C'], 'B and C are claimable together');
    assert.deepEqual(await claimAll(api, q2), []);
    await complete(api, second[0]);
    assert.deepEqual(await claimAll(api, q2), [], 'D waits for both parents');
    // A claim parked on D's queue is answered by the release.
    const parked = api.claim(q2, { wait_ms: 10_000 });
    await complete(api, second[1]);

    const last = await parked;
    assert.deepEqual(last.map((j) => j.payload.step), ['D']);
    assert.equal((await api.get(`/api/v1/workflows/${r.body.id}`)).body.status, 'running');
    await complete(api, last[0]);

    const done = await api.get(`/api/v1/workflows/${r.body.id}`);
    assert.equal(done.body.status, 'completed');
    assert.ok(done.body.completed_at);
    assert.deepEqual(done.body.jobs.map((j: any) => j.status), ['completed', 'completed', 'completed', 'completed']);
    assertError(await api.post(`/api/v1/workflows/${r.body.id}/retry`), 409, 'WORKFLOW_NOT_LIVE', ['workflow_status']);
    assertError(await api.post(`/api/v1/workflows/${r.body.id}/cancel`), 409, 'WORKFLOW_NOT_LIVE', ['workflow_status']);
  });

  test('a failed parent cancels what depends on it; retry runs it again, then the rest', async () => {
    const api = n.api;
    const [q1, q2] = [q('fail'), q('fail-end')];
    const created = await api.post('/api/v1/workflows', diamond(q1, q2, { B: { max_retries: 0 } }));
    assert.equal(created.status, 201);
    const id = created.body.id;
    const [a] = await claimAll(api, q1);
    await complete(api, a);
    const bc = await claimAll(api, q1);
    const b = bc.find((j) => j.payload.step === 'B');
    const c = bc.find((j) => j.payload.step === 'C');
    const failed = await api.post(`/api/v1/jobs/${b.id}/fail`, { worker_id: 'w1', lease_id: b.lease_id, error: 'boom' });
    assert.equal(failed.body.status, 'deadletter');
    await settle();

    let wf = await api.get(`/api/v1/workflows/${id}`);
    assert.equal(wf.body.status, 'failed');
    assert.equal(byName(wf.body).D.status, 'cancelled');
    assert.equal(byName(wf.body).B.status, 'deadletter');
    assert.deepEqual(await claimAll(api, q2), [], 'D never becomes claimable');

    // The independent branch still finishes; the workflow stays failed.
    await complete(api, c);
    assert.equal((await api.get(`/api/v1/workflows/${id}`)).body.status, 'failed');

    // Its jobs come back with the workflow only: alone they would run out of order.
    assertError(await api.post(`/api/v1/jobs/${b.id}/retry`), 409, 'WORKFLOW_JOB', ['workflow_id']);
    const d0 = byName(wf.body).D.id;
    assertError(await api.post(`/api/v1/jobs/${d0}/retry`), 409, 'WORKFLOW_JOB', ['workflow_id']);
    const dlqByIds = await api.post('/api/v1/jobs/dlq/retry', { job_ids: [b.id] });
    assert.equal(dlqByIds.body.retried, 0);
    assert.match(dlqByIds.body.failed[0].error, /retry the workflow/);
    const dlqByQueue = await api.post('/api/v1/jobs/dlq/retry', { queue_name: q1 });
    assert.deepEqual([dlqByQueue.body.retried, dlqByQueue.body.failed], [0, []]);
    assert.equal(byName((await api.get(`/api/v1/workflows/${id}`)).body).B.status, 'deadletter');

    const retried = await api.post(`/api/v1/workflows/${id}/retry`);
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.equal(retried.body.status, 'running');
    assert.equal(byName(retried.body).B.status, 'pending');
    assert.equal(byName(retried.body).D.dependencies_met, false);
    assertError(await api.post(`/api/v1/workflows/${id}/retry`), 409, 'WORKFLOW_NOT_LIVE', ['workflow_status']);
    assert.deepEqual(await claimAll(api, q2), [], 'D waits for B again');
    const [b2] = await claimAll(api, q1);
    assert.equal(b2.payload.step, 'B');
    assert.equal(b2.retry_count, 0);
    await complete(api, b2);
    const [d] = await claimAll(api, q2);
    assert.equal(d.payload.step, 'D');
    await complete(api, d);
    wf = await api.get(`/api/v1/workflows/${id}`);
    assert.equal(wf.body.status, 'completed');
  });

  test('cancel cancels every live job; a cancelled workflow can be retried', async () => {
    const api = n.api;
    const q1 = q('cancel');
    const created = await api.post('/api/v1/workflows', {
      name: 'to cancel',
      jobs: [
        { name: 'first', queue_name: q1, payload: {} },
        { name: 'second', queue_name: q1, payload: {}, depends_on: ['first'] },
      ],
    });
    const id = created.body.id;
    const [first] = await claimAll(api, q1);
    const r = await api.post(`/api/v1/workflows/${id}/cancel`);
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'cancelled');
    assert.deepEqual(r.body.jobs.map((j: any) => j.status), ['cancelled', 'cancelled']);
    // Its worker is told why (docs/flow-control.md: still a 409).
    assertError(await api.post(`/api/v1/jobs/${first.id}/complete`, { worker_id: 'w1', lease_id: first.lease_id }), 409, 'JOB_CANCELLED', ['job_status']);
    assertError(await api.post(`/api/v1/workflows/${id}/cancel`), 409, 'WORKFLOW_NOT_LIVE', ['workflow_status']);
    await settle();
    assert.deepEqual(await claimAll(api, q1), []);

    const again = await api.post(`/api/v1/workflows/${id}/retry`);
    assert.equal(again.body.status, 'running');
    const [f2] = await claimAll(api, q1);
    assert.equal(f2.id, first.id);
    await complete(api, f2);
    const [s2] = await claimAll(api, q1);
    await complete(api, s2);
    assert.equal((await api.get(`/api/v1/workflows/${id}`)).body.status, 'completed');
  });

  test('cancelling one job of a workflow cancels its descendants and the workflow', async () => {
    const api = n.api;
    const q1 = q('one');
    const created = await api.post('/api/v1/workflows', {
      name: 'chain',
      jobs: [
        { name: 'a', queue_name: q1, payload: {} },
        { name: 'b', queue_name: q1, payload: {}, depends_on: ['a'] },
        { name: 'c', queue_name: q1, payload: {}, depends_on: ['b'] },
      ],
    });
    assert.equal((await api.delete(`/api/v1/jobs/${byName(created.body).a.id}`)).status, 200);
    await settle();
    const wf = await api.get(`/api/v1/workflows/${created.body.id}`);
    assert.equal(wf.body.status, 'cancelled');
    assert.deepEqual(wf.body.jobs.map((j: any) => j.status), ['cancelled', 'cancelled', 'cancelled']);
  });

  test('bad graphs are 422 with details and create nothing', async () => {
    const { api, id } = await org('pro');
    const j = (name: string, depends_on?: string[]) => ({ name, queue_name: 'v', payload: {}, ...(depends_on ? { depends_on } : {}) });
    const cases: Array<[unknown, string[]]> = [
      [{ name: 'cycle', jobs: [j('a', ['c']), j('b', ['a']), j('c', ['b'])] }, ['jobs']],
      [{ name: 'unknown', jobs: [j('a'), j('b', ['nope'])] }, ['jobs.1.depends_on']],
      [{ name: 'dup', jobs: [j('a'), j('a')] }, ['jobs.1.name']],
      [{ name: 'self', jobs: [j('a', ['a'])] }, ['jobs.0.depends_on']],
      [{ name: 'empty', jobs: [] }, ['jobs']],
      [{ name: 'big', jobs: Array.from({ length: 101 }, (_, i) => j(`j${i}`)) }, ['jobs']],
      [{ jobs: [j('a')] }, ['name']],
      [{ name: 'x', jobs: [{ name: 'a', payload: {} }] }, ['jobs.0.queue_name']],
      [{ name: 'x', jobs: [{ ...j('a'), payload: [] }] }, ['jobs.0.payload']],
      [{ name: 'x', jobs: [{ ...j('a'), priority: 1000 }] }, ['jobs.0.priority']],
    ];
    for (const [body, fields] of cases) assertInvalid(await api.post('/api/v1/workflows', body), ...fields);
    const cyc = await api.post('/api/v1/workflows', cases[0]![0]);
    assert.match(cyc.body.details[0].message, /cycle: (a|b|c) → .* → \1/);
    const rows = await n.node.store.query<{ w: number; j: number }>(
      `SELECT (SELECT count(*)::int FROM workflows WHERE organization_id = $1) AS w, (SELECT count(*)::int FROM jobs WHERE organization_id = $1) AS j`,
      [id],
    );
    assert.deepEqual(rows[0], { w: 0, j: 0 });
    assert.equal((await api.get('/api/v1/organizations/usage')).body.usage.workflows.current, 0);
  });

  test('Free plan: 429 QUOTA_EXCEEDED on workflows, nothing created', async () => {
    const { api, id } = await org('free');
    const r = await api.post('/api/v1/workflows', diamond('free-q', 'free-q'));
    assertError(r, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(r.body.resource, 'workflows');
    assert.equal(r.body.limit, 0);
    assert.equal(r.body.upgrade_to, 'starter');
    assert.match(r.body.message, /does not include/);
    const rows = await n.node.store.query<{ w: number; j: number }>(
      `SELECT (SELECT count(*)::int FROM workflows WHERE organization_id = $1) AS w, (SELECT count(*)::int FROM jobs WHERE organization_id = $1) AS j`,
      [id],
    );
    assert.deepEqual(rows[0], { w: 0, j: 0 });
  });

  test('every job of a graph counts in jobs_today; a graph larger than what is left is 429 and creates nothing', async () => {
    const { api, id } = await org('starter', { jobs_per_day: 6 });
    const r = await api.post('/api/v1/workflows', diamond('jpd', 'jpd'));
    assert.equal(r.status, 201);
    let usage = await api.get('/api/v1/organizations/usage');
    assert.equal(usage.body.usage.jobs_today.current, 4);
    assert.equal(usage.body.usage.workflows.current, 1);
    const over = await api.post('/api/v1/workflows', diamond('jpd', 'jpd'));
    assertError(over, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(over.body.resource, 'jobs_per_day');
    const rows = await n.node.store.query<{ w: number; j: number }>(
      `SELECT (SELECT count(*)::int FROM workflows WHERE organization_id = $1) AS w, (SELECT count(*)::int FROM jobs WHERE organization_id = $1) AS j`,
      [id],
    );
    assert.deepEqual(rows[0], { w: 1, j: 4 });
    usage = await api.get('/api/v1/organizations/usage');
    assert.equal(usage.body.usage.jobs_today.current, 4);
    assert.equal(usage.body.usage.workflows.current, 1, 'the refused graph gave its workflows slot back');
    // Exactly what is left still fits.
    const two = await api.post('/api/v1/workflows', { name: 'two', jobs: [{ name: 'a', queue_name: 'jpd', payload: {} }, { name: 'b', queue_name: 'jpd', payload: {} }] });
    assert.equal(two.status, 201);
  });

  test('active_jobs counts every job of the graph; payload over the plan cap is 413', async () => {
    const { api } = await org('starter', { active_jobs: 3 });
    assertError(await api.post('/api/v1/workflows', diamond('aj', 'aj')), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    const big = await api.post('/api/v1/workflows', { name: 'big', jobs: [{ name: 'a', queue_name: 'aj', payload: { x: 'x'.repeat(300_000) } }] });
    assertError(big, 413, 'PAYLOAD_TOO_LARGE', QUOTA_EXTRAS);
    assert.equal((await api.get('/api/v1/organizations/usage')).body.usage.workflows.current, 0);
  });

  test('the workflows slot stops at exactly the limit, also with 50 concurrent creates; a finished workflow frees it', async () => {
    const { api, id } = await org('starter', { workflows: 3 });
    const one = (i: number) => ({ name: `w${i}`, jobs: [{ name: 'only', queue_name: 'slots', payload: { i } }] });
    for (let i = 0; i < 2; i++) assert.equal((await api.post('/api/v1/workflows', one(i))).status, 201);
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => api.post('/api/v1/workflows', one(100 + i))));
    assert.equal(rs.filter((r) => r.status === 201).length, 1);
    const refused = rs.filter((r) => r.status === 429);
    assert.equal(refused.length, 49);
    for (const r of refused) assert.equal(r.body.resource, 'workflows');
    assert.equal(refused[0]!.body.limit, 3);
    const rows = await n.node.store.query<{ w: number; j: number }>(
      `SELECT (SELECT count(*)::int FROM workflows WHERE organization_id = $1) AS w, (SELECT count(*)::int FROM jobs WHERE organization_id = $1) AS j`,
      [id],
    );
    assert.deepEqual(rows[0], { w: 3, j: 3 });
    assertError(await api.post('/api/v1/workflows', one(999)), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);

    const [job] = await claimAll(api, 'slots');
    await complete(api, job);
    assert.equal((await api.get('/api/v1/organizations/usage')).body.usage.workflows.current, 2);
    assert.equal((await api.post('/api/v1/workflows', one(1000))).status, 201, 'a completed workflow frees its slot');
    assertError(await api.post('/api/v1/workflows', one(1001)), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
  });

  test('retry takes a workflows slot again (429 at the limit, nothing revived)', async () => {
    const { api } = await org('starter', { workflows: 1 });
    const created = await api.post('/api/v1/workflows', { name: 'r', jobs: [{ name: 'a', queue_name: 'rs', payload: {}, max_retries: 0 }] });
    const [a] = await claimAll(api, 'rs');
    await api.post(`/api/v1/jobs/${a.id}/fail`, { worker_id: 'w1', lease_id: a.lease_id, error: 'x' });
    await settle();
    assert.equal((await api.get(`/api/v1/workflows/${created.body.id}`)).body.status, 'failed');
    const other = await api.post('/api/v1/workflows', { name: 'other', jobs: [{ name: 'a', queue_name: 'rs2', payload: {} }] });
    assert.equal(other.status, 201, 'the failed workflow gave its slot back');
    const r = await api.post(`/api/v1/workflows/${created.body.id}/retry`);
    assertError(r, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(r.body.resource, 'workflows');
    const wf = await api.get(`/api/v1/workflows/${created.body.id}`);
    assert.equal(wf.body.status, 'failed');
    assert.equal(wf.body.jobs[0].status, 'deadletter');
  });

  test('retry admits its jobs of every queue at once before anything changes (429 on active_jobs, nothing revived), then revives them all', async () => {
    const { api } = await org('starter', { active_jobs: 2 });
    const [q1, q2] = [q('ra'), q('rb')];
    const created = await api.post('/api/v1/workflows', {
      name: 'two queues',
      jobs: [
        { name: 'a', queue_name: q1, payload: {}, max_retries: 0 },
        { name: 'b', queue_name: q2, payload: {}, max_retries: 0 },
      ],
    });
    assert.equal(created.status, 201);
    const id = created.body.id;
    for (const queue of [q1, q2]) {
      const [j] = await claimAll(api, queue);
      await api.post(`/api/v1/jobs/${j.id}/fail`, { worker_id: 'w1', lease_id: j.lease_id, error: 'x' });
    }
    await settle();
    const failed = await api.get(`/api/v1/workflows/${id}`);
    assert.equal(failed.body.status, 'failed');
    const plain = await api.post('/api/v1/jobs', { queue_name: q('plain'), payload: {} });
    assert.equal(plain.status, 201);

    // One slot of active_jobs left, two jobs to revive: refused whole, the workflow untouched.
    const refused = await api.post(`/api/v1/workflows/${id}/retry`);
    assertError(refused, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(refused.body.resource, 'active_jobs');
    const still = await api.get(`/api/v1/workflows/${id}`);
    assert.deepEqual(still.body, failed.body);
    let usage = await api.get('/api/v1/organizations/usage');
    assert.equal(usage.body.usage.workflows.current, 0, 'the refused retry gave its workflows slot back');
    assert.equal(usage.body.usage.active_jobs.current, 1);

    const [p] = await claimAll(api, plain.body.queue_name);
    await complete(api, p);
    const retried = await api.post(`/api/v1/workflows/${id}/retry`);
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.equal(retried.body.status, 'running');
    assert.deepEqual(retried.body.jobs.map((j: any) => j.status), ['pending', 'pending']);
    usage = await api.get('/api/v1/organizations/usage');
    assert.equal(usage.body.usage.active_jobs.current, 2);
    for (const queue of [q1, q2]) {
      const [j] = await claimAll(api, queue);
      assert.equal(j.retry_count, 0);
      await complete(api, j);
    }
    assert.equal((await api.get(`/api/v1/workflows/${id}`)).body.status, 'completed');
  });

  test('list: newest first, a page at a time, filtered by status', async () => {
    const { api } = await org('pro');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await api.post('/api/v1/workflows', { name: `l${i}`, jobs: [{ name: 'a', queue_name: 'list', payload: {} }] })).body.id);
    }
    const p1 = await api.get('/api/v1/workflows?limit=2');
    assert.equal(p1.status, 200);
    assert.deepEqual(p1.body.map((w: any) => w.id), [ids[2], ids[1]]);
    assert.equal(p1.body[0].job_count, 1);
    assert.ok(p1.headers.get('x-next-cursor'));
    const p2 = await api.get(nextLink(p1)!);
    assert.deepEqual(p2.body.map((w: any) => w.id), [ids[0]]);
    assert.equal(p2.headers.get('x-next-cursor'), null);
    assert.equal((await api.get('/api/v1/workflows?status=completed')).body.length, 0);
    assert.equal((await api.get('/api/v1/workflows?status=running')).body.length, 3);
    assertInvalid(await api.get('/api/v1/workflows?status=nope'), 'status');
    assertInvalid(await api.get('/api/v1/workflows?limit=0'), 'limit');
    assertInvalid(await api.get('/api/v1/workflows?cursor=bogus'), 'cursor');
  });

  test('isolation: another organization can neither read, list, cancel, retry it nor claim its jobs', async () => {
    const owner = await org('pro');
    const other = await org('pro');
    const qn = q('iso');
    const created = await owner.api.post('/api/v1/workflows', diamond(qn, qn));
    const id = created.body.id;
    assertError(await other.api.get(`/api/v1/workflows/${id}`), 404, 'NOT_FOUND');
    assertError(await other.api.post(`/api/v1/workflows/${id}/cancel`), 404, 'NOT_FOUND');
    assertError(await other.api.post(`/api/v1/workflows/${id}/retry`), 404, 'NOT_FOUND');
    assert.deepEqual((await other.api.get('/api/v1/workflows')).body, []);
    assert.deepEqual(await claimAll(other.api, qn), []);
    assertError(await other.api.get(`/api/v1/jobs/${byName(created.body).A.id}`), 404, 'NOT_FOUND');
    assertError(await owner.api.get('/api/v1/workflows/not-a-uuid'), 404, 'NOT_FOUND');
    assertError(await owner.api.get('/api/v1/workflows/00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND');
    assert.equal((await owner.api.get(`/api/v1/workflows/${id}`)).body.status, 'running');
    assert.deepEqual((await claimAll(owner.api, qn)).map((j) => j.payload.step), ['A']);
  });

  test('permissions: reads need jobs:read, writes jobs:write', async () => {
    const { organizationId } = await insertKey(n, { plan: 'pro' });
    const reader = n.api.as((await insertKey(n, { organizationId, permissions: ['jobs:read'] })).key);
    const writer = n.api.as((await insertKey(n, { organizationId, permissions: ['jobs:write'] })).key);
    const created = await writer.post('/api/v1/workflows', { name: 'p', jobs: [{ name: 'a', queue_name: 'perm', payload: {} }] });
    assert.equal(created.status, 201);
    assertError(await reader.post('/api/v1/workflows', { name: 'p', jobs: [{ name: 'a', queue_name: 'perm', payload: {} }] }), 403, 'FORBIDDEN');
    assertError(await reader.post(`/api/v1/workflows/${created.body.id}/cancel`), 403, 'FORBIDDEN');
    assertError(await writer.get(`/api/v1/workflows/${created.body.id}`), 403, 'FORBIDDEN');
    assert.equal((await reader.get(`/api/v1/workflows/${created.body.id}`)).status, 200);
    assert.equal((await reader.get('/api/v1/workflows')).body.length, 1);
  });
});

describe('workflows across a restart', () => {
  test('children are released after the parent completes on a restarted node; reconciliation repairs a lost release and an abandoned creation', async () => {
    const store = await freshStore();
    const rclock = new ManualClock(Date.UTC(2030, 5, 1, 12, 0));
    const first = await startTestNode({ clock: rclock, store });
    const env = first.env;
    const key = first.api.key;
    let second: Awaited<ReturnType<typeof startNode>> | null = null;
    try {
      const api1 = first.api;
      const chain = (name: string, queue: string) => ({
        name,
        jobs: [
          { name: 'parent', queue_name: queue, payload: { step: 'parent' } },
          { name: 'child', queue_name: queue, payload: { step: 'child' }, depends_on: ['parent'] },
        ],
      });
      const wf1 = (await api1.post('/api/v1/workflows', chain('restart', 'r1'))).body;
      const wf2 = (await api1.post('/api/v1/workflows', chain('lost release', 'r2'))).body;
      const wf3 = (await api1.post('/api/v1/workflows', chain('abandoned', 'r3'))).body;
      const [p1] = await api1.claim('r1', { lease_duration_secs: 600 });
      const [p2] = await api1.claim('r2', { lease_duration_secs: 600 });
      await first.node.stop();

      // While the node is down: r2's parent completes without the coordinator hearing of it (as if the node
      // died between the completion's commit and the release), and wf3 looks half-created.
      second = await startNode({ config: loadConfig(env), clock: rclock });
      const api2 = new Api(second.url, key);
      await second.store.query(`UPDATE jobs SET status = 'completed', completed_at = now(), lease_id = NULL WHERE id = $1`, [p2.id]);
      await second.store.query(`UPDATE workflows SET status = 'creating' WHERE id = $1`, [wf3.id]);
      await second.workflows.reconcileOnce();
      await second.workflows.idle();

      // The lost release is repaired.
      const [c2] = await api2.claim('r2');
      assert.equal(c2?.payload.step, 'child');
      // The 'creating' workflow is left alone within the grace period, then cancelled with its jobs.
      assert.equal((await api2.get(`/api/v1/workflows/${wf3.id}`)).body.status, 'creating');
      await rclock.advance(CREATING_GRACE_MS);
      await second.workflows.reconcileOnce();
      const w3 = await api2.get(`/api/v1/workflows/${wf3.id}`);
      assert.equal(w3.body.status, 'cancelled');
      assert.deepEqual(w3.body.jobs.map((j: any) => j.status), ['cancelled', 'cancelled']);
      assert.deepEqual(await api2.claim('r3'), []);

      // A lease granted before the restart completes, and the child follows.
      assert.deepEqual(await api2.claim('r1'), [], 'the child is still blocked after the restart');
      const done = await api2.post(`/api/v1/jobs/${p1.id}/complete`, { worker_id: 'w1', lease_id: p1.lease_id });
      assert.equal(done.status, 200);
      await second.workflows.idle();
      const [c1] = await api2.claim('r1');
      assert.equal(c1?.payload.step, 'child');
      await api2.post(`/api/v1/jobs/${c1.id}/complete`, { worker_id: 'w1', lease_id: c1.lease_id });
      await second.workflows.idle();
      assert.equal((await api2.get(`/api/v1/workflows/${wf1.id}`)).body.status, 'completed');
      assert.equal((await api2.get(`/api/v1/workflows/${wf2.id}`)).body.status, 'running');
    } finally {
      await second?.stop();
      await first.node.stop();
      await store.dispose();
    }
  });
});
