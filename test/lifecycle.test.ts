// The job lifecycle over real HTTP: enqueue → claim → complete / fail / heartbeat / cancel, idempotency,
// and priority order, on the store chosen by SLUICE_TEST_STORE.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestNode, type Api, type TestNode } from './helpers.js';

describe('job lifecycle', () => {
  let n: TestNode;
  let api: Api;
  before(async () => {
    n = await startTestNode();
    api = n.api;
  });
  after(() => n.stop());

  test('enqueue → get → claim → complete', async () => {
    const created = await api.post('/api/v1/jobs', { queue_name: 'life', payload: { a: 1 }, tags: { env: 'test' } });
    assert.equal(created.status, 201);
    assert.equal(created.body.created, true);
    assert.equal(created.body.status, 'pending');
    assert.deepEqual(created.body.payload, { a: 1 });
    assert.match(created.body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const got = await api.get(`/api/v1/jobs/${created.body.id}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.id, created.body.id);
    assert.deepEqual(got.body.tags, { env: 'test' });

    const [job] = await api.claim('life');
    assert.equal(job.id, created.body.id);
    assert.equal(job.status, 'processing');
    assert.deepEqual(job.payload, { a: 1 });
    assert.ok(job.lease_id);

    const done = await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: job.lease_id, result: { ok: true } });
    assert.equal(done.status, 200);
    assert.equal(done.body.status, 'completed');

    const after = await api.get(`/api/v1/jobs/${job.id}`);
    assert.equal(after.body.status, 'completed');
    assert.deepEqual(after.body.result, { ok: true });
    assert.equal(after.body.lease_id, null);

    const again = await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: job.lease_id });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'LEASE_EXPIRED');
  });

  test('idempotency key returns the existing job with 200', async () => {
    const a = await api.post('/api/v1/jobs', { queue_name: 'idem', payload: { n: 1 }, idempotency_key: 'k-1' });
    assert.equal(a.status, 201);
    const b = await api.post('/api/v1/jobs', { queue_name: 'idem', payload: { n: 2 }, idempotency_key: 'k-1' });
    assert.equal(b.status, 200);
    assert.equal(b.body.created, false);
    assert.equal(b.body.id, a.body.id);
    assert.deepEqual(b.body.payload, { n: 1 });
    // Unique per organization, across queues.
    const c = await api.post('/api/v1/jobs', { queue_name: 'other', payload: {}, idempotency_key: 'k-1' });
    assert.equal(c.status, 200);
    assert.equal(c.body.id, a.body.id);
    // Concurrent duplicates collapse into one job.
    const many = await Promise.all(
      Array.from({ length: 20 }, (_, i) => api.post('/api/v1/jobs', { queue_name: i % 2 ? 'idem' : 'idem2', payload: {}, idempotency_key: 'k-race' })),
    );
    assert.equal(new Set(many.map((r) => r.body.id)).size, 1);
    assert.equal(many.filter((r) => r.status === 201).length, 1);
  });

  test('priority 10 before 0 before -10, FIFO within a priority', async () => {
    const ids: Record<string, string[]> = { '10': [], '0': [], '-10': [] };
    for (let i = 0; i < 3; i++) {
      for (const p of [0, -10, 10]) ids[p]!.push((await api.enqueue({ queue_name: 'prio', priority: p })).id);
    }
    const jobs = await api.claim('prio', { limit: 9 });
    assert.deepEqual(
      jobs.map((j) => j.id),
      [...ids['10']!, ...ids['0']!, ...ids['-10']!],
    );
  });

  test('fail with retries left schedules a retry; not retryable dead-letters', async () => {
    const j = await api.enqueue({ queue_name: 'failing', max_retries: 2 });
    const [c] = await api.claim('failing');
    const f = await api.post(`/api/v1/jobs/${j.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: 'boom' });
    assert.equal(f.status, 200);
    assert.equal(f.body.status, 'scheduled');
    assert.equal(f.body.retry_count, 1);
    const got = await api.get(`/api/v1/jobs/${j.id}`);
    assert.equal(got.body.status, 'scheduled');
    assert.equal(got.body.last_error, 'boom');
    assert.equal(got.body.errors.length, 1);
    assert.equal(got.body.errors[0].error, 'boom');

    const k = await api.enqueue({ queue_name: 'failing2' });
    const [d] = await api.claim('failing2');
    const g = await api.post(`/api/v1/jobs/${k.id}/fail`, { worker_id: 'w1', lease_id: d.lease_id, error: 'fatal', retryable: false });
    assert.equal(g.body.status, 'deadletter');
    const dl = await api.get(`/api/v1/jobs/${k.id}`);
    assert.equal(dl.body.status, 'deadletter');
    assert.deepEqual(dl.body.payload, {});
  });

  test('heartbeat extends a live lease; wrong lease or worker is 409', async () => {
    const j = await api.enqueue({ queue_name: 'hb' });
    const [c] = await api.claim('hb', { lease_duration_secs: 30 });
    const hb = await api.post(`/api/v1/jobs/${j.id}/heartbeat`, { worker_id: 'w1', lease_id: c.lease_id, lease_duration_secs: 600 });
    assert.equal(hb.status, 200);
    assert.ok(Date.parse(hb.body.lease_expires_at) > Date.parse(c.lease_expires_at));
    const wrongLease = await api.post(`/api/v1/jobs/${j.id}/heartbeat`, { worker_id: 'w1', lease_id: '00000000-0000-0000-0000-000000000000' });
    assert.equal(wrongLease.status, 409);
    assert.equal(wrongLease.body.code, 'LEASE_EXPIRED');
    const wrongWorker = await api.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: 'w2', lease_id: c.lease_id });
    assert.equal(wrongWorker.status, 409);
    // Without lease_id a heartbeat is fenced on the worker id.
    const noLease = await api.post(`/api/v1/jobs/${j.id}/heartbeat`, { worker_id: 'w1' });
    assert.equal(noLease.status, 200);
  });

  test('cancel a pending job; a processing job then loses its lease; a finished job is 409', async () => {
    const j = await api.enqueue({ queue_name: 'cancel' });
    const del = await api.delete(`/api/v1/jobs/${j.id}`);
    assert.equal(del.status, 200);
    assert.equal(del.body.status, 'cancelled');
    assert.equal((await api.get(`/api/v1/jobs/${j.id}`)).body.status, 'cancelled');
    assert.deepEqual(await api.claim('cancel'), []);
    const again = await api.delete(`/api/v1/jobs/${j.id}`);
    assert.equal(again.status, 409);

    const p = await api.enqueue({ queue_name: 'cancel' });
    const [c] = await api.claim('cancel');
    assert.equal((await api.delete(`/api/v1/jobs/${p.id}`)).status, 200);
    const late = await api.post(`/api/v1/jobs/${p.id}/complete`, { worker_id: 'w1', lease_id: c.lease_id });
    assert.equal(late.status, 409);
    // The worker that held it is told why (docs/flow-control.md); another worker's lease would be LEASE_EXPIRED.
    assert.equal(late.body.code, 'JOB_CANCELLED');
  });

  test('a delayed job is not claimable before scheduled_at', async () => {
    const j = await api.enqueue({ queue_name: 'later', scheduled_at: new Date(Date.now() + 3_600_000).toISOString() });
    assert.equal(j.status, 'scheduled');
    assert.deepEqual(await api.claim('later'), []);
  });
});
