// Bulk enqueue, batch acknowledgement, priority changes, job retry, the DLQ's retry and purge, and queue actions (create, pause,
// resume, configure, delete), over real HTTP on the store chosen by SLUICE_TEST_STORE.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestNode, type Api, type TestNode } from './helpers.js';
import { assertError, assertInvalid } from './http-assert.js';

let n: TestNode;
let api: Api;
before(async () => {
  n = await startTestNode();
  api = n.api;
});
after(() => n.stop());

/** Claims one job of the queue and fails it for good. */
async function deadLetter(queue: string, payload: Record<string, unknown> = {}): Promise<string> {
  const job = await api.enqueue({ queue_name: queue, payload });
  const [c] = await api.claim(queue);
  assert.equal(c.id, job.id);
  const f = await api.post(`/api/v1/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: 'bad', retryable: false });
  assert.equal(f.body.status, 'deadletter');
  return job.id;
}

describe('bulk enqueue', () => {
  test('valid and invalid items: each reported, the valid ones created', async () => {
    const r = await api.post('/api/v1/jobs/bulk', {
      queue_name: 'bulk',
      priority: 5,
      jobs: [{ payload: { i: 0 } }, { payload: 'not an object' }, { payload: { i: 2 }, queue_name: 'bulk-b' }, { queue_name: '.bad', payload: {} }],
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.total, 4);
    assert.equal(r.body.success_count, 2);
    assert.equal(r.body.failure_count, 2);
    assert.deepEqual(r.body.succeeded.map((x: { index: number }) => x.index), [0, 2]);
    assert.deepEqual(r.body.failed.map((x: { index: number }) => x.index), [1, 3]);
    for (const f of r.body.failed) {
      assert.equal(f.error.code, 'VALIDATION_ERROR');
      assert.equal(f.error.status, 422);
    }
    const first = await api.get(`/api/v1/jobs/${r.body.succeeded[0].id}`);
    assert.equal(first.body.queue_name, 'bulk');
    assert.equal(first.body.priority, 5, 'top-level fields are defaults for the items');
    assert.equal((await api.get(`/api/v1/jobs/${r.body.succeeded[1].id}`)).body.queue_name, 'bulk-b');
  });

  test('a bare array is accepted; 101 items is 422; an empty list is 422', async () => {
    const bare = await api.post('/api/v1/jobs/bulk', [{ queue_name: 'bulk-bare', payload: {} }]);
    assert.equal(bare.status, 200);
    assert.equal(bare.body.success_count, 1);
    const tooMany = Array.from({ length: 101 }, () => ({ queue_name: 'bulk-big', payload: {} }));
    assertInvalid(await api.post('/api/v1/jobs/bulk', { jobs: tooMany }));
    assertInvalid(await api.post('/api/v1/jobs/bulk', tooMany));
    assertInvalid(await api.post('/api/v1/jobs/bulk', { jobs: [] }));
    const none = await n.node.store.query(`SELECT 1 FROM jobs WHERE queue_name = 'bulk-big'`);
    assert.equal(none.length, 0);
  });

  test('idempotency keys inside one request and across requests', async () => {
    const r = await api.post('/api/v1/jobs/bulk', {
      jobs: [
        { queue_name: 'bulk-idem', payload: { n: 1 }, idempotency_key: 'b-1' },
        { queue_name: 'bulk-idem', payload: { n: 2 }, idempotency_key: 'b-1' },
        { queue_name: 'bulk-idem-2', payload: { n: 3 }, idempotency_key: 'b-1' },
        { queue_name: 'bulk-idem', payload: { n: 4 }, idempotency_key: 'b-2' },
      ],
    });
    assert.equal(r.body.success_count, 4);
    const ids = r.body.succeeded.map((x: { id: string }) => x.id);
    assert.equal(ids[0], ids[1]);
    assert.equal(ids[0], ids[2]);
    assert.notEqual(ids[0], ids[3]);
    assert.equal(r.body.succeeded.filter((x: { created: boolean }) => x.created).length, 2);
    const again = await api.post('/api/v1/jobs/bulk', { jobs: [{ queue_name: 'bulk-idem', payload: {}, idempotency_key: 'b-2' }] });
    assert.deepEqual(again.body.succeeded, [{ index: 0, id: ids[3], job_id: ids[3], created: false }]);
  });
});

describe('batch acknowledgement', () => {
  test('one stale lease, a cancelled job and an unknown id fail alone; the others complete, across queues', async () => {
    for (let i = 0; i < 4; i++) await api.enqueue({ queue_name: 'ack-a', payload: { i } });
    await api.enqueue({ queue_name: 'ack-b', payload: { i: 9 } });
    const a = await api.claim('ack-a', { limit: 4 });
    const [b] = await api.claim('ack-b');
    assert.equal(a.length, 4);
    assert.equal((await api.delete(`/api/v1/jobs/${a[2].id}`)).status, 200);
    const unknown = '00000000-0000-7000-8000-000000000000';
    const r = await api.post('/api/v1/jobs/complete', {
      worker_id: 'w1',
      jobs: [
        { id: a[0].id, lease_id: a[0].lease_id, result: { n: 0 } },
        { id: a[1].id, lease_id: '00000000-0000-4000-8000-000000000000' },
        { id: a[2].id, lease_id: a[2].lease_id },
        { id: unknown, lease_id: a[0].lease_id },
        { id: b.id, lease_id: b.lease_id, result: 'b' },
        { id: a[3].id, lease_id: a[3].lease_id, worker_id: 'w2' },
      ],
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.total, 6);
    assert.deepEqual(r.body.succeeded.map((x: { index: number }) => x.index), [0, 4]);
    for (const x of r.body.succeeded) {
      assert.equal(x.status, 'completed');
      assert.ok(!Number.isNaN(Date.parse(x.completed_at)));
    }
    const codes = Object.fromEntries(r.body.failed.map((x: { index: number; error: { code: string } }) => [x.index, x.error.code]));
    assert.deepEqual(codes, { 1: 'LEASE_EXPIRED', 2: 'JOB_CANCELLED', 3: 'NOT_FOUND', 5: 'LEASE_EXPIRED' });
    assert.equal(r.body.success_count, 2);
    assert.equal(r.body.failure_count, 4);
    assert.deepEqual((await api.get(`/api/v1/jobs/${a[0].id}`)).body.result, { n: 0 });
    assert.equal((await api.get(`/api/v1/jobs/${b.id}`)).body.status, 'completed');
    assert.equal((await api.get(`/api/v1/jobs/${a[1].id}`)).body.status, 'processing', 'the stale item changed nothing');
    // The stale items still complete with their real leases; a second ack of a completed job is refused.
    const again = await api.post('/api/v1/jobs/complete', {
      worker_id: 'w1',
      jobs: [{ id: a[1].id, lease_id: a[1].lease_id }, { id: a[3].id, lease_id: a[3].lease_id }, { id: a[0].id, lease_id: a[0].lease_id }],
    });
    assert.deepEqual(again.body.succeeded.map((x: { index: number }) => x.index), [0, 1]);
    assert.deepEqual(again.body.failed.map((x: { index: number; error: { code: string } }) => [x.index, x.error.code]), [[2, 'LEASE_EXPIRED']]);
  });

  test('with claim, the request then claims the next jobs for its worker: after its completions, whose slots it gets', async () => {
    const queue = 'ack-claim';
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await api.enqueue({ queue_name: queue, payload: { i } })).id);
    assert.equal((await api.put(`/api/v1/queues/${queue}/config`, { max_concurrency: 2 })).status, 200);
    const first = await api.claim(queue, { limit: 5 });
    assert.deepEqual(first.map((j: { id: string }) => j.id), ids.slice(0, 2), 'max_concurrency 2');
    const r = await api.post('/api/v1/jobs/complete', {
      worker_id: 'w1',
      jobs: [
        { id: first[0].id, lease_id: first[0].lease_id, result: { ok: 1 } },
        { id: first[1].id, lease_id: '00000000-0000-4000-8000-000000000000' },
      ],
      claim: { queue_name: queue, limit: 5 },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.succeeded.map((x: { index: number }) => x.index), [0]);
    assert.deepEqual(r.body.failed.map((x: { index: number; error: { code: string } }) => [x.index, x.error.code]), [[1, 'LEASE_EXPIRED']]);
    assert.equal(r.body.claim_error, undefined);
    // The completion was taken first: its slot went to the claim (had the claim come first, it would have found none).
    assert.deepEqual(r.body.jobs.map((j: { id: string }) => j.id), [ids[2]]);
    const [next] = r.body.jobs;
    assert.equal(next.status, 'processing');
    assert.equal(next.assigned_worker_id, 'w1');
    assert.ok(next.lease_id);
    assert.deepEqual(next.payload, { i: 2 });
    // Leased for real: it completes with that lease, and the next batch claims on.
    const again = await api.post('/api/v1/jobs/complete', {
      worker_id: 'w1',
      jobs: [{ id: next.id, lease_id: next.lease_id }, { id: first[1].id, lease_id: first[1].lease_id }],
      claim: { queue_name: queue, limit: 5 },
    });
    assert.equal(again.body.success_count, 2);
    assert.deepEqual(again.body.jobs.map((j: { id: string }) => j.id).sort(), [ids[3], ids[4]].sort());
    assert.equal((await api.get(`/api/v1/jobs/${first[0].id}`)).body.status, 'completed');
    // No claim asked: no jobs field.
    const plain = await api.post('/api/v1/jobs/complete', { worker_id: 'w1', jobs: again.body.jobs.map((j: { id: string; lease_id: string }) => ({ id: j.id, lease_id: j.lease_id })) });
    assert.equal(plain.body.success_count, 2);
    assert.equal(plain.body.jobs, undefined);
  });

  test('a claim takes up to 500 jobs in one answer, in claim order, and so does the claim of an acknowledgement', async () => {
    const queue = 'claim-500';
    const ids: string[] = [];
    // 1,100 jobs; every 7th has priority 5, which goes first, each priority oldest first.
    for (let b = 0; b < 11; b++) {
      const jobs = Array.from({ length: 100 }, (_, k) => ({ queue_name: queue, payload: { n: b * 100 + k }, priority: (b * 100 + k) % 7 === 0 ? 5 : 0 }));
      const r = await api.post('/api/v1/jobs/bulk', { jobs });
      assert.equal(r.body.success_count, 100, JSON.stringify(r.body).slice(0, 300));
      ids.push(...r.body.succeeded.map((j: { id: string }) => j.id));
    }
    const order = [...ids.filter((_, n) => n % 7 === 0), ...ids.filter((_, n) => n % 7 !== 0)];
    const first = await api.claim(queue, { limit: 500 });
    assert.deepEqual(first.map((j: { id: string }) => j.id), order.slice(0, 500));
    const r = await api.post('/api/v1/jobs/complete', {
      worker_id: 'w1',
      jobs: first.map((j: { id: string; lease_id: string }) => ({ id: j.id, lease_id: j.lease_id })),
      claim: { queue_name: queue, limit: 500 },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.success_count, 500);
    assert.deepEqual(r.body.jobs.map((j: { id: string }) => j.id), order.slice(500, 1000));
    assert.deepEqual((await api.claim(queue, { limit: 500 })).map((j: { id: string }) => j.id), order.slice(1000));
    assert.equal((await api.get(`/api/v1/jobs/stats?queue_name=${queue}`)).body.completed, 500);
  });

  test('with claim on a paused queue the completions stand and nothing is claimed', async () => {
    await api.enqueue({ queue_name: 'ack-claim-a', payload: {} });
    await api.enqueue({ queue_name: 'ack-claim-paused', payload: {} });
    const [j] = await api.claim('ack-claim-a');
    assert.equal((await api.post('/api/v1/queues/ack-claim-paused/pause', {})).status, 200);
    const r = await api.post('/api/v1/jobs/complete', { worker_id: 'w1', jobs: [{ id: j.id, lease_id: j.lease_id }], claim: { queue_name: 'ack-claim-paused' } });
    assert.equal(r.status, 200);
    assert.equal(r.body.success_count, 1);
    assert.deepEqual(r.body.jobs, []);
    assert.equal((await api.get(`/api/v1/jobs/${j.id}`)).body.status, 'completed');
  });

  test('bad requests change nothing: no worker_id anywhere, a bad id, too many items, an empty list', async () => {
    await api.enqueue({ queue_name: 'ack-bad', payload: {} });
    const [j] = await api.claim('ack-bad');
    assertInvalid(await api.post('/api/v1/jobs/complete', { jobs: [{ id: j.id, lease_id: j.lease_id }] }));
    assertInvalid(await api.post('/api/v1/jobs/complete', { worker_id: 'w1', jobs: [{ id: j.id, lease_id: j.lease_id }, { id: 'nope' }] }));
    assertInvalid(await api.post('/api/v1/jobs/complete', { worker_id: 'w1', jobs: [] }));
    const many = Array.from({ length: 501 }, () => ({ id: j.id, lease_id: j.lease_id }));
    assertInvalid(await api.post('/api/v1/jobs/complete', { worker_id: 'w1', jobs: many }));
    // A claim needs the request's worker_id (the items' own do not say whose the claimed jobs are), takes no wait.
    const item = { id: j.id, lease_id: j.lease_id, worker_id: 'w1' };
    assertInvalid(await api.post('/api/v1/jobs/complete', { jobs: [item], claim: { queue_name: 'ack-bad' } }), 'worker_id');
    assertInvalid(await api.post('/api/v1/jobs/complete', { worker_id: 'w1', jobs: [item], claim: { queue_name: 'ack-bad', wait_ms: 100 } }));
    assertInvalid(await api.post('/api/v1/jobs/complete', { worker_id: 'w1', jobs: [item], claim: { queue_name: 'ack-bad', limit: 501 } }));
    assertInvalid(await api.post('/api/v1/jobs/complete', { worker_id: 'w1', jobs: [item], claim: {} }));
    assert.equal((await api.get(`/api/v1/jobs/${j.id}`)).body.status, 'processing');
  });
});

describe('priority', () => {
  test('a new priority reorders the queue at once', async () => {
    const a = await api.enqueue({ queue_name: 'prio-change' });
    const b = await api.enqueue({ queue_name: 'prio-change' });
    const r = await api.put(`/api/v1/jobs/${b.id}/priority`, { priority: 50 });
    assert.equal(r.status, 200);
    assert.equal(r.body.priority, 50);
    assert.equal((await api.get(`/api/v1/jobs/${b.id}`)).body.priority, 50);
    const [first, second] = await api.claim('prio-change', { limit: 2 });
    assert.equal(first.id, b.id);
    assert.equal(second.id, a.id);
  });

  test('processing, finished and unknown jobs; invalid priority', async () => {
    const j = await api.enqueue({ queue_name: 'prio-409' });
    await api.claim('prio-409');
    assertError(await api.put(`/api/v1/jobs/${j.id}/priority`, { priority: 1 }), 409, 'JOB_NOT_LIVE', ['job_status', 'active_jobs']);
    await api.delete(`/api/v1/jobs/${j.id}`);
    assertError(await api.put(`/api/v1/jobs/${j.id}/priority`, { priority: 1 }), 409, 'JOB_NOT_LIVE', ['job_status', 'active_jobs']);
    assertError(await api.put(`/api/v1/jobs/00000000-0000-7000-8000-000000000000/priority`, { priority: 1 }), 404, 'NOT_FOUND');
    assertInvalid(await api.put(`/api/v1/jobs/${j.id}/priority`, { priority: 101 }));
    assertInvalid(await api.put(`/api/v1/jobs/${j.id}/priority`, {}));
  });
});

describe('job retry', () => {
  test('deadletter and cancelled jobs come back pending with a fresh retry count', async () => {
    const id = await deadLetter('retry-one', { k: 1 });
    const r = await api.post(`/api/v1/jobs/${id}/retry`);
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'pending');
    assert.equal(r.body.retry_count, 0);
    assert.equal(r.body.errors.length, 1, 'the error history is kept');
    const [c] = await api.claim('retry-one');
    assert.equal(c.id, id);
    assert.deepEqual(c.payload, { k: 1 });

    const x = await api.enqueue({ queue_name: 'retry-one' });
    await api.delete(`/api/v1/jobs/${x.id}`);
    assert.equal((await api.post(`/api/v1/jobs/${x.id}/retry`)).body.status, 'pending');
  });

  test('a live job is 409, an unknown one 404', async () => {
    const j = await api.enqueue({ queue_name: 'retry-409' });
    assertError(await api.post(`/api/v1/jobs/${j.id}/retry`), 409, 'JOB_NOT_LIVE', ['job_status', 'active_jobs']);
    assertError(await api.post(`/api/v1/jobs/00000000-0000-7000-8000-000000000000/retry`), 404, 'NOT_FOUND');
  });

  test('concurrent retries of one job revive it once', async () => {
    const id = await deadLetter('retry-race');
    const rs = await Promise.all(Array.from({ length: 5 }, () => api.post(`/api/v1/jobs/${id}/retry`)));
    assert.equal(rs.filter((r) => r.status === 200).length, 1);
    assert.ok(rs.every((r) => r.status === 200 || r.status === 409));
    assert.equal((await api.claim('retry-race', { limit: 10 })).length, 1);
  });
});

describe('dead-letter queue', () => {
  test('retry by ids and by queue with a limit', async () => {
    const a = await deadLetter('dlq-a');
    const b = await deadLetter('dlq-a');
    const c = await deadLetter('dlq-b');
    const live = await api.enqueue({ queue_name: 'dlq-a' });
    const byIds = await api.post('/api/v1/jobs/dlq/retry', { job_ids: [a, c, live.id] });
    assert.equal(byIds.status, 200);
    assert.equal(byIds.body.retried, 2);
    assert.deepEqual([...byIds.body.job_ids].sort(), [a, c].sort());
    assert.deepEqual(byIds.body.failed.map((f: { id: string }) => f.id), [live.id]);
    assert.equal((await api.get(`/api/v1/jobs/${a}`)).body.status, 'pending');
    assert.equal((await api.get(`/api/v1/jobs/${c}`)).body.status, 'pending');

    assert.equal((await api.claim('dlq-a', { limit: 10 })).length, 2, 'the revived job and the live one');
    const d = await deadLetter('dlq-a');
    const byQueue = await api.post('/api/v1/jobs/dlq/retry', { queue_name: 'dlq-a', limit: 1 });
    assert.deepEqual(byQueue.body.job_ids, [b], 'the oldest first');
    assert.equal((await api.get(`/api/v1/jobs/${d}`)).body.status, 'deadletter');
    assertInvalid(await api.post('/api/v1/jobs/dlq/retry', {}));
    assertInvalid(await api.post('/api/v1/jobs/dlq/retry', { job_ids: ['nope'] }));
  });

  test('purge needs confirm; by ids, queue and age; a purged job cannot be retried', async () => {
    const a = await deadLetter('purge-a');
    const b = await deadLetter('purge-b');
    const keep = await api.enqueue({ queue_name: 'purge-a' });
    assertInvalid(await api.post('/api/v1/jobs/dlq/purge', { job_ids: [a] }));
    assertInvalid(await api.post('/api/v1/jobs/dlq/purge', { job_ids: [a], confirm: false }));
    assert.equal((await api.get(`/api/v1/jobs/${a}`)).status, 200, 'nothing purged without confirm');

    const old = await api.post('/api/v1/jobs/dlq/purge', { older_than: '2000-01-01T00:00:00Z', confirm: true });
    assert.equal(old.body.purged, 0);
    const byIds = await api.post('/api/v1/jobs/dlq/purge', { job_ids: [a, keep.id], confirm: true });
    assert.equal(byIds.body.purged, 1);
    assert.equal((await api.get(`/api/v1/jobs/${a}`)).status, 404);
    assert.equal((await api.get(`/api/v1/jobs/${keep.id}`)).status, 200, 'only dead-lettered jobs are purged');
    assertError(await api.post(`/api/v1/jobs/${a}/retry`), 404, 'NOT_FOUND');

    const byQueue = await api.post('/api/v1/jobs/dlq/purge', { queue_name: 'purge-b', confirm: true });
    assert.equal(byQueue.body.purged, 1);
    assert.equal((await api.get(`/api/v1/jobs/${b}`)).status, 404);
  });
});

describe('queues', () => {
  test('create, duplicate 409, config applies to new jobs', async () => {
    const r = await api.post('/api/v1/queues', { name: 'q-made', max_retries: 7, lease_duration_secs: 45 });
    assert.equal(r.status, 201);
    assert.equal(r.body.name, 'q-made');
    assert.equal(r.body.paused, false);
    assert.deepEqual(r.body.config, { max_retries: 7, lease_duration_secs: 45, concurrency_per_key: null, max_concurrency: null, rate_limit: null });
    assertError(await api.post('/api/v1/queues', { name: 'q-made' }), 409, 'QUEUE_EXISTS', ['job_status', 'active_jobs']);
    assert.equal((await api.post('/api/v1/queues', { queue_name: 'q-alias' })).status, 201);
    assertInvalid(await api.post('/api/v1/queues', {}));
    assertInvalid(await api.post('/api/v1/queues', { name: '-bad' }));

    const j = await api.enqueue({ queue_name: 'q-made' });
    assert.equal(j.max_retries, 7);
    assert.equal(j.timeout_seconds, 45);
    const c = await api.put('/api/v1/queues/q-made/config', { max_retries: 1, lease_duration_secs: null });
    assert.equal(c.status, 200);
    assert.deepEqual(c.body.config, { max_retries: 1, lease_duration_secs: null, concurrency_per_key: null, max_concurrency: null, rate_limit: null });
    const k = await api.enqueue({ queue_name: 'q-made' });
    assert.equal(k.max_retries, 1);
    assert.equal(k.timeout_seconds, 300);
    assertInvalid(await api.put('/api/v1/queues/q-made/config', { max_retries: 101 }));
    assertError(await api.put('/api/v1/queues/no-such-queue/config', { max_retries: 1 }), 404, 'NOT_FOUND');
  });

  test('a job sent to an unknown queue creates it', async () => {
    await api.enqueue({ queue_name: 'q-implicit' });
    const rows = await n.node.store.query(`SELECT name, paused FROM queues WHERE name = 'q-implicit'`);
    assert.deepEqual(rows, [{ name: 'q-implicit', paused: false }]);
  });

  test('pause stops claims at once, parked claims included; the reason is kept; resume', async () => {
    // Queues on both threads: pause is per queue wherever its actor lives.
    const names = Array.from({ length: 6 }, (_, i) => `q-pause-${i}`);
    for (const q of names) await api.enqueue({ queue_name: q });
    const parked = api.post('/api/v1/jobs/claim', { queue_name: 'q-pause-parked', worker_id: 'w1', wait_ms: 10_000 });
    await api.enqueue({ queue_name: 'q-pause-parked', payload: {} }).then(() => null);
    await parked;
    const parkedAgain = api.post('/api/v1/jobs/claim', { queue_name: 'q-pause-parked', worker_id: 'w1', wait_ms: 10_000 });
    const t0 = performance.now();
    const p = await api.post('/api/v1/queues/q-pause-parked/pause', { reason: 'maintenance' });
    assert.equal(p.status, 200);
    assert.deepEqual((await parkedAgain).body, { jobs: [] });
    assert.ok(performance.now() - t0 < 5_000, 'the parked claim was answered by the pause, not by its timeout');

    for (const q of names) {
      const r = await api.post(`/api/v1/queues/${q}/pause`, { reason: 'maintenance' });
      assert.equal(r.status, 200);
      assert.equal(r.body.paused, true);
      assert.equal(r.body.paused_reason, 'maintenance');
    }
    for (const q of names) assert.deepEqual(await api.claim(q), [], `${q} is paused`);
    const rows = await n.node.store.query(`SELECT paused_reason FROM queues WHERE name = 'q-pause-0'`);
    assert.equal(rows[0]!.paused_reason, 'maintenance');
    assert.equal((await api.enqueue({ queue_name: 'q-pause-0' })).status, 'pending', 'a paused queue still takes jobs');

    const r = await api.post('/api/v1/queues/q-pause-0/resume');
    assert.equal(r.status, 200);
    assert.equal(r.body.paused, false);
    assert.equal(r.body.paused_reason, null);
    assert.equal((await api.claim('q-pause-0', { limit: 10 })).length, 2);
    assertError(await api.post('/api/v1/queues/no-such-queue/pause'), 404, 'NOT_FOUND');
    assertError(await api.post('/api/v1/queues/no-such-queue/resume'), 404, 'NOT_FOUND');
  });

  test('delete: 409 while active jobs remain, then 200, then 404', async () => {
    const j = await api.enqueue({ queue_name: 'q-del' });
    const busy = await api.delete('/api/v1/queues/q-del');
    assertError(busy, 409, 'QUEUE_NOT_EMPTY', ['job_status', 'active_jobs']);
    assert.equal(busy.body.active_jobs, 1);
    await api.delete(`/api/v1/jobs/${j.id}`);
    const gone = await api.delete('/api/v1/queues/q-del');
    assert.equal(gone.status, 200);
    assert.deepEqual(gone.body, { name: 'q-del', deleted: true });
    assert.equal((await n.node.store.query(`SELECT 1 FROM queues WHERE name = 'q-del'`)).length, 0);
    assertError(await api.delete('/api/v1/queues/q-del'), 404, 'NOT_FOUND');
    assertError(await api.delete('/api/v1/queues/.bad'), 404, 'NOT_FOUND');
  });
});
