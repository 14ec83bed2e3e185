// The answers clients written for the hosted service expect (issue 12, point 5), on a real node with a manual
// clock: worker records with `id` and their timing, complete and fail fenced on worker_id when no lease_id is
// sent, workflow `key`s and a job's dependencies, schedule descriptions and history, `job_id` in bulk results,
// counts at the top of /jobs/stats, `queue_name` on queues, API keys' `is_active` and PUT, the dashboard
// overview, `expires_at` (across a restart too), and 401 for unknown routes without a credential.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { SluiceEvent } from '../src/app/events.js';
import { ManualClock } from '../src/clock.js';
import { ConflictError, SluiceClient } from '../clients/typescript/src/index.js';
import { loadConfig } from '../src/config.js';
import { startNode } from '../src/node.js';
import { Api, freshStore, startTestNode, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey } from './http-assert.js';

const JOBS = '/api/v1/jobs';
const T0 = Date.UTC(2030, 5, 1, 12, 0);
const clock = new ManualClock(T0);
let n: TestNode;

before(async () => {
  n = await startTestNode({ clock });
});
after(() => n.stop());

/** A fresh organization (enterprise: workflows allowed; no rate or job limits), an Api for its key, its events. */
async function org(permissions?: string[]): Promise<{ api: Api; id: string; events: SluiceEvent[] }> {
  const { key, organizationId } = await insertKey(n, { plan: 'enterprise', permissions });
  const events: SluiceEvent[] = [];
  n.node.events.subscribe(organizationId, (e) => events.push(e));
  return { api: n.api.as(key), id: organizationId, events };
}

const iso = (ms: number) => new Date(ms).toISOString();

async function claimOne(api: Api, queue: string, worker = 'w1'): Promise<any> {
  const [job] = await api.claim(queue, { worker_id: worker });
  assert.ok(job, `nothing to claim in ${queue}`);
  return job;
}

describe('workers', () => {
  test('register, get and heartbeat answer id, timing, last_heartbeat and status; version is stored', async () => {
    const { api, id } = await org();
    const r = await api.post('/api/v1/workers/register', {
      worker_id: 'compat-1',
      hostname: 'host-a',
      max_concurrency: 8,
      metadata: { region: 'eu' },
      version: '2.4.1',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const at = iso(clock.now());
    assert.equal(r.body.id, 'compat-1');
    assert.equal(r.body.worker_id, 'compat-1');
    assert.equal(r.body.hostname, 'host-a');
    assert.equal(r.body.max_concurrency, 8);
    assert.deepEqual(r.body.metadata, { region: 'eu' });
    assert.equal(r.body.version, '2.4.1');
    assert.equal(r.body.last_heartbeat, at);
    assert.equal(r.body.last_heartbeat_at, at);
    // WORKER_STALE_SECONDS 120 → every 30 s; DEFAULT_TIMEOUT_SECONDS 300.
    assert.equal(r.body.heartbeat_interval_secs, 30);
    assert.equal(r.body.lease_duration_secs, 300);
    assert.equal(r.body.status, 'active');
    const [row] = await n.node.store.query<{ version: string }>('SELECT version FROM workers WHERE id = $1 AND organization_id = $2', ['compat-1', id]);
    assert.equal(row!.version, '2.4.1');

    await clock.advance(10_000);
    const hb = await api.post('/api/v1/workers/compat-1/heartbeat');
    assert.equal(hb.status, 200);
    for (const w of [hb.body, (await api.get('/api/v1/workers/compat-1')).body]) {
      assert.equal(w.id, 'compat-1');
      assert.equal(w.last_heartbeat, iso(clock.now()));
      assert.equal(w.last_heartbeat, w.last_heartbeat_at);
      assert.equal(w.heartbeat_interval_secs, 30);
      assert.equal(w.lease_duration_secs, 300);
      assert.equal(w.status, 'active');
      assert.equal(w.version, '2.4.1');
    }
    assert.equal((await api.get('/api/v1/workers')).body[0].id, 'compat-1');

    // A re-registration replaces the version; without one it is kept.
    assert.equal((await api.post('/api/v1/workers/register', { worker_id: 'compat-1', version: '2.5.0' })).body.version, '2.5.0');
    assert.equal((await api.post('/api/v1/workers/register', { worker_id: 'compat-1' })).body.version, '2.5.0');
    // A minted id is answered as id too.
    const minted = await api.post('/api/v1/workers/register', { hostname: 'host-b' });
    assert.equal(minted.status, 201);
    assert.equal(minted.body.id, minted.body.worker_id);
  });

  test('422 for a bad version, and nothing changes', async () => {
    const { api, id } = await org();
    for (const version of ['', 'v'.repeat(101), 5, { v: 1 }]) {
      assertInvalid(await api.post('/api/v1/workers/register', { worker_id: 'bad-version', version }), 'version');
    }
    const rows = await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM workers WHERE organization_id = $1', [id]);
    assert.equal(rows[0]!.n, 0);
  });
});

describe('complete and fail without lease_id', () => {
  test('fenced on worker_id alone: the holder completes or fails, another worker gets 409; a lease_id sent must match', async () => {
    const { api } = await org();
    await api.enqueue({ queue_name: 'nolease', payload: { n: 1 } });
    const job = await claimOne(api, 'nolease', 'holder');
    assertError(await api.post(`${JOBS}/${job.id}/complete`, { worker_id: 'someone-else' }), 409, 'LEASE_EXPIRED');
    assertError(await api.post(`${JOBS}/${job.id}/complete`, { worker_id: 'holder', lease_id: randomUUID() }), 409, 'LEASE_EXPIRED');
    assert.equal((await api.get(`${JOBS}/${job.id}`)).body.status, 'processing');
    const done = await api.post(`${JOBS}/${job.id}/complete`, { worker_id: 'holder', result: { ok: 1 } });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.status, 'completed');
    assert.deepEqual((await api.get(`${JOBS}/${job.id}`)).body.result, { ok: 1 });
    // Once completed, the same worker is refused like any stale lease.
    assertError(await api.post(`${JOBS}/${job.id}/complete`, { worker_id: 'holder' }), 409, 'LEASE_EXPIRED');

    await api.enqueue({ queue_name: 'nolease', payload: { n: 2 } });
    const second = await claimOne(api, 'nolease', 'holder');
    assertError(await api.post(`${JOBS}/${second.id}/fail`, { worker_id: 'someone-else', error: 'x' }), 409, 'LEASE_EXPIRED');
    const failed = await api.post(`${JOBS}/${second.id}/fail`, { worker_id: 'holder', error: 'boom' });
    assert.equal(failed.status, 200, JSON.stringify(failed.body));
    assert.equal(failed.body.status, 'scheduled');
    assert.equal(failed.body.last_error, 'boom');
  });

  test('an expired lease is not revived by the worker_id alone', async () => {
    const { api } = await org();
    await api.enqueue({ queue_name: 'nolease-exp', payload: {}, timeout_seconds: 30 });
    const job = await claimOne(api, 'nolease-exp', 'slow');
    await clock.advance(31_000);
    assertError(await api.post(`${JOBS}/${job.id}/complete`, { worker_id: 'slow' }), 409, 'LEASE_EXPIRED');
    assertError(await api.post(`${JOBS}/${job.id}/fail`, { worker_id: 'slow', error: 'late' }), 409, 'LEASE_EXPIRED');
  });
});

describe('workflows', () => {
  test('`key` names a job; the answer carries workflow_id and job_ids; /jobs/:id/dependencies lists both directions', async () => {
    const { api } = await org();
    const r = await api.post('/api/v1/workflows', {
      name: 'etl',
      jobs: [
        { key: 'extract', queue_name: 'wf-compat', payload: { s: 1 } },
        { key: 'transform', queue_name: 'wf-compat', payload: { s: 2 }, depends_on: ['extract'] },
        { name: 'load', key: 'load', queue_name: 'wf-compat', payload: { s: 3 }, depends_on: ['transform'] },
        { key: 'report', queue_name: 'wf-compat', payload: { s: 4 }, depends_on: ['transform'] },
      ],
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.workflow_id, r.body.id);
    assert.deepEqual(r.body.job_ids, r.body.jobs.map((j: any) => j.id));
    assert.deepEqual(r.body.jobs.map((j: any) => j.name), ['extract', 'transform', 'load', 'report']);
    const [extract, transform, load, report] = r.body.job_ids as string[];
    // The same shape on a read.
    const got = await api.get(`/api/v1/workflows/${r.body.id}`);
    assert.deepEqual([got.body.workflow_id, got.body.job_ids], [r.body.id, r.body.job_ids]);

    const deps = await api.get(`${JOBS}/${transform}/dependencies`);
    assert.equal(deps.status, 200, JSON.stringify(deps.body));
    assert.deepEqual(deps.body, {
      job_id: transform,
      workflow_id: r.body.id,
      dependencies: [{ id: extract, job_id: extract, name: 'extract', status: 'pending' }],
      dependents: [
        { id: load, job_id: load, name: 'load', status: 'pending' },
        { id: report, job_id: report, name: 'report', status: 'pending' },
      ],
    });
    // Statuses follow the jobs.
    const first = await claimOne(api, 'wf-compat');
    assert.equal(first.id, extract);
    await api.post(`${JOBS}/${extract}/complete`, { worker_id: 'w1', lease_id: first.lease_id });
    await n.node.workflows.idle();
    const root = (await api.get(`${JOBS}/${extract}/dependencies`)).body;
    assert.deepEqual(root.dependencies, []);
    assert.deepEqual(root.dependents, [{ id: transform, job_id: transform, name: 'transform', status: 'pending' }]);
    assert.deepEqual((await api.get(`${JOBS}/${transform}/dependencies`)).body.dependencies[0].status, 'completed');
    assert.deepEqual((await api.get(`${JOBS}/${load}/dependencies`)).body.dependents, []);

    // A job outside any workflow has none; an unknown job, a non-UUID and another organization's job are 404.
    const plain = await api.enqueue({ queue_name: 'wf-compat-plain' });
    assert.deepEqual((await api.get(`${JOBS}/${plain.id}/dependencies`)).body, { job_id: plain.id, workflow_id: null, dependencies: [], dependents: [] });
    assertError(await api.get(`${JOBS}/${randomUUID()}/dependencies`), 404, 'NOT_FOUND');
    assertError(await api.get(`${JOBS}/nope/dependencies`), 404, 'NOT_FOUND');
    const other = await org();
    assertError(await other.api.get(`${JOBS}/${transform}/dependencies`), 404, 'NOT_FOUND');
    // jobs:read is needed.
    const writer = await insertKey(n, { organizationId: (await api.get('/api/v1/auth/me')).body.organization_id, permissions: ['jobs:write'] });
    assertError(await api.as(writer.key).get(`${JOBS}/${transform}/dependencies`), 403, 'FORBIDDEN');
  });

  test('422 when an entry has neither name nor key, or two that differ; nothing is created', async () => {
    const { api, id } = await org();
    assertInvalid(await api.post('/api/v1/workflows', { name: 'w', jobs: [{ queue_name: 'q', payload: {} }] }), 'jobs.0.name');
    assertInvalid(await api.post('/api/v1/workflows', { name: 'w', jobs: [{ name: 'a', key: 'b', queue_name: 'q', payload: {} }] }), 'jobs.0.key');
    assertInvalid(
      await api.post('/api/v1/workflows', { name: 'w', jobs: [{ key: 'a', queue_name: 'q', payload: {} }, { key: 'b', queue_name: 'q', payload: {}, depends_on: ['c'] }] }),
      'jobs.1.depends_on',
    );
    const rows = await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM workflows WHERE organization_id = $1', [id]);
    assert.equal(rows[0]!.n, 0);
  });
});

describe('schedules', () => {
  test('description is stored and updated, is_active follows pause; /history answers the runs with the same paging', async () => {
    const { api } = await org();
    const s = await api.post('/api/v1/schedules', { name: 'nightly', description: 'the nightly report', cron_expression: '0 * * * * *', queue_name: 'cron-compat' });
    assert.equal(s.status, 201, JSON.stringify(s.body));
    assert.equal(s.body.description, 'the nightly report');
    assert.equal(s.body.is_active, true);
    const id = s.body.id;
    assert.equal((await api.get(`/api/v1/schedules/${id}`)).body.description, 'the nightly report');
    assert.equal((await api.put(`/api/v1/schedules/${id}`, { priority: 1 })).body.description, 'the nightly report', 'kept when left out');
    assert.equal((await api.put(`/api/v1/schedules/${id}`, { description: 'hourly now' })).body.description, 'hourly now');
    const paused = await api.post(`/api/v1/schedules/${id}/pause`);
    assert.deepEqual([paused.body.paused, paused.body.is_active], [true, false]);
    assert.equal((await api.get('/api/v1/schedules')).body[0].is_active, false);
    const resumed = await api.post(`/api/v1/schedules/${id}/resume`);
    assert.deepEqual([resumed.body.paused, resumed.body.is_active], [false, true]);
    assert.equal((await api.put(`/api/v1/schedules/${id}`, { description: null })).body.description, null);
    assertInvalid(await api.put(`/api/v1/schedules/${id}`, { description: 'x'.repeat(1001) }), 'description');
    assertInvalid(await api.put(`/api/v1/schedules/${id}`, { description: 5 }), 'description');
    assert.equal((await api.get(`/api/v1/schedules/${id}`)).body.description, null, 'a refused update changed nothing');

    for (let i = 0; i < 3; i++) await clock.advance(60_000);
    await api.post(`/api/v1/schedules/${id}/trigger`);
    const runs = await api.get(`/api/v1/schedules/${id}/runs`);
    const history = await api.get(`/api/v1/schedules/${id}/history`);
    assert.equal(history.status, 200);
    assert.equal(runs.body.length, 4);
    assert.deepEqual(history.body, runs.body);
    // Same paging: each list's cursor works on the other.
    const page = await api.get(`/api/v1/schedules/${id}/history?limit=3`);
    assert.equal(page.body.length, 3);
    const cursor = page.headers.get('x-next-cursor')!;
    assert.ok(page.headers.get('link')!.includes(`/api/v1/schedules/${id}/history?`));
    assert.deepEqual((await api.get(`/api/v1/schedules/${id}/runs?limit=3&cursor=${cursor}`)).body, runs.body.slice(3));
    assert.deepEqual((await api.get(`/api/v1/schedules/${id}/history?limit=3&cursor=${cursor}`)).body, runs.body.slice(3));
    assertInvalid(await api.get(`/api/v1/schedules/${id}/history?limit=0`), 'limit');
    const other = await org();
    assertError(await other.api.get(`/api/v1/schedules/${id}/history`), 404, 'NOT_FOUND');
    assertError(await api.get(`/api/v1/schedules/${randomUUID()}/history`), 404, 'NOT_FOUND');
  });
});

describe('bulk, stats, queues', () => {
  test('bulk results carry job_id beside id', async () => {
    const { api } = await org();
    const r = await api.post(`${JOBS}/bulk`, { queue_name: 'bulk-compat', jobs: [{ payload: { a: 1 } }, { payload: 'bad' }, { payload: { b: 2 } }] });
    assert.equal(r.status, 200);
    assert.equal(r.body.succeeded.length, 2);
    for (const s of r.body.succeeded) assert.equal(s.job_id, s.id);
    assert.equal((await api.get(`${JOBS}/${r.body.succeeded[0].job_id}`)).body.payload.a, 1);
  });

  test('/jobs/stats gives the counts at the top level too', async () => {
    const { api } = await org();
    await api.enqueue({ queue_name: 'stats-compat' });
    await api.enqueue({ queue_name: 'stats-compat', scheduled_at: iso(clock.now() + 60_000) });
    await api.enqueue({ queue_name: 'stats-other' });
    const q = (await api.get(`${JOBS}/stats?queue_name=stats-compat`)).body;
    assert.deepEqual(q.counts, { pending: 1, scheduled: 1, processing: 0, completed: 0, deadletter: 0, cancelled: 0 });
    for (const [status, count] of Object.entries(q.counts)) assert.equal(q[status], count);
    assert.equal(q.total, 2);
    const all = (await api.get(`${JOBS}/stats`)).body;
    assert.equal(all.pending, 2);
    assert.equal(all.queue_name, null);
  });

  test('queue get, pause and resume answers carry queue_name', async () => {
    const { api } = await org();
    assert.equal((await api.post('/api/v1/queues', { name: 'qn-compat' })).body.queue_name, 'qn-compat');
    for (const r of [
      await api.get('/api/v1/queues/qn-compat'),
      await api.post('/api/v1/queues/qn-compat/pause', { reason: 'x' }),
      await api.post('/api/v1/queues/qn-compat/resume'),
    ]) {
      assert.equal(r.status, 200);
      assert.equal(r.body.queue_name, 'qn-compat');
      assert.equal(r.body.name, 'qn-compat');
    }
    assert.equal((await api.get('/api/v1/queues')).body[0].queue_name, 'qn-compat');
  });
});

describe('API keys', () => {
  test('is_active on every answer; PUT renames and replaces permissions, at once for the key and its tokens', async () => {
    const { api, id } = await org();
    const created = await api.post('/api/v1/api-keys', { name: 'ci', permissions: ['jobs:read', 'jobs:write'] });
    assert.equal(created.status, 201);
    assert.equal(created.body.is_active, true);
    const keyId = created.body.id;
    const ci = api.as(created.body.key);
    assert.equal((await api.get(`/api/v1/api-keys/${keyId}`)).body.is_active, true);
    // The key works, and so does a token from it, before the change (and fills the key caches).
    assert.equal((await ci.post(JOBS, { queue_name: 'keys-compat', payload: {} })).status, 201);
    const token = (await api.as('').post('/api/v1/auth/login', { api_key: created.body.key })).body.access_token;
    const viaToken = api.as(token);
    assert.equal((await viaToken.post(JOBS, { queue_name: 'keys-compat', payload: {} })).status, 201);

    const renamed = await api.put(`/api/v1/api-keys/${keyId}`, { name: 'ci-read-only' });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    assert.deepEqual([renamed.body.name, renamed.body.permissions, renamed.body.is_active], ['ci-read-only', ['jobs:read', 'jobs:write'], true]);
    const narrowed = await api.put(`/api/v1/api-keys/${keyId}`, { permissions: ['jobs:read'] });
    assert.deepEqual([narrowed.body.name, narrowed.body.permissions], ['ci-read-only', ['jobs:read']]);
    // At once: the key and the token issued before are refused the write, and may still read.
    assertError(await ci.post(JOBS, { queue_name: 'keys-compat', payload: {} }), 403, 'FORBIDDEN');
    assertError(await viaToken.post(JOBS, { queue_name: 'keys-compat', payload: {} }), 403, 'FORBIDDEN');
    assert.equal((await ci.get(`${JOBS}/stats`)).status, 200);
    assert.deepEqual((await viaToken.get('/api/v1/auth/me')).body.permissions, ['jobs:read']);
    // Widening the key does not widen a token issued under narrower permissions… but the key itself gets them.
    const widened = await api.put(`/api/v1/api-keys/${keyId}`, { permissions: ['jobs:read', 'queues:read', '*'] });
    assert.deepEqual(widened.body.permissions, ['*'], 'a list holding * is stored as ["*"], as on create');
    assert.equal((await ci.post(JOBS, { queue_name: 'keys-compat', payload: {} })).status, 201);
    assert.deepEqual((await viaToken.get('/api/v1/auth/me')).body.permissions, ['jobs:read', 'jobs:write']);
    // An empty body changes nothing.
    assert.deepEqual((await api.put(`/api/v1/api-keys/${keyId}`, {})).body.permissions, ['*']);

    // The rules of create: 422 and nothing changes.
    for (const [body, field] of [
      [{ name: '' }, 'name'],
      [{ name: '   ' }, 'name'],
      [{ name: 'x'.repeat(101) }, 'name'],
      [{ permissions: [] }, 'permissions'],
      [{ permissions: ['jobs:read', 'jobs:read'] }, 'permissions'],
      [{ permissions: ['admin'] }, 'permissions.0'],
      [{ permissions: 'jobs:read' }, 'permissions'],
    ] as const) {
      assertInvalid(await api.put(`/api/v1/api-keys/${keyId}`, body), field);
    }
    const [row] = await n.node.store.query<{ name: string; permissions: string[] }>('SELECT name, permissions FROM api_keys WHERE id = $1', [keyId]);
    assert.deepEqual([row!.name, row!.permissions], ['ci-read-only', ['*']]);

    // `*` is needed; another organization's key is 404; unknown and non-UUID ids are 404.
    const reader = await insertKey(n, { organizationId: id, permissions: ['jobs:read', 'jobs:write', 'queues:read', 'queues:write', 'dlq:read', 'dlq:write'] });
    assertError(await api.as(reader.key).put(`/api/v1/api-keys/${keyId}`, { name: 'mine' }), 403, 'FORBIDDEN');
    const other = await org();
    assertError(await other.api.put(`/api/v1/api-keys/${keyId}`, { name: 'stolen' }), 404, 'NOT_FOUND');
    assertError(await api.put(`/api/v1/api-keys/${randomUUID()}`, { name: 'x' }), 404, 'NOT_FOUND');
    assertError(await api.put('/api/v1/api-keys/nope', { name: 'x' }), 404, 'NOT_FOUND');

    // A revoked key: is_active false, and 409 on PUT.
    const revoked = await api.delete(`/api/v1/api-keys/${keyId}`);
    assert.equal(revoked.body.is_active, false);
    assertError(await api.put(`/api/v1/api-keys/${keyId}`, { name: 'back' }), 409, 'CONFLICT');
    assert.equal((await api.get(`/api/v1/api-keys/${keyId}`)).body.name, 'ci-read-only');
    assertError(await ci.get(`${JOBS}/stats`), 401, 'UNAUTHORIZED');
  });
});

describe('dashboard overview', () => {
  test("the caller's organization only: version, uptime, store, job counts, 24 h figures, queues, workers", async () => {
    const { api } = await org();
    const other = await org();
    await other.api.enqueue({ queue_name: 'elsewhere' });

    const started = clock.now();
    await api.post('/api/v1/workers/register', { worker_id: `dash-live-${randomUUID().slice(0, 8)}` });
    const silent = `dash-silent-${randomUUID().slice(0, 8)}`;
    await api.post('/api/v1/workers/register', { worker_id: silent });
    // Three jobs due now: one waits 10 s and runs 20 s, one waits 30 s and runs 40 s; one is dead-lettered.
    const a = await api.enqueue({ queue_name: 'dash-a' });
    const b = await api.enqueue({ queue_name: 'dash-b' });
    const c = await api.enqueue({ queue_name: 'dash-b', max_retries: 0 });
    await api.enqueue({ queue_name: 'dash-a', scheduled_at: iso(started + 3_600_000) });
    // One that fails, and is due again (pending) after its retry delay (1 min): its last claim is not a wait to
    // count, its due time moved past it.
    const r = await api.enqueue({ queue_name: 'dash-r' });
    await clock.advance(10_000);
    const ja = await claimOne(api, 'dash-a');
    assert.equal(ja.id, a.id);
    const jr = await claimOne(api, 'dash-r');
    await api.post(`${JOBS}/${r.id}/fail`, { worker_id: 'w1', lease_id: jr.lease_id, error: 'again later' });
    await clock.advance(20_000);
    await api.post(`${JOBS}/${a.id}/complete`, { worker_id: 'w1', lease_id: ja.lease_id });
    const [jb, jc] = await api.claim('dash-b', { worker_id: 'w1', limit: 2 });
    assert.deepEqual([jb.id, jc.id], [b.id, c.id]);
    await clock.advance(40_000);
    await api.post(`${JOBS}/${b.id}/complete`, { worker_id: 'w1', lease_id: jb.lease_id });
    await api.post(`${JOBS}/${c.id}/fail`, { worker_id: 'w1', lease_id: jc.lease_id, error: 'fatal' });
    // The live worker heartbeats; the silent one does not, for longer than two intervals (60 s), not yet reaped.
    await clock.advance(30_000);
    const live = (await api.get('/api/v1/workers')).body.find((w: any) => w.id.startsWith('dash-live'))!;
    await api.post(`/api/v1/workers/${live.id}/heartbeat`);

    const res = await api.get('/api/v1/dashboard');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const d = res.body;
    assert.equal(d.version, res.headers.get('x-sluice-version'));
    assert.ok(d.uptime_seconds >= 100, `uptime ${d.uptime_seconds}`);
    assert.equal(d.at, iso(clock.now()));
    assert.deepEqual([d.store.kind, d.store.status], [process.env.SLUICE_TEST_STORE === 'pg' ? 'postgresql' : 'embedded', 'ok']);
    assert.deepEqual(d.jobs.by_status, { pending: 1, scheduled: 1, processing: 0, completed: 2, deadletter: 1, cancelled: 0 });
    assert.equal(d.jobs.total, 5);
    assert.equal(d.jobs.completed_24h, 2);
    assert.equal(d.jobs.failed_24h, 1);
    assert.equal(d.jobs.failed_attempts_24h, 2);
    // Waits: 10 s (a), 30 s (b and c); processing: 20 s (a), 40 s (b).
    assert.equal(d.jobs.avg_wait_seconds_24h, 23.333);
    assert.equal(d.jobs.avg_processing_seconds_24h, 30);
    assert.deepEqual(
      d.queues.map((q: any) => [q.name, q.paused, q.counts.completed, q.counts.deadletter, q.counts.scheduled]),
      [['dash-a', false, 1, 0, 1], ['dash-b', false, 1, 1, 0], ['dash-r', false, 0, 0, 0]],
    );
    assert.equal(d.more_queues, false);
    assert.deepEqual(d.workers, { total: 2, healthy: 1, unhealthy: 1 });

    // A day later the 24 h figures are empty; the counts stay.
    await clock.advance(86_400_000);
    const later = (await api.get('/api/v1/dashboard')).body;
    assert.deepEqual([later.jobs.completed_24h, later.jobs.failed_24h, later.jobs.avg_wait_seconds_24h, later.jobs.avg_processing_seconds_24h], [0, 0, null, null]);
    assert.equal(later.jobs.by_status.completed, 2);
    assert.equal(later.jobs.failed_attempts_24h, 0);

    // More than 20 queues: the first 20 by name, and more_queues.
    for (let i = 0; i < 21; i++) await api.post('/api/v1/queues', { name: `dash-many-${String(i).padStart(2, '0')}` });
    const many = (await api.get('/api/v1/dashboard')).body;
    assert.equal(many.queues.length, 20);
    assert.equal(many.more_queues, true);

    // jobs:read is needed.
    const { key } = await insertKey(n, { organizationId: (await api.get('/api/v1/auth/me')).body.organization_id, permissions: ['queues:read'] });
    assertError(await api.as(key).get('/api/v1/dashboard'), 403, 'FORBIDDEN');
    assertError(await api.as('').get('/api/v1/dashboard'), 401, 'UNAUTHORIZED');
    // The other organization sees its own job only.
    const theirs = (await other.api.get('/api/v1/dashboard')).body;
    assert.deepEqual([theirs.jobs.total, theirs.queues.map((q: any) => q.name), theirs.workers.total], [1, ['elsewhere'], 0]);
  });
});

describe('expires_at', () => {
  test('a job not started by then is cancelled with last_error "expired" and a job.cancelled event; a started one is not', async () => {
    const { api, events } = await org();
    const now = clock.now();
    const soon = await api.enqueue({ queue_name: 'exp', payload: { n: 1 }, expires_at: iso(now + 60_000) });
    assert.equal(soon.expires_at, iso(now + 60_000));
    const started = await api.enqueue({ queue_name: 'exp-started', payload: { n: 2 }, expires_at: iso(now + 60_000) });
    const delayed = await api.enqueue({ queue_name: 'exp', payload: { n: 3 }, scheduled_at: iso(now + 30_000), expires_at: iso(now + 90_000) });
    const never = await api.enqueue({ queue_name: 'exp', payload: { n: 4 } });
    assert.equal(never.expires_at, null);
    const held = await claimOne(api, 'exp-started');
    assert.equal(held.id, started.id);

    await clock.advance(59_999);
    assert.equal((await api.get(`${JOBS}/${soon.id}`)).body.status, 'pending');
    await clock.advance(1);
    const gone = (await api.get(`${JOBS}/${soon.id}`)).body;
    assert.deepEqual([gone.status, gone.last_error], ['cancelled', 'expired']);
    assert.equal(gone.completed_at, iso(now + 60_000));
    const cancelled = events.filter((e) => e.event === 'job.cancelled');
    assert.deepEqual(cancelled.map((e) => [e.data.job_id, e.data.reason]), [[soon.id, 'expired']]);
    // The claimed one runs on and completes.
    assert.equal((await api.get(`${JOBS}/${started.id}`)).body.status, 'processing');
    assert.equal((await api.post(`${JOBS}/${started.id}/complete`, { worker_id: 'w1', lease_id: held.lease_id })).status, 200);

    // The delayed one fell due at 30 s and was not claimed by 90 s. A claim at that very instant does not get it.
    await clock.advance(29_999);
    assert.equal((await api.get(`${JOBS}/${delayed.id}`)).body.status, 'pending');
    await clock.set(now + 90_000);
    const claimed = await api.claim('exp', { worker_id: 'w2', limit: 10 });
    assert.deepEqual(claimed.map((j) => j.id), [never.id]);
    assert.equal((await api.get(`${JOBS}/${delayed.id}`)).body.last_error, 'expired');
    // Counted as cancellations.
    assert.equal((await api.get(`${JOBS}/stats?queue_name=exp`)).body.cancelled, 2);

    // A retry is another chance: the expiry no longer holds.
    const retried = await api.post(`${JOBS}/${soon.id}/retry`);
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.deepEqual([retried.body.status, retried.body.expires_at], ['pending', null]);
    await clock.advance(3_600_000);
    assert.equal((await api.get(`${JOBS}/${soon.id}`)).body.status, 'pending');
  });

  test('a claim given back (unclaim: its client left) before the expiry leaves the expiry in force', async () => {
    const { api } = await org();
    const now = clock.now();
    const job = await api.enqueue({ queue_name: 'exp-unclaim', payload: {}, expires_at: iso(now + 10_000) });
    const claimed = await claimOne(api, 'exp-unclaim');
    assert.equal(claimed.id, job.id);
    // What the server does with the jobs of a long poll whose client left (Jobs.unclaim).
    await n.node.pool.ask(await orgIdOf(api), 'exp-unclaim', 'unclaim', { items: [{ id: job.id, lease_id: claimed.lease_id }] });
    assert.equal((await api.get(`${JOBS}/${job.id}`)).body.status, 'pending');
    await clock.advance(10_000);
    assert.equal((await api.get(`${JOBS}/${job.id}`)).body.last_error, 'expired');
  });

  test('bulk items and workflow jobs carry it; 422 for a past instant or one not after scheduled_at, and nothing is created', async () => {
    const { api, id } = await org();
    const now = clock.now();
    const bulk = await api.post(`${JOBS}/bulk`, {
      queue_name: 'exp-bulk',
      jobs: [{ payload: {}, expires_at: iso(now + 5_000) }, { payload: {}, expires_at: iso(now - 1) }, { payload: {} }],
    });
    assert.equal(bulk.body.success_count, 2);
    assert.equal(bulk.body.failed[0].index, 1);
    assert.equal(bulk.body.failed[0].error.details[0].field, 'expires_at');
    const wf = await api.post('/api/v1/workflows', {
      name: 'exp-wf',
      jobs: [
        { key: 'a', queue_name: 'exp-wf', payload: {} },
        { key: 'b', queue_name: 'exp-wf', payload: {}, depends_on: ['a'], expires_at: iso(now + 5_000) },
      ],
    });
    assert.equal(wf.status, 201, JSON.stringify(wf.body));
    await clock.advance(5_000);
    await n.node.workflows.idle();
    assert.equal((await api.get(`${JOBS}/${bulk.body.succeeded[0].id}`)).body.last_error, 'expired');
    assert.equal((await api.get(`${JOBS}/${bulk.body.succeeded[1].id}`)).body.status, 'pending');
    const blocked = (await api.get(`${JOBS}/${wf.body.job_ids[1]}`)).body;
    assert.deepEqual([blocked.status, blocked.last_error], ['cancelled', 'expired']);

    const before = (await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs WHERE organization_id = $1', [id]))[0]!.n;
    const t = clock.now();
    assertInvalid(await api.post(JOBS, { queue_name: 'exp-bad', payload: {}, expires_at: iso(t) }), 'expires_at');
    assertInvalid(await api.post(JOBS, { queue_name: 'exp-bad', payload: {}, expires_at: 'tomorrow' }), 'expires_at');
    assertInvalid(await api.post(JOBS, { queue_name: 'exp-bad', payload: {}, expires_at: 5 }), 'expires_at');
    assertInvalid(await api.post(JOBS, { queue_name: 'exp-bad', payload: {}, scheduled_at: iso(t + 60_000), expires_at: iso(t + 60_000) }), 'expires_at');
    assertInvalid(await api.post('/api/v1/workflows', { name: 'w', jobs: [{ key: 'a', queue_name: 'exp-bad', payload: {}, expires_at: iso(t - 1) }] }), 'jobs.0.expires_at');
    const afterward = (await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs WHERE organization_id = $1', [id]))[0]!.n;
    assert.equal(afterward, before);
  });

  test('the expiry survives a restart: the rebuilt actor cancels the job at its time', async () => {
    const clock1 = new ManualClock(T0);
    const store = await freshStore();
    const first = await startTestNode({ clock: clock1, store });
    try {
      const api = first.api;
      const job = await api.enqueue({ queue_name: 'exp-restart', payload: {}, expires_at: iso(T0 + 60_000) });
      const keep = await api.enqueue({ queue_name: 'exp-restart', payload: {}, expires_at: iso(T0 + 600_000) });
      const [row] = await first.node.store.query<{ expires_at: Date }>('SELECT expires_at FROM jobs WHERE id = $1', [job.id]);
      assert.equal(new Date(row!.expires_at).toISOString(), iso(T0 + 60_000));
      await first.node.stop();

      const clock2 = new ManualClock(T0 + 30_000);
      const node = await startNode({ config: loadConfig(first.env), clock: clock2 });
      try {
        const again = new Api(node.url, api.key);
        assert.equal((await again.get(`${JOBS}/${job.id}`)).body.status, 'pending');
        await clock2.advance(30_000);
        const gone = (await again.get(`${JOBS}/${job.id}`)).body;
        assert.deepEqual([gone.status, gone.last_error], ['cancelled', 'expired']);
        assert.equal((await again.get(`${JOBS}/${keep.id}`)).body.status, 'pending');
        const [claimed] = await again.claim('exp-restart');
        assert.equal(claimed.id, keep.id);
      } finally {
        await node.stop();
      }
    } finally {
      await first.stop().catch(() => {});
      await store.dispose();
    }
  });
});

describe('the SDK', () => {
  test('apiKeys.update, jobs.dependencies, schedules.history and dashboard() reach the new routes', async () => {
    const { api } = await org();
    const sluice = new SluiceClient({ url: n.node.url, apiKey: api.key });
    const key = await sluice.apiKeys.create('sdk', ['jobs:read']);
    const updated = await sluice.apiKeys.update(key.id, { name: 'sdk-2', permissions: ['jobs:read', 'queues:read'] });
    assert.deepEqual([updated.name, updated.permissions, updated.is_active], ['sdk-2', ['jobs:read', 'queues:read'], true]);
    await sluice.apiKeys.revoke(key.id);
    await assert.rejects(sluice.apiKeys.update(key.id, { name: 'x' }), ConflictError);

    const wf = await sluice.workflows.create({ name: 'sdk', jobs: [{ key: 'a', queue_name: 'sdk-wf', payload: {} }, { key: 'b', queue_name: 'sdk-wf', payload: {}, depends_on: ['a'] }] });
    const deps = await sluice.jobs.dependencies(wf.job_ids[1]!);
    assert.deepEqual(deps.dependencies.map((d) => d.name), ['a']);

    const s = await sluice.schedules.create({ name: 'sdk', description: 'd', cron_expression: '0 * * * * *', queue_name: 'sdk-cron' });
    assert.equal(s.description, 'd');
    await sluice.schedules.trigger(s.id);
    assert.equal((await sluice.schedules.history(s.id).toArray()).length, 1);

    const overview = await sluice.dashboard();
    assert.equal(overview.jobs.total, 3);
    assert.ok(overview.queues.some((q) => q.name === 'sdk-wf'));
  });
});

describe('unknown routes', () => {
  test('401 without a valid credential (a wrong admin key is none), 404 with one', async () => {
    const { api } = await org();
    assertError(await api.as('').get('/api/v1/no-such-thing'), 401, 'UNAUTHORIZED');
    assertError(await api.as('svc_test_wrong').get('/api/v1/no-such-thing'), 401, 'UNAUTHORIZED');
    assertError(await api.get('/api/v1/no-such-thing'), 404, 'NOT_FOUND');
    assertError(await api.as('').get('/api/v1/admin/no-such-thing', { 'x-admin-key': 'wrong' }), 401, 'UNAUTHORIZED');
  });
});

async function orgIdOf(api: Api): Promise<string> {
  return (await api.get('/api/v1/auth/me')).body.organization_id;
}
