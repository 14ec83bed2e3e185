// The gRPC API with a real grpc-js client loaded from proto/queue/v1/queue.proto: the job lifecycle (enqueue,
// dequeue, complete, fail to retry and to the DLQ, stale leases, lease renewal), GetJob and GetQueueStats,
// both streams, WorkerService, authentication (API keys only), permissions, quotas as RESOURCE_EXHAUSTED with
// their details, invalid input, tenant isolation, a node that stops with a stream open; and flow control:
// busiest keys in GetQueueStats, ExplainJob (the REST answer), debounce and idempotency windows on Enqueue
// (manual clock).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { credentials, Metadata, status, type Client, type ClientDuplexStream, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { ManualClock } from '../src/clock.js';
import { fromStruct, fromValue, loadQueueV1, toStruct, toValue } from '../src/io/grpc/proto.js';
import { Api, sleep, startTestNode, type TestNode } from './helpers.js';
import { insertKey } from './http-assert.js';

const v1 = loadQueueV1();
let n: TestNode;
before(async () => {
  // Retries fall due 1 ms after a failure, so a failed job can be claimed again at once.
  n = await startTestNode({ env: { RETRY_UNIT_MS: '1' } });
});
after(() => n.stop());

type Json = Record<string, any>;

/** Both services of a node, calling with one API key (or none). */
class Grpc {
  readonly queue: Client & Json;
  readonly workers: Client & Json;
  constructor(
    port: number,
    readonly key: string | null,
  ) {
    const address = `127.0.0.1:${port}`;
    this.queue = new v1.QueueService(address, credentials.createInsecure()) as Client & Json;
    this.workers = new v1.WorkerService(address, credentials.createInsecure()) as Client & Json;
  }

  metadata(): Metadata {
    const m = new Metadata();
    if (this.key !== null) m.set('x-api-key', this.key);
    return m;
  }

  q = (method: string, req: Json): Promise<Json> => this.unary(this.queue, method, req);
  w = (method: string, req: Json): Promise<Json> => this.unary(this.workers, method, req);

  private unary(client: Json, method: string, req: Json): Promise<Json> {
    return new Promise((resolve, reject) => client[method](req, this.metadata(), (err: ServiceError | null, res: Json) => (err ? reject(err) : resolve(res))));
  }

  close(): void {
    this.queue.close();
    this.workers.close();
  }
}

/** Resolves when `p` fails with this gRPC status and a message matching `message`. */
async function rejectsWith(p: Promise<unknown>, code: status, message?: RegExp): Promise<ServiceError> {
  let caught: ServiceError | null = null;
  await assert.rejects(p, (err: ServiceError) => {
    caught = err;
    return true;
  });
  const err = caught! as ServiceError;
  assert.equal(err.code, code, `expected ${status[code]}, got ${status[err.code]}: ${err.details}`);
  if (message) assert.match(err.details, message);
  return err;
}

const clients: Grpc[] = [];
/** A client for a new organization (not rate-limited, no job quotas unless `limited`). */
async function org(opts: { plan?: string; permissions?: string[]; limited?: boolean } = {}): Promise<{ g: Grpc; key: string; id: string }> {
  const { key, organizationId } = await insertKey(n, { plan: opts.plan ?? 'pro', permissions: opts.permissions, limited: opts.limited });
  const g = new Grpc(n.node.grpcPort, key);
  clients.push(g);
  return { g, key, id: organizationId };
}
after(() => clients.forEach((c) => c.close()));

/** Collects what a stream sends, and waits until enough came. */
function collect<T>(stream: ClientReadableStream<T> | ClientDuplexStream<unknown, T>) {
  const got: T[] = [];
  let ended: ServiceError | 'end' | null = null;
  stream.on('data', (m: T) => got.push(m));
  stream.on('error', (e: ServiceError) => (ended = e));
  stream.on('end', () => (ended ??= 'end'));
  return {
    got,
    ended: () => ended,
    async until(pred: () => boolean, what: string): Promise<void> {
      for (let i = 0; i < 200 && !pred(); i++) await sleep(50);
      assert.ok(pred(), `timed out waiting for ${what}; got ${JSON.stringify(got)}, ended ${JSON.stringify(ended)}`);
    },
  };
}

describe('gRPC QueueService', () => {
  test('Enqueue → Dequeue → Complete; the job shows completed over REST too; the server defaults apply to 0', async () => {
    const { g, key } = await org();
    const e = await g.q('Enqueue', { queueName: 'emails', payload: toStruct({ to: 'a@example.com', n: 2, tags: ['x'] }), tags: { team: 'core' } });
    assert.equal(e.created, true);
    assert.equal(e.job.status, 'pending');
    assert.equal(e.job.queueName, 'emails');
    assert.deepEqual(fromStruct(e.job.payload), { to: 'a@example.com', n: 2, tags: ['x'] });
    assert.deepEqual(e.job.tags, { team: 'core' });
    assert.equal(e.job.maxRetries, 3, 'maxRetries 0 (absent) means the default');
    assert.equal(e.job.timeoutSeconds, 300);
    assert.match(e.job.createdAt, /^\d{4}-\d{2}-\d{2}T.*Z$/);

    const d = await g.q('Dequeue', { queueName: 'emails', workerId: 'w1', batchSize: 10 });
    assert.equal(d.jobs.length, 1);
    const job = d.jobs[0];
    assert.equal(job.id, e.job.id);
    assert.equal(job.status, 'processing');
    assert.ok(job.leaseId);
    assert.equal(job.workerId, 'w1');

    const c = await g.q('Complete', { jobId: job.id, workerId: 'w1', leaseId: job.leaseId, result: toValue({ sent: true }) });
    assert.equal(c.jobId, job.id);
    assert.equal(c.status, 'completed');
    const rest = await n.api.as(key).get(`/api/v1/jobs/${job.id}`);
    assert.equal(rest.status, 200);
    assert.equal(rest.body.status, 'completed');
    assert.deepEqual(rest.body.result, { sent: true });
    const got = await g.q('GetJob', { jobId: job.id });
    assert.equal(got.job.status, 'completed');
    assert.deepEqual(fromValue(got.job.result), { sent: true });

    const custom = await g.q('Enqueue', { queueName: 'emails', payload: toStruct({}), maxRetries: 5, timeoutSeconds: 60, priority: 7 });
    assert.equal(custom.job.maxRetries, 5);
    assert.equal(custom.job.timeoutSeconds, 60);
    assert.equal(custom.job.priority, 7);
    const again = await g.q('Enqueue', { queueName: 'emails', payload: toStruct({}), idempotencyKey: 'k1' });
    const dup = await g.q('Enqueue', { queueName: 'emails', payload: toStruct({}), idempotencyKey: 'k1' });
    assert.equal(again.created, true);
    assert.equal(dup.created, false);
    assert.equal(dup.job.id, again.job.id);
  });

  test('Fail retries while retries remain, then the job goes to the DLQ; retryable: false dead-letters at once', async () => {
    const { g, key } = await org();
    const { job } = await g.q('Enqueue', { queueName: 'flaky', payload: toStruct({}), maxRetries: 1 });
    let [claimed] = (await g.q('Dequeue', { queueName: 'flaky', workerId: 'w1', batchSize: 1 })).jobs;
    const first = await g.q('Fail', { jobId: job.id, workerId: 'w1', leaseId: claimed.leaseId, error: 'boom' });
    assert.equal(first.status, 'scheduled');
    assert.equal(first.retryCount, 1);
    assert.ok(first.scheduledAt);
    [claimed] = (await g.q('Dequeue', { queueName: 'flaky', workerId: 'w1', batchSize: 1, waitMs: 5000 })).jobs;
    assert.equal(claimed.id, job.id);
    const second = await g.q('Fail', { jobId: job.id, workerId: 'w1', leaseId: claimed.leaseId, error: 'boom again' });
    assert.equal(second.status, 'deadletter');
    const got = await g.q('GetJob', { jobId: job.id });
    assert.equal(got.job.status, 'deadletter');
    assert.equal(got.job.lastError, 'boom again');

    const { job: other } = await g.q('Enqueue', { queueName: 'flaky', payload: toStruct({}) });
    const [c] = (await g.q('Dequeue', { queueName: 'flaky', workerId: 'w1', batchSize: 1 })).jobs;
    const fatal = await g.q('Fail', { jobId: other.id, workerId: 'w1', leaseId: c.leaseId, error: 'bad input', retryable: false });
    assert.equal(fatal.status, 'deadletter');
    const dlq = await n.api.as(key).get('/api/v1/jobs/dlq');
    assert.equal(dlq.status, 200);
    assert.deepEqual(new Set((dlq.body as Json[]).map((j) => j.id)), new Set([job.id, other.id]));
  });

  test('a stale lease is FAILED_PRECONDITION with LEASE_EXPIRED; RenewLease extends a live lease', async () => {
    const { g } = await org();
    await g.q('Enqueue', { queueName: 'q', payload: toStruct({}) });
    const [job] = (await g.q('Dequeue', { queueName: 'q', workerId: 'w1', batchSize: 1, leaseDurationSecs: 10 })).jobs;
    await rejectsWith(g.q('Complete', { jobId: job.id, workerId: 'w1', leaseId: 'not-the-lease' }), status.FAILED_PRECONDITION, /LEASE_EXPIRED/);
    await rejectsWith(g.q('Fail', { jobId: job.id, workerId: 'w2', leaseId: job.leaseId, error: 'x' }), status.FAILED_PRECONDITION, /LEASE_EXPIRED/);
    await rejectsWith(g.q('RenewLease', { jobId: job.id, workerId: 'w1', leaseId: 'stale' }), status.FAILED_PRECONDITION, /LEASE_EXPIRED/);

    const renewed = await g.q('RenewLease', { jobId: job.id, workerId: 'w1', leaseId: job.leaseId, leaseDurationSecs: 600 });
    assert.equal(renewed.jobId, job.id);
    assert.equal(renewed.leaseId, job.leaseId);
    assert.ok(Date.parse(renewed.leaseExpiresAt) - Date.parse(job.leaseExpiresAt) > 500_000, `${job.leaseExpiresAt} → ${renewed.leaseExpiresAt}`);
    await g.q('Complete', { jobId: job.id, workerId: 'w1', leaseId: job.leaseId });
    await rejectsWith(g.q('Complete', { jobId: job.id, workerId: 'w1', leaseId: job.leaseId }), status.FAILED_PRECONDITION, /completed|LEASE_EXPIRED|CONFLICT/);
  });

  test('GetJob of an unknown id is an empty job; GetQueueStats counts the queue', async () => {
    const { g } = await org();
    assert.equal((await g.q('GetJob', { jobId: '00000000-0000-4000-8000-000000000000' })).job.id, '');
    assert.equal((await g.q('GetJob', { jobId: 'not-a-uuid' })).job.id, '');
    for (let i = 0; i < 3; i++) await g.q('Enqueue', { queueName: 'stats', payload: toStruct({ i }) });
    await g.q('Dequeue', { queueName: 'stats', workerId: 'w1', batchSize: 1 });
    const st = await g.q('GetQueueStats', { queueName: 'stats' });
    assert.equal(st.queueName, 'stats');
    assert.equal(st.paused, false);
    assert.equal(st.pending, '2');
    assert.equal(st.processing, '1');
    assert.equal(st.completed, '0');
    assert.equal(st.depth, '2');
    assert.ok(Number(st.oldestPendingAgeSeconds) >= 0);
    await rejectsWith(g.q('GetQueueStats', { queueName: 'nope' }), status.NOT_FOUND);
    await rejectsWith(g.q('GetQueueStats', { queueName: '' }), status.INVALID_ARGUMENT);
  });

  test('GetQueueStats lists the busiest concurrency keys, as REST does', async () => {
    const { g, key } = await org();
    for (let i = 0; i < 5; i++) await g.q('Enqueue', { queueName: 'busy', payload: toStruct({ i }), concurrencyKey: 'big' });
    for (let i = 0; i < 2; i++) await g.q('Enqueue', { queueName: 'busy', payload: toStruct({ i }), concurrencyKey: 'small' });
    await g.q('Enqueue', { queueName: 'busy', payload: toStruct({}) });
    const [claimed] = (await g.q('Dequeue', { queueName: 'busy', workerId: 'w1', batchSize: 1 })).jobs;
    assert.equal(claimed.concurrencyKey, 'big');
    const st = await g.q('GetQueueStats', { queueName: 'busy' });
    assert.deepEqual(st.busiestKeys, [
      { key: 'big', processing: '1', waiting: '4' },
      { key: 'small', processing: '0', waiting: '2' },
    ]);
    const rest = await n.api.as(key).get('/api/v1/queues/busy/stats');
    assert.deepEqual(
      st.busiestKeys.map((k: Json) => ({ key: k.key, processing: Number(k.processing), waiting: Number(k.waiting) })),
      rest.body.busiest_keys,
    );
    const { g: plain } = await org();
    await plain.q('Enqueue', { queueName: 'keyless', payload: toStruct({}) });
    assert.deepEqual((await plain.q('GetQueueStats', { queueName: 'keyless' })).busiestKeys, []);
  });

  test('StreamJobs delivers jobs enqueued after it started, each under a lease, and ends on cancel', async () => {
    const { g, key } = await org();
    const stream = g.queue.StreamJobs({ queueName: 'live', workerId: 'sw', batchSize: 5 }, g.metadata()) as ClientReadableStream<Json>;
    const seen = collect(stream);
    await sleep(300);
    const api = n.api.as(key);
    const a = await api.enqueue({ queue_name: 'live' });
    const b = await api.enqueue({ queue_name: 'live' });
    await seen.until(() => seen.got.length === 2, 'two streamed jobs');
    assert.deepEqual(new Set(seen.got.map((j) => j.id)), new Set([a.id, b.id]));
    for (const j of seen.got) {
      assert.equal(j.status, 'processing');
      assert.ok(j.leaseId);
      await g.q('Complete', { jobId: j.id, workerId: 'sw', leaseId: j.leaseId });
    }
    stream.cancel();
    await seen.until(() => seen.ended() !== null, 'the stream to end');
    assert.equal((seen.ended() as ServiceError).code, status.CANCELLED);

    // The cancelled stream's last long poll may still take a job: it goes back to the queue at once, unspent.
    const c = await api.enqueue({ queue_name: 'live' });
    let next: Json[] = [];
    for (let i = 0; i < 100 && next.length === 0; i++) {
      next = (await g.q('Dequeue', { queueName: 'live', workerId: 'after', batchSize: 1 })).jobs as Json[];
      if (next.length === 0) await sleep(20);
    }
    assert.equal(next[0]?.id, c.id, 'the job is claimable again long before its lease would run out');
    assert.equal(Number(next[0]!.retryCount), 0);
    assert.equal(seen.got.length, 2, 'nothing more reached the cancelled stream');

    const bad = g.queue.StreamJobs({ queueName: 'live', workerId: 'sw', batchSize: 0 }, g.metadata()) as ClientReadableStream<Json>;
    const refused = collect(bad);
    await refused.until(() => refused.ended() !== null, 'the refusal');
    assert.equal((refused.ended() as ServiceError).code, status.INVALID_ARGUMENT);
  });

  test('ProcessJobs claims, completes and fails over one stream, acknowledging each by ref', async () => {
    const { g, key } = await org();
    const ids = [];
    for (let i = 0; i < 2; i++) ids.push((await g.q('Enqueue', { queueName: 'duplex', payload: toStruct({ i }) })).job.id);
    const stream = g.queue.ProcessJobs(g.metadata()) as ClientDuplexStream<Json, Json>;
    const seen = collect(stream);
    stream.write({ ref: 'c1', claim: { queueName: 'duplex', workerId: 'pw', batchSize: 2 } });
    await seen.until(() => seen.got.filter((m) => m.job).length === 2, 'two claimed jobs');
    const [j1, j2] = seen.got.map((m) => m.job);
    assert.deepEqual(new Set([j1.id, j2.id]), new Set(ids));
    stream.write({ ref: 'done-1', complete: { jobId: j1.id, workerId: 'pw', leaseId: j1.leaseId, result: toValue(42) } });
    stream.write({ ref: 'fail-2', fail: { jobId: j2.id, workerId: 'pw', leaseId: j2.leaseId, error: 'nope', retryable: false } });
    stream.write({ ref: 'stale', complete: { jobId: j2.id, workerId: 'pw', leaseId: 'wrong' } });
    stream.write({ ref: 'bad-claim', claim: { queueName: 'duplex', workerId: 'pw', batchSize: 0 } });
    await seen.until(() => seen.got.filter((m) => m.ack).length === 4, 'four acknowledgements');
    const acks = new Map(seen.got.filter((m) => m.ack).map((m) => [m.ack.ref, m.ack]));
    assert.equal(acks.get('done-1').code, 0);
    assert.equal(acks.get('done-1').complete.status, 'completed');
    assert.equal(acks.get('fail-2').code, 0);
    assert.equal(acks.get('fail-2').fail.status, 'deadletter');
    assert.equal(acks.get('stale').code, status.FAILED_PRECONDITION);
    assert.match(acks.get('stale').message, /LEASE_EXPIRED/);
    assert.equal(acks.get('bad-claim').code, status.INVALID_ARGUMENT);
    // A claim still waiting for jobs when the client half-closes does not hold the stream open.
    stream.write({ ref: 'c2', claim: { queueName: 'duplex-empty', workerId: 'pw', batchSize: 1 } });
    stream.end();
    await seen.until(() => seen.ended() !== null, 'the server to end the stream');
    assert.equal(seen.ended(), 'end');
    const api = n.api.as(key);
    assert.equal((await api.get(`/api/v1/jobs/${j1.id}`)).body.status, 'completed');
    assert.deepEqual((await api.get(`/api/v1/jobs/${j1.id}`)).body.result, 42);
    assert.equal((await api.get(`/api/v1/jobs/${j2.id}`)).body.status, 'deadletter');
  });

  test('ProcessJobs: completes sent together go to the queue as one batch, each answered by its own ack', async () => {
    const { g, key } = await org();
    for (let i = 0; i < 10; i++) await g.q('Enqueue', { queueName: 'duplex-batch', payload: toStruct({ i }) });
    const stream = g.queue.ProcessJobs(g.metadata()) as ClientDuplexStream<Json, Json>;
    const seen = collect(stream);
    stream.write({ ref: 'c', claim: { queueName: 'duplex-batch', workerId: 'bw', batchSize: 10 } });
    await seen.until(() => seen.got.filter((m) => m.job).length === 10, 'ten claimed jobs');
    const jobs = seen.got.filter((m) => m.job).map((m) => m.job);
    // One burst: eight good completes, a stale lease, an unknown id, an invalid message, and a fail between them.
    for (const [i, j] of jobs.slice(0, 8).entries()) stream.write({ ref: `ok-${i}`, complete: { jobId: j.id, workerId: 'bw', leaseId: j.leaseId, result: toValue({ i }) } });
    stream.write({ ref: 'stale', complete: { jobId: jobs[8].id, workerId: 'bw', leaseId: '00000000-0000-4000-8000-000000000000' } });
    stream.write({ ref: 'unknown', complete: { jobId: '00000000-0000-7000-8000-000000000000', workerId: 'bw', leaseId: jobs[8].leaseId } });
    stream.write({ ref: 'not-a-uuid', complete: { jobId: 'nope', workerId: 'bw', leaseId: jobs[8].leaseId } });
    stream.write({ ref: 'invalid', complete: { jobId: jobs[8].id, workerId: '', leaseId: jobs[8].leaseId } });
    stream.write({ ref: 'fail', fail: { jobId: jobs[9].id, workerId: 'bw', leaseId: jobs[9].leaseId, error: 'no', retryable: false } });
    stream.write({ ref: 'twice', complete: { jobId: jobs[0].id, workerId: 'bw', leaseId: jobs[0].leaseId } });
    await seen.until(() => seen.got.filter((m) => m.ack).length === 14, 'fourteen acknowledgements');
    const acks = new Map(seen.got.filter((m) => m.ack).map((m) => [m.ack.ref, m.ack]));
    assert.equal(acks.size, 14, 'one ack per message');
    for (const [i, j] of jobs.slice(0, 8).entries()) {
      const a = acks.get(`ok-${i}`);
      assert.equal(a.code, 0, a.message);
      assert.equal(a.jobId, j.id);
      assert.deepEqual({ jobId: a.complete.jobId, status: a.complete.status }, { jobId: j.id, status: 'completed' });
      assert.ok(!Number.isNaN(Date.parse(a.complete.completedAt)));
    }
    assert.equal(acks.get('stale').code, status.FAILED_PRECONDITION);
    assert.match(acks.get('stale').message, /^LEASE_EXPIRED: /);
    assert.equal(acks.get('stale').jobId, jobs[8].id);
    assert.equal(acks.get('unknown').code, status.NOT_FOUND);
    assert.equal(acks.get('not-a-uuid').code, status.NOT_FOUND);
    assert.equal(acks.get('invalid').code, status.INVALID_ARGUMENT);
    assert.match(acks.get('invalid').message, /worker_id/);
    assert.equal(acks.get('fail').code, 0);
    assert.equal(acks.get('fail').fail.status, 'deadletter');
    // The same job twice in one batch: the first completes it, the second finds no lease.
    assert.equal(acks.get('twice').code, status.FAILED_PRECONDITION);
    assert.match(acks.get('twice').message, /^LEASE_EXPIRED: /);
    stream.end();
    await seen.until(() => seen.ended() !== null, 'the end');
    const api = n.api.as(key);
    for (const [i, j] of jobs.slice(0, 8).entries()) {
      const body = (await api.get(`/api/v1/jobs/${j.id}`)).body;
      assert.equal(body.status, 'completed');
      assert.deepEqual(body.result, { i });
    }
    assert.equal((await api.get(`/api/v1/jobs/${jobs[8].id}`)).body.status, 'processing', 'the refused items changed nothing');
  });

  test('ProcessJobs batches: a claim with jobBatches gets JobBatch messages, a CompleteBatch one AckBatch in item order', async () => {
    const { g, key } = await org();
    for (let i = 0; i < 6; i++) await g.q('Enqueue', { queueName: 'duplex-batches', payload: toStruct({ i }) });
    const stream = g.queue.ProcessJobs(g.metadata()) as ClientDuplexStream<Json, Json>;
    const seen = collect(stream);
    stream.write({ ref: 'c', claim: { queueName: 'duplex-batches', workerId: 'bb', batchSize: 6, jobBatches: true } });
    await seen.until(() => seen.got.filter((m) => m.jobs).flatMap((m) => m.jobs.jobs).length === 6, 'six jobs in batches');
    assert.equal(seen.got.filter((m) => m.job).length, 0, 'no single Job message');
    assert.ok(seen.got.filter((m) => m.jobs).length < 6, 'several jobs per message');
    const jobs = seen.got.filter((m) => m.jobs).flatMap((m) => m.jobs.jobs);
    assert.deepEqual(jobs.map((j) => fromStruct(j.payload).i).sort(), [0, 1, 2, 3, 4, 5]);
    for (const j of jobs) assert.ok(j.leaseId && j.status === 'processing');
    // Four good items, a stale lease, an invalid one, an item without its complete and one with a string PostgreSQL
    // cannot store, in one message.
    const items = [
      ...jobs.slice(0, 4).map((j, i) => ({ ref: `ok-${i}`, complete: { jobId: j.id, workerId: 'bb', leaseId: j.leaseId, result: toValue({ i }) } })),
      { ref: 'stale', complete: { jobId: jobs[4].id, workerId: 'bb', leaseId: '00000000-0000-4000-8000-000000000000' } },
      { ref: 'invalid', complete: { jobId: jobs[4].id, workerId: '', leaseId: jobs[4].leaseId } },
      { ref: 'empty' },
      { ref: 'nul', complete: { jobId: jobs[5].id, workerId: 'bb', leaseId: jobs[5].leaseId, result: toValue({ s: 'a\u0000b' }) } },
    ];
    stream.write({ ref: 'batch-1', completes: { items } });
    await seen.until(() => seen.got.some((m) => m.acks), 'the AckBatch');
    const batches = seen.got.filter((m) => m.acks);
    assert.equal(batches.length, 1, 'one AckBatch for the message');
    assert.equal(seen.got.filter((m) => m.ack).length, 0, 'no single Ack');
    assert.equal(batches[0]!.acks.ref, 'batch-1', "the message's own ref");
    const acks = batches[0]!.acks.acks;
    assert.deepEqual(acks.map((a: Json) => a.ref), items.map((i) => i.ref), 'one ack per item, in item order');
    for (const [i, j] of jobs.slice(0, 4).entries()) {
      assert.equal(acks[i].code, 0, acks[i].message);
      assert.deepEqual({ jobId: acks[i].complete.jobId, status: acks[i].complete.status }, { jobId: j.id, status: 'completed' });
    }
    assert.equal(acks[4].code, status.FAILED_PRECONDITION);
    assert.match(acks[4].message, /^LEASE_EXPIRED: /);
    assert.equal(acks[5].code, status.INVALID_ARGUMENT);
    assert.equal(acks[6].code, status.INVALID_ARGUMENT);
    assert.equal(acks[7].code, status.INVALID_ARGUMENT, 'an item holding what the store cannot keep is refused alone');
    // More items than a batch acknowledgement takes: the message is refused whole, on its own ref.
    stream.write({ ref: 'too-many', completes: { items: Array.from({ length: 501 }, (_, k) => ({ ref: `m${k}`, complete: { jobId: jobs[5].id, workerId: 'bb', leaseId: jobs[5].leaseId } })) } });
    await seen.until(() => seen.got.some((m) => m.ack?.ref === 'too-many'), 'the refusal');
    assert.equal(seen.got.find((m) => m.ack?.ref === "too-many")!.ack.code, status.INVALID_ARGUMENT);
    // A claim without jobBatches still gets single Job messages on the same stream.
    stream.write({ ref: 'c2', claim: { queueName: 'duplex-batches', workerId: 'bb', batchSize: 1 } });
    await g.q('Enqueue', { queueName: 'duplex-batches', payload: toStruct({ i: 6 }) });
    await seen.until(() => seen.got.some((m) => m.job), 'a single Job');
    stream.end();
    await seen.until(() => seen.ended() !== null, 'the end');
    const api = n.api.as(key);
    for (const [i, j] of jobs.slice(0, 4).entries()) assert.deepEqual((await api.get(`/api/v1/jobs/${j.id}`)).body.result, { i });
    assert.equal((await api.get(`/api/v1/jobs/${jobs[4].id}`)).body.status, 'processing', 'the refused items changed nothing');
    assert.equal((await api.get(`/api/v1/jobs/${jobs[5].id}`)).body.status, 'processing');
  });

  test('ProcessJobs: a claim sent with completes is asked after them, in one ask that gets the slots they free (max_concurrency 2)', async () => {
    const { g, key } = await org();
    const queue = 'duplex-ride';
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await g.q('Enqueue', { queueName: queue, payload: toStruct({ i }) })).job.id);
    assert.equal((await n.api.as(key).put(`/api/v1/queues/${queue}/config`, { max_concurrency: 2 })).status, 200);
    const stream = g.queue.ProcessJobs(g.metadata()) as ClientDuplexStream<Json, Json>;
    const seen = collect(stream);
    stream.write({ ref: 'c1', claim: { queueName: queue, workerId: 'rw', batchSize: 2 } });
    await seen.until(() => seen.got.filter((m) => m.job).length === 2, 'two claimed jobs');
    const held = seen.got.map((m) => m.job);
    assert.deepEqual(new Set(held.map((j) => j.id)), new Set(ids.slice(0, 2)));
    // What the queue's actor is asked from here on, and what each claim got. Asked first, the claim would get
    // the slot of the first complete only (it waits, and the first complete feeds it), then ask again.
    const asks: Array<{ op: string; got?: number }> = [];
    const pool = n.node.pool;
    const ask = pool.ask;
    pool.ask = ((o: string, q: string, op: string, args: unknown) => {
      const reply = (ask as (...a: unknown[]) => Promise<Json>).call(pool, o, q, op, args);
      if (q === queue) {
        const entry: { op: string; got?: number } = { op };
        asks.push(entry);
        if (op === 'claim') void reply.then((r) => (entry.got = r.jobs.length), () => {});
      }
      return reply;
    }) as typeof pool.ask;
    try {
      // One turn: both completes, then the claim for the two slots they free.
      for (const [i, j] of held.entries()) stream.write({ ref: `done-${i}`, complete: { jobId: j.id, workerId: 'rw', leaseId: j.leaseId } });
      stream.write({ ref: 'c2', claim: { queueName: queue, workerId: 'rw', batchSize: 2 } });
      await seen.until(() => seen.got.filter((m) => m.job).length === 4 && seen.got.filter((m) => m.ack).length === 2, 'two more jobs and two acks');
    } finally {
      pool.ask = ask;
    }
    for (const a of seen.got.filter((m) => m.ack)) assert.equal(a.ack.code, 0, a.ack.message);
    assert.deepEqual(new Set(seen.got.filter((m) => m.job).slice(2).map((m) => m.job.id)), new Set(ids.slice(2)));
    // The completes may come in one batch or two (grpc-js may hand them over in different turns).
    assert.deepEqual(asks.at(-1), { op: 'claim', got: 2 }, JSON.stringify(asks));
    assert.ok(asks.length <= 3 && asks.slice(0, -1).every((a) => a.op === 'completeMany'), JSON.stringify(asks));
    stream.end();
    await seen.until(() => seen.ended() !== null, 'the end');
  });

  test('ProcessJobs: progress is acknowledged and stored; a cancelled job is told to the stream; its late complete is refused', async () => {
    const { g, key } = await org();
    const { job } = await g.q('Enqueue', { queueName: 'duplex-flow', payload: toStruct({}), concurrencyKey: 'tenant-1' });
    const stream = g.queue.ProcessJobs(g.metadata()) as ClientDuplexStream<Json, Json>;
    const seen = collect(stream);
    stream.write({ ref: 'c', claim: { queueName: 'duplex-flow', workerId: 'pw', batchSize: 1 } });
    await seen.until(() => seen.got.some((m) => m.job), 'the claimed job');
    const j = seen.got.find((m) => m.job)!.job;
    assert.equal(j.concurrencyKey, 'tenant-1');
    stream.write({ ref: 'p', progress: { jobId: j.id, workerId: 'pw', leaseId: j.leaseId, progress: 30, message: 'a third', data: toValue({ n: 1 }) } });
    await seen.until(() => seen.got.some((m) => m.ack?.ref === 'p'), 'the progress ack');
    assert.equal(seen.got.find((m) => m.ack?.ref === 'p')!.ack.progress.progress, 30);
    const api = n.api.as(key);
    assert.equal((await api.get(`/api/v1/jobs/${job.id}`)).body.progress.message, 'a third');
    assert.equal((await api.delete(`/api/v1/jobs/${job.id}`)).status, 200);
    await seen.until(() => seen.got.some((m) => m.cancelled), 'the cancel message');
    assert.equal(seen.got.find((m) => m.cancelled)!.cancelled.jobId, job.id);
    stream.write({ ref: 'late', complete: { jobId: j.id, workerId: 'pw', leaseId: j.leaseId } });
    await seen.until(() => seen.got.some((m) => m.ack?.ref === 'late'), 'the late complete ack');
    const late = seen.got.find((m) => m.ack?.ref === 'late')!.ack;
    assert.equal(late.code, status.FAILED_PRECONDITION);
    assert.match(late.message, /JOB_CANCELLED/);
    stream.end();
    await seen.until(() => seen.ended() !== null, 'the end');
  });

  // Acks written in a burst outrun the stream's buffer, and each write the stream refuses waits for it to drain.
  // They wait together: one 'drain' listener, not one each, which went past the emitter's limit of 10 and printed a
  // MaxListenersExceededWarning every time the count went past it again (hundreds a minute under a gRPC worker).
  test('ProcessJobs: a burst of acks the stream holds back waits for one drain, and every ack arrives', async () => {
    const { g } = await org();
    const N = 60;
    for (let i = 0; i < N; i++) await g.q('Enqueue', { queueName: 'duplex-burst', payload: toStruct({ i }) });
    const warnings: string[] = [];
    const onWarning = (w: Error) => {
      if (w.name === 'MaxListenersExceededWarning') warnings.push(w.message);
    };
    process.on('warning', onWarning);
    const stream = g.queue.ProcessJobs(g.metadata()) as ClientDuplexStream<Json, Json>;
    try {
      const seen = collect(stream);
      stream.write({ ref: 'c', claim: { queueName: 'duplex-burst', workerId: 'bw', batchSize: N } });
      await seen.until(() => seen.got.filter((m) => m.job).length === N, `${N} claimed jobs`);
      for (const [i, m] of seen.got.filter((x) => x.job).entries()) {
        stream.write({ ref: `p-${i}`, progress: { jobId: m.job.id, workerId: 'bw', leaseId: m.job.leaseId, progress: 50 } });
      }
      await seen.until(() => seen.got.filter((m) => m.ack).length === N, `${N} acknowledgements`);
      assert.ok(seen.got.filter((m) => m.ack).every((m) => m.ack.code === 0));
      stream.end();
      await seen.until(() => seen.ended() !== null, 'the end');
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings, []);
  });

  test('StreamJobs: a cancelled job comes back down the stream with status cancelled', async () => {
    const { g, key } = await org();
    const { job } = await g.q('Enqueue', { queueName: 'stream-cancel', payload: toStruct({}) });
    const call = g.queue.StreamJobs({ queueName: 'stream-cancel', workerId: 'sw', batchSize: 1 }, g.metadata()) as ClientReadableStream<Json>;
    const s = collect(call);
    await s.until(() => s.got.length === 1, 'the claimed job');
    assert.equal(s.got[0]!.status, 'processing');
    assert.equal((await n.api.as(key).delete(`/api/v1/jobs/${job.id}`)).status, 200);
    await s.until(() => s.got.length === 2, 'the cancel');
    assert.equal(s.got[1]!.id, job.id);
    assert.equal(s.got[1]!.status, 'cancelled');
    await rejectsWith(g.q('RenewLease', { jobId: job.id, workerId: 'sw', leaseId: s.got[0]!.leaseId }), status.FAILED_PRECONDITION, /JOB_CANCELLED/);
    call.cancel();
  });

  test('invalid input is INVALID_ARGUMENT and creates nothing', async () => {
    const { g, id } = await org();
    await rejectsWith(g.q('Enqueue', { queueName: '', payload: toStruct({}) }), status.INVALID_ARGUMENT, /VALIDATION_ERROR.*queue_name/);
    await rejectsWith(g.q('Enqueue', { queueName: 'q', payload: toStruct({}), priority: 1000 }), status.INVALID_ARGUMENT);
    await rejectsWith(g.q('Enqueue', { queueName: 'q', payload: toStruct({}), scheduledAt: 'tomorrow' }), status.INVALID_ARGUMENT);
    await rejectsWith(g.q('Dequeue', { queueName: 'q', workerId: 'w1', batchSize: 0 }), status.INVALID_ARGUMENT);
    await rejectsWith(g.q('Dequeue', { queueName: 'q', workerId: 'w1', batchSize: 501 }), status.INVALID_ARGUMENT);
    await rejectsWith(g.q('Dequeue', { queueName: '', workerId: 'w1', batchSize: 1 }), status.INVALID_ARGUMENT);
    await rejectsWith(g.q('Fail', { jobId: '00000000-0000-4000-8000-000000000000', workerId: 'w1', leaseId: 'x', error: '' }), status.INVALID_ARGUMENT);
    const [{ n: jobs }] = (await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs WHERE organization_id = $1', [id])) as [{ n: number }];
    assert.equal(jobs, 0);
  });

  test('an organization cannot read, complete or claim another one’s jobs', async () => {
    const a = await org();
    const b = await org();
    const { job } = await a.g.q('Enqueue', { queueName: 'private', payload: toStruct({ secret: 1 }) });
    assert.equal((await b.g.q('GetJob', { jobId: job.id })).job.id, '');
    assert.deepEqual((await b.g.q('Dequeue', { queueName: 'private', workerId: 'thief', batchSize: 10 })).jobs, []);
    await rejectsWith(b.g.q('GetQueueStats', { queueName: 'private' }), status.NOT_FOUND);
    const [claimed] = (await a.g.q('Dequeue', { queueName: 'private', workerId: 'w1', batchSize: 1 })).jobs;
    await rejectsWith(b.g.q('Complete', { jobId: job.id, workerId: 'w1', leaseId: claimed.leaseId }), status.NOT_FOUND);
    await rejectsWith(b.g.q('Fail', { jobId: job.id, workerId: 'w1', leaseId: claimed.leaseId, error: 'x' }), status.NOT_FOUND);
    await rejectsWith(b.g.q('RenewLease', { jobId: job.id, workerId: 'w1', leaseId: claimed.leaseId }), status.NOT_FOUND);
    assert.equal((await a.g.q('GetJob', { jobId: job.id })).job.status, 'processing');
  });
});

describe('gRPC authentication, permissions and quotas', () => {
  test('a missing, wrong or revoked key and a JWT are UNAUTHENTICATED', async () => {
    const port = n.node.grpcPort;
    const { key: revoked } = await insertKey(n, { revoked: true });
    const login = await n.api.post('/api/v1/auth/login', { api_key: n.api.key });
    assert.equal(login.status, 200);
    const jwt = login.body.access_token as string;
    const cases: Array<[string | null, RegExp]> = [
      [null, /x-api-key/],
      ['svc_test_wrong', /Invalid API key/],
      [revoked, /Invalid API key/],
      [jwt, /JWT/],
      ['eyJhbGciOiJIUzI1NiJ9.e30.sig', /JWT/],
    ];
    for (const [key, message] of cases) {
      const g = new Grpc(port, key);
      clients.push(g);
      await rejectsWith(g.q('GetJob', { jobId: '00000000-0000-4000-8000-000000000000' }), status.UNAUTHENTICATED, message);
      await rejectsWith(g.w('Register', {}), status.UNAUTHENTICATED, message);
      const s = collect(g.queue.StreamJobs({ queueName: 'q', workerId: 'w', batchSize: 1 }, g.metadata()) as ClientReadableStream<Json>);
      await s.until(() => s.ended() !== null, 'the refusal');
      assert.equal((s.ended() as ServiceError).code, status.UNAUTHENTICATED);
    }
  });

  test('revoking the key ends its open StreamJobs stream with UNAUTHENTICATED', async () => {
    const { g, key, id } = await org();
    const stream = collect(g.queue.StreamJobs({ queueName: 'q', workerId: 'w', batchSize: 1 }, g.metadata()) as ClientReadableStream<Json>);
    await sleep(300);
    assert.equal(stream.ended(), null);
    const [row] = await n.node.store.query<{ id: string }>('SELECT id FROM api_keys WHERE organization_id = $1', [id]);
    assert.equal((await n.api.as(key).delete(`/api/v1/api-keys/${row!.id}`)).status, 200);
    await stream.until(() => stream.ended() !== null, 'the stream to end');
    assert.equal((stream.ended() as ServiceError).code, status.UNAUTHENTICATED);
    await rejectsWith(g.q('GetJob', { jobId: '00000000-0000-4000-8000-000000000000' }), status.UNAUTHENTICATED);
  });

  test('a key without the permission is PERMISSION_DENIED', async () => {
    const { g: reader } = await org({ permissions: ['jobs:read'] });
    await rejectsWith(reader.q('Enqueue', { queueName: 'q', payload: toStruct({}) }), status.PERMISSION_DENIED, /jobs:write/);
    await rejectsWith(reader.w('Register', {}), status.PERMISSION_DENIED);
    await rejectsWith(reader.q('GetQueueStats', { queueName: 'q' }), status.PERMISSION_DENIED, /queues:read/);
    assert.equal((await reader.q('GetJob', { jobId: '00000000-0000-4000-8000-000000000000' })).job.id, '');
    const { g: writer } = await org({ permissions: ['jobs:write'] });
    await writer.q('Enqueue', { queueName: 'q', payload: toStruct({}) });
    await rejectsWith(writer.q('GetJob', { jobId: '00000000-0000-4000-8000-000000000000' }), status.PERMISSION_DENIED, /jobs:read/);
  });

  test('the active_jobs quota is RESOURCE_EXHAUSTED at exactly the limit, with its details in the message', async () => {
    const { g, id } = await org({ plan: 'free', limited: true });
    await n.node.store.query('UPDATE organizations SET limit_overrides = $2::jsonb WHERE id = $1', [id, JSON.stringify({ rate_per_second: null, burst: null })]);
    for (let i = 0; i < 10; i++) await g.q('Enqueue', { queueName: 'q', payload: toStruct({}) });
    const err = await rejectsWith(g.q('Enqueue', { queueName: 'q', payload: toStruct({}) }), status.RESOURCE_EXHAUSTED, /QUOTA_EXCEEDED/);
    const details = JSON.parse(err.details.slice(err.details.indexOf('{')));
    assert.deepEqual(details, { resource: 'active_jobs', current: 10, limit: 10, plan: 'free', upgrade_to: 'starter' });
    assert.equal(err.metadata.get('x-error-code')[0], 'QUOTA_EXCEEDED');
  });

  test('the workers quota: 50 concurrent Register calls for the last slot, exactly one succeeds', async () => {
    const { g, id } = await org({ plan: 'free' });
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => g.w('Register', { queueName: 'q' })));
    const ok = results.filter((r) => r.status === 'fulfilled');
    assert.equal(ok.length, 1);
    for (const r of results) {
      if (r.status === 'rejected') {
        assert.equal((r.reason as ServiceError).code, status.RESOURCE_EXHAUSTED);
        assert.match((r.reason as ServiceError).details, /"resource":"workers","current":1,"limit":1,"plan":"free"/);
      }
    }
    const [{ n: rows }] = (await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM workers WHERE organization_id = $1', [id])) as [{ n: number }];
    assert.equal(rows, 1);
  });
});

describe('gRPC WorkerService', () => {
  test('Register (a minted id and a given one, refreshed without charge), Heartbeat, Deregister; another organization’s id is refused', async () => {
    const { g, key } = await org({ plan: 'starter' });
    const minted = await g.w('Register', { queueName: 'emails', hostname: 'host-1', maxConcurrency: 4 });
    assert.match(minted.workerId, /^[0-9a-f-]{36}$/);
    assert.equal(minted.created, true);
    assert.deepEqual({ ...minted.worker, registeredAt: undefined, lastHeartbeatAt: undefined }, {
      workerId: minted.workerId,
      queueName: 'emails',
      hostname: 'host-1',
      maxConcurrency: 4,
      registeredAt: undefined,
      lastHeartbeatAt: undefined,
      status: 'active',
    });
    const given = await g.w('Register', { workerId: 'gw-1', queueName: 'emails', hostname: 'h', maxConcurrency: 1 });
    assert.equal(given.workerId, 'gw-1');
    assert.equal(given.created, true);
    const again = await g.w('Register', { workerId: 'gw-1', hostname: 'h2' });
    assert.equal(again.created, false);
    assert.equal(again.worker.hostname, 'h2');
    const usage = await n.api.as(key).get('/api/v1/organizations/usage');
    assert.equal(usage.body.usage.workers.current, 2);

    const other = await org();
    await rejectsWith(other.g.w('Register', { workerId: 'gw-1' }), status.FAILED_PRECONDITION, /another organization/);
    await rejectsWith(other.g.w('Heartbeat', { workerId: 'gw-1' }), status.NOT_FOUND);
    await rejectsWith(other.g.w('Deregister', { workerId: 'gw-1' }), status.NOT_FOUND);

    const hb = await g.w('Heartbeat', { workerId: 'gw-1' });
    assert.equal(hb.status, 'active');
    await rejectsWith(g.w('Heartbeat', { workerId: 'unknown' }), status.NOT_FOUND);
    await rejectsWith(g.w('Register', { workerId: 'bad id!' }), status.INVALID_ARGUMENT);
    const gone = await g.w('Deregister', { workerId: 'gw-1' });
    assert.equal(gone.status, 'deregistered');
    assert.equal(gone.workerId, 'gw-1');
    await rejectsWith(g.w('Deregister', { workerId: 'gw-1' }), status.NOT_FOUND);
    assert.equal((await n.api.as(key).get('/api/v1/organizations/usage')).body.usage.workers.current, 1);
  });
});

describe('gRPC flow control with a manual clock', () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  let m: TestNode;
  let g: Grpc;
  before(async () => {
    m = await startTestNode({ clock });
    g = new Grpc(m.node.grpcPort, m.node.bootstrapKey);
  });
  after(async () => {
    g?.close();
    await m?.stop();
  });

  test('Enqueue with debounce: 50 jobs with one key within 1 s run once, with the last payload', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const r = await g.q('Enqueue', { queueName: 'deb', payload: toStruct({ n: i }), debounce: { key: 'user-1', delayMs: 2_000 } });
      assert.equal(r.created, i === 0, `enqueue ${i}`);
      ids.add(r.job.id);
      await clock.advance(20);
    }
    assert.equal(ids.size, 1);
    assert.deepEqual((await g.q('Dequeue', { queueName: 'deb', workerId: 'w1', batchSize: 10 })).jobs, [], 'the trailing edge has not come');
    await clock.advance(2_000);
    const { jobs } = await g.q('Dequeue', { queueName: 'deb', workerId: 'w1', batchSize: 10 });
    assert.equal(jobs.length, 1);
    assert.deepEqual(fromStruct(jobs[0].payload), { n: 49 });
    const rows = await m.node.store.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE queue_name = 'deb'`);
    assert.equal(rows[0]!.n, 1);
  });

  test('Enqueue with debounce: maxDelayMs bounds the push; 0 means no bound', async () => {
    const debounce = { key: 'k', delayMs: 500, maxDelayMs: 1_000 };
    const first = await g.q('Enqueue', { queueName: 'deb-max', payload: toStruct({ n: 0 }), debounce });
    for (let i = 1; i <= 5; i++) {
      await clock.advance(300);
      const r = await g.q('Enqueue', { queueName: 'deb-max', payload: toStruct({ n: i }), debounce });
      assert.equal(r.job.id, first.job.id);
    }
    const job = (await g.q('GetJob', { jobId: first.job.id })).job;
    assert.equal(Date.parse(job.scheduledAt), Date.parse(first.job.createdAt) + 1_000);
    const { jobs } = await g.q('Dequeue', { queueName: 'deb-max', workerId: 'w1', batchSize: 1 });
    assert.equal(jobs.length, 1, 'due at the bound, though jobs kept coming');
    assert.deepEqual(fromStruct(jobs[0].payload), { n: 5 });

    const unbounded = { key: 'u', delayMs: 500, maxDelayMs: 0 };
    const u = await g.q('Enqueue', { queueName: 'deb-unbounded', payload: toStruct({ n: 0 }), debounce: unbounded });
    for (let i = 1; i <= 5; i++) {
      await clock.advance(300);
      await g.q('Enqueue', { queueName: 'deb-unbounded', payload: toStruct({ n: i }), debounce: unbounded });
    }
    const pushed = (await g.q('GetJob', { jobId: u.job.id })).job;
    assert.equal(Date.parse(pushed.scheduledAt), Date.parse(u.job.createdAt) + 5 * 300 + 500, 'pushed past 1 s: no bound');
    await rejectsWith(g.q('Enqueue', { queueName: 'deb-bad', payload: toStruct({}), debounce: { key: 'b', delayMs: 500, maxDelayMs: 100 } }), status.INVALID_ARGUMENT, /debounce\.max_delay_ms/);
  });

  test('Enqueue with idempotencyTtlSecs: the key frees itself after the window, even for a finished job', async () => {
    const a = await g.q('Enqueue', { queueName: 'idem-a', payload: toStruct({}), idempotencyKey: 'order-1', idempotencyTtlSecs: 60 });
    assert.equal(a.created, true);
    const [c] = (await g.q('Dequeue', { queueName: 'idem-a', workerId: 'w1', batchSize: 1 })).jobs;
    await g.q('Complete', { jobId: c.id, workerId: 'w1', leaseId: c.leaseId });
    await clock.advance(59_000);
    const dup = await g.q('Enqueue', { queueName: 'idem-b', payload: toStruct({}), idempotencyKey: 'order-1' });
    assert.equal(dup.created, false);
    assert.equal(dup.job.id, a.job.id);
    await clock.advance(1_000);
    const fresh = await g.q('Enqueue', { queueName: 'idem-b', payload: toStruct({}), idempotencyKey: 'order-1' });
    assert.equal(fresh.created, true);
    assert.notEqual(fresh.job.id, a.job.id);
    const old = (await g.q('GetJob', { jobId: a.job.id })).job;
    assert.equal(old.idempotencyKey, '', 'the old job gave the key up');
    assert.equal(old.status, 'completed');
    // Without a TTL the key is held while its job exists.
    await clock.advance(3_600_000);
    const held = await g.q('Enqueue', { queueName: 'idem-b', payload: toStruct({}), idempotencyKey: 'order-1' });
    assert.equal(held.created, false);
    assert.equal(held.job.id, fresh.job.id);
    await rejectsWith(g.q('Enqueue', { queueName: 'idem-bad', payload: toStruct({}), idempotencyTtlSecs: 5 }), status.INVALID_ARGUMENT, /idempotency_ttl_secs/);
  });

  test('ExplainJob answers what GET /api/v1/jobs/:id/explain answers', async () => {
    const api = new Api(m.node.url, m.node.bootstrapKey!);
    // A paused queue with two jobs (the second behind the first) and one scheduled for later.
    const first = (await g.q('Enqueue', { queueName: 'ex', payload: toStruct({}), concurrencyKey: 'tenant-1' })).job;
    const second = (await g.q('Enqueue', { queueName: 'ex', payload: toStruct({}), concurrencyKey: 'tenant-1' })).job;
    const later = (await g.q('Enqueue', { queueName: 'ex', payload: toStruct({}), scheduledAt: new Date(clock.now() + 3_600_000).toISOString() })).job;
    assert.equal((await api.post('/api/v1/queues/ex/pause', { reason: 'deploy' })).status, 200);
    for (const job of [first, second, later]) {
      const rest = (await api.get(`/api/v1/jobs/${job.id}/explain`)).body;
      const rpc = await g.q('ExplainJob', { jobId: job.id });
      assert.deepEqual(
        {
          id: rpc.id,
          queue_name: rpc.queueName,
          status: rpc.status,
          running: rpc.running,
          reasons: rpc.reasons.map((r: Json) => ({ reason: r.reason, message: r.message, ...fromStruct(r.data) })),
          at: rpc.at,
        },
        rest,
      );
    }
    const why = async (id: string) => (await g.q('ExplainJob', { jobId: id })).reasons.map((r: Json) => r.reason);
    assert.deepEqual(await why(first.id), ['queue_paused']);
    assert.deepEqual(await why(second.id), ['queue_paused', 'behind_other_jobs']);
    assert.deepEqual(await why(later.id), ['queue_paused', 'scheduled']);
    const paused = (await g.q('ExplainJob', { jobId: second.id })).reasons[0];
    assert.deepEqual(fromStruct(paused.data), { since: new Date(clock.now()).toISOString(), paused_reason: 'deploy' });

    await rejectsWith(g.q('ExplainJob', { jobId: '00000000-0000-4000-8000-000000000000' }), status.NOT_FOUND);
    await rejectsWith(g.q('ExplainJob', { jobId: 'not-a-uuid' }), status.NOT_FOUND);
    const { key } = await insertKey(m, { plan: 'pro' });
    const stranger = new Grpc(m.node.grpcPort, key);
    const { key: writer } = await insertKey(m, { plan: 'pro', permissions: ['jobs:write'] });
    const noRead = new Grpc(m.node.grpcPort, writer);
    try {
      await rejectsWith(stranger.q('ExplainJob', { jobId: first.id }), status.NOT_FOUND);
      await rejectsWith(noRead.q('ExplainJob', { jobId: first.id }), status.PERMISSION_DENIED, /jobs:read/);
    } finally {
      stranger.close();
      noRead.close();
    }
  });
});

test('node.stop() completes with a StreamJobs stream open; the stream ends UNAVAILABLE', async () => {
  const node = await startTestNode();
  const g = new Grpc(node.node.grpcPort, node.node.bootstrapKey);
  try {
    const s = collect(g.queue.StreamJobs({ queueName: 'q', workerId: 'w', batchSize: 1 }, g.metadata()) as ClientReadableStream<Json>);
    await sleep(300);
    assert.equal(s.ended(), null);
    await node.stop();
    await s.until(() => s.ended() !== null, 'the stream to end');
    assert.equal((s.ended() as ServiceError).code, status.UNAVAILABLE);
  } finally {
    g.close();
  }
});
