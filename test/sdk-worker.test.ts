// The SDK's worker runner against a real node: concurrency is a hard cap, a handler three times as long as its
// lease completes once (renewals), a lease lost mid-handler aborts the signal and its late outcome is not
// counted, SIGTERM with 10 jobs in flight finishes them, claims nothing more and deregisters (a real child
// process), an UnrecoverableError dead-letters at once, the gRPC transport (ProcessJobs) processes jobs, a close()
// whose grace ends with a complete in flight does not give that job back (both transports), a close() over gRPC
// waits for the stream's acks in flight within its grace, and a close() facing a silent node returns within its
// grace and the give-backs' bound, reporting what it could not settle, as it does when the deregistration goes unanswered.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  ConnectionError,
  JobCancelledError,
  JobTimeoutError,
  LeaseLostError,
  SluiceClient,
  UnrecoverableError,
  Worker,
  WorkerShutdownError,
  type Job,
} from '../clients/typescript/src/index.js';
import { ManualClock } from '../src/clock.js';
import { CLIENT_SUITE_SKIP, ROOT, sleep, startTestNode, type TestNode } from './helpers.js';

/** Resolves when `cond` holds, checking every 20 ms, or fails after `ms`. */
async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A client whose requests are recorded (path and JSON body). */
function spyClient(n: TestNode, seen: Array<{ path: string; body: any }>): SluiceClient {
  const spy: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    seen.push({ path: url.pathname, body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined });
    return fetch(input, init);
  };
  return new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey!, fetch: spy });
}

async function enqueueMany(c: SluiceClient, queue: string, count: number, extra: Record<string, unknown> = {}): Promise<string[]> {
  const r = await c.jobs.enqueueBulk(Array.from({ length: count }, (_, i) => ({ payload: { i }, ...extra })), { queue_name: queue });
  assert.equal(r.failure_count, 0);
  return r.succeeded.sort((a, b) => a.index - b.index).map((s) => s.id);
}

describe('worker runner', { concurrency: true, skip: CLIENT_SUITE_SKIP }, () => {
  let n: TestNode;
  let client: SluiceClient;
  before(async () => {
    n = await startTestNode();
    client = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey! });
  });
  after(() => n.stop());

  test('concurrency 10 never has more than 10 handlers running, and claims ask for the free slots only', async () => {
    const seen: Array<{ path: string; body: any }> = [];
    const c = spyClient(n, seen);
    await enqueueMany(client, 'w-conc', 40);
    let running = 0;
    let max = 0;
    let completed = 0;
    const worker = new Worker(
      c,
      'w-conc',
      async (job) => {
        running++;
        max = Math.max(max, running);
        await sleep(50 + Math.random() * 100);
        running--;
        return { i: job.payload.i };
      },
      { concurrency: 10, pollWaitMs: 1000 },
    );
    worker.on('completed', () => completed++);
    await until(() => completed === 40, 30_000, '40 completions');
    await worker.close();
    assert.equal(max, 10);
    const claims = seen.filter((s) => s.path === '/api/v1/jobs/claim');
    assert.ok(claims.length > 0);
    for (const claim of claims) assert.ok(claim.body.limit >= 1 && claim.body.limit <= 10, `claim limit ${claim.body.limit}`);
    const stats = await client.jobs.stats({ queue_name: 'w-conc' });
    assert.equal(stats.counts.completed, 40);
  });

  test('a handler running three times its lease completes once (the lease is renewed)', async () => {
    const seen: Array<{ path: string; body: any }> = [];
    const c = spyClient(n, seen);
    const [id] = await enqueueMany(client, 'w-long', 1);
    const completed: Job[] = [];
    const worker = new Worker(c, 'w-long', async () => {
      await sleep(15_200);
      return 'slow but done';
    }, { leaseSeconds: 5, pollWaitMs: 1000 });
    worker.on('completed', (job) => completed.push(job));
    await until(() => completed.length === 1, 30_000, 'the long job to complete');
    await worker.close();
    const job = await client.jobs.get(id!);
    assert.equal(job.status, 'completed');
    assert.equal(job.result, 'slow but done');
    assert.equal(job.retry_count, 0);
    assert.deepEqual(job.errors, []);
    assert.equal(completed.length, 1);
    const renewals = seen.filter((s) => s.path === `/api/v1/jobs/${id}/heartbeat`);
    assert.ok(renewals.length >= 6, `${renewals.length} renewals`);
    assert.ok(renewals.every((r) => r.body.lease_duration_secs === 5));
  });

  test('an UnrecoverableError dead-letters at once; another error is retried', async () => {
    const [fatal, transient] = await enqueueMany(client, 'w-fail', 2, { max_retries: 5 });
    const failed = new Map<string, string | null>();
    const worker = new Worker(client, 'w-fail', (job) => {
      if (job.id === fatal) throw new UnrecoverableError('the invoice does not exist');
      throw new Error('SMTP timeout');
    }, { concurrency: 2, pollWaitMs: 1000 });
    worker.on('failed', (job, _err, status) => failed.set(job.id, status));
    await until(() => failed.size === 2, 10_000, 'two failures');
    await worker.close();
    assert.equal(failed.get(fatal!), 'deadletter');
    assert.equal(failed.get(transient!), 'scheduled');
    const dead = await client.jobs.get(fatal!);
    assert.equal(dead.status, 'deadletter');
    assert.equal(dead.retry_count, 0);
    assert.equal(dead.last_error, 'the invoice does not exist');
    const retried = await client.jobs.get(transient!);
    assert.equal(retried.status, 'scheduled');
    assert.equal(retried.retry_count, 1);
  });

  test("a job past its timeout_seconds: the signal aborts and the job is failed as timed out", async () => {
    const [id] = await enqueueMany(client, 'w-timeout', 1, { timeout_seconds: 5 });
    let reason: unknown;
    const failed: Array<[unknown, string | null]> = [];
    const worker = new Worker(client, 'w-timeout', async (_job, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      reason = ctx.signal.reason;
      return 'too late';
    }, { pollWaitMs: 1000 });
    worker.on('failed', (_job, err, status) => failed.push([err, status]));
    await until(() => failed.length === 1, 15_000, 'the timeout');
    await worker.close();
    assert.ok(reason instanceof JobTimeoutError);
    assert.ok(failed[0]![0] instanceof JobTimeoutError);
    assert.equal(failed[0]![1], 'scheduled');
    const job = await client.jobs.get(id!);
    assert.equal(job.status, 'scheduled');
    assert.match(job.last_error!, /timed out after 5 s/);
  });

  test('close() after the grace period gives running jobs back and aborts their signals', async () => {
    const [id] = await enqueueMany(client, 'w-grace', 1);
    let reason: unknown;
    const worker = new Worker(client, 'w-grace', async (_job, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      reason = ctx.signal.reason;
      // Ignores the signal: the worker must not wait for it. (Unref'd: the test process need not either.)
      await new Promise((resolve) => setTimeout(resolve, 60_000).unref());
    }, { pollWaitMs: 1000 });
    await until(() => worker.active === 1, 10_000, 'the job to start');
    const started = Date.now();
    await worker.close({ graceMs: 300 });
    assert.ok(Date.now() - started < 5_000);
    assert.ok(reason instanceof WorkerShutdownError);
    const job = await client.jobs.get(id!);
    assert.equal(job.status, 'scheduled');
    assert.match(job.last_error!, /shut down/);
    await assert.rejects(client.workers.get(worker.workerId), /not found/i);
  });

  test('a worker removed by someone else registers again under its id', async () => {
    const worker = new Worker(client, 'w-reaped', async () => null, { workerId: 'reaped-worker', workerHeartbeatMs: 100, pollWaitMs: 1000 });
    await worker.ready;
    await client.workers.deregister('reaped-worker');
    await until(async () => (await client.workers.list().toArray()).some((w) => w.id === 'reaped-worker'), 10_000, 'a new registration');
    await worker.close();
    assert.equal((await client.workers.list().toArray()).some((w) => w.id === 'reaped-worker'), false);
  });

  test('bad options are refused at once; a failed start rejects ready and closes', async () => {
    const h = async () => null;
    assert.throws(() => new Worker(client, 'q', h, { concurrency: 0 }), /concurrency must be an integer from 1 to 1000, got 0/);
    assert.throws(() => new Worker(client, 'q', h, { leaseSeconds: 2 }), /leaseSeconds must be an integer from 5 to 3600/);
    assert.throws(() => new Worker(client, 'q', h, { leaseSeconds: 5, heartbeatIntervalMs: 5000 }), /shorter than the lease/);
    assert.throws(() => new Worker(client, '.hidden', h), /not a queue name/);
    assert.throws(() => new Worker(client, 'q', h, { transport: 'tcp' as never }), /transport must be/);
    const tokens = await client.auth.login();
    const jwt = new SluiceClient({ url: n.node.url, apiKey: tokens.access_token });
    const errors: string[] = [];
    const w = new Worker(jwt, 'q', h, { transport: 'grpc' });
    w.on('error', (_e, context) => errors.push(context));
    await assert.rejects(w.ready, /takes an API key, not a JWT/);
    await w.closed;
    assert.deepEqual(errors, ['transport']);
    const denied = new Worker(new SluiceClient({ url: n.node.url, apiKey: 'svc_test_unknown' }), 'q', h);
    denied.on('error', () => {});
    await assert.rejects(denied.ready, /UNAUTHORIZED|credential/i);
    await denied.closed;
  });

  test('the gRPC transport claims, renews, completes and fails over ProcessJobs', async () => {
    const ids = await enqueueMany(client, 'w-grpc', 30);
    const results = new Map<string, unknown>();
    const failed = new Map<string, string | null>();
    let running = 0;
    let max = 0;
    const worker = new Worker(
      client,
      'w-grpc',
      async (job, ctx) => {
        running++;
        max = Math.max(max, running);
        try {
          if (job.payload.i === 7) throw new Error('seven is unlucky');
          if (job.payload.i === 8) {
            // Longer than a renewal period: the lease is renewed over the stream.
            await sleep(1200);
            await ctx.heartbeat();
          }
          await sleep(20);
          return { twice: (job.payload.i as number) * 2 };
        } finally {
          running--;
        }
      },
      { concurrency: 5, transport: 'grpc', grpc: { address: `127.0.0.1:${n.node.grpcPort}` }, leaseSeconds: 5, heartbeatIntervalMs: 300 },
    );
    worker.on('completed', (job, result) => results.set(job.id, result));
    worker.on('failed', (job, _e, status) => failed.set(job.id, status));
    await until(() => results.size + failed.size === 30, 20_000, '30 jobs over gRPC');
    await worker.close();
    assert.ok(max <= 5);
    assert.deepEqual([...failed.entries()], [[ids[7], 'scheduled']]);
    const eight = await client.jobs.get(ids[8]!);
    assert.equal(eight.status, 'completed');
    assert.deepEqual(eight.result, { twice: 16 });
    assert.deepEqual((await client.jobs.get(ids[0]!)).result, { twice: 0 });
    assert.equal((await client.jobs.stats({ queue_name: 'w-grpc' })).counts.completed, 29);
    assert.equal((await client.workers.list().toArray()).some((w) => w.id === worker.workerId), false, 'deregistered');
  });

  for (const transport of ['http', 'grpc'] as const) {
    test(`cancelling a running job aborts its handler's signal (${transport}); ctx.progress() reaches the job`, async () => {
      const queue = `w-cancel-${transport}`;
      const [id] = await enqueueMany(client, queue, 1);
      let reason: unknown = null;
      const worker = new Worker(
        client,
        queue,
        async (_job, ctx) => {
          await ctx.progress(25, 'started', { step: 1 });
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
          reason = ctx.signal.reason;
          return 'too late';
        },
        { transport, grpc: { address: `127.0.0.1:${n.node.grpcPort}` }, leaseSeconds: 5, heartbeatIntervalMs: 200 },
      );
      const completed: string[] = [];
      worker.on('completed', (job) => completed.push(job.id));
      await until(async () => (await client.jobs.get(id!)).progress !== null, 10_000, 'the progress report');
      assert.deepEqual((await client.jobs.get(id!)).progress, { ...((await client.jobs.get(id!)).progress as object), progress: 25, message: 'started', data: { step: 1 } });
      await client.jobs.cancel(id!);
      await until(() => reason !== null, 10_000, 'the abort');
      await worker.close();
      assert.ok(reason instanceof JobCancelledError, String(reason));
      assert.deepEqual(completed, [], 'nothing reported for a cancelled job');
      assert.equal((await client.jobs.get(id!)).status, 'cancelled');
    });
  }

  test('SIGTERM with 10 jobs in flight: all 10 complete, none is claimed after it, the worker is deregistered', async () => {
    const ids = await enqueueMany(client, 'w-term', 20);
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/fixtures/sdk-sigterm-worker.ts')], {
      cwd: ROOT,
      env: { ...process.env, SLUICE_URL: n.node.url, SLUICE_API_KEY: n.node.bootstrapKey!, QUEUE: 'w-term', WORKER_ID: 'term-worker', HANDLER_MS: '3000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (b) => (out += b));
    child.stderr!.on('data', (b) => (out += b));
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    const lines = (word: string) => out.split('\n').filter((l) => l.startsWith(`${word} `));
    try {
      await until(() => lines('start').length === 10, 30_000, `10 jobs in flight:\n${out}`);
      assert.equal((await client.workers.get('term-worker')).id, 'term-worker');
      child.kill('SIGTERM');
      const code = await exited;
      assert.equal(code, 0, out);
    } finally {
      child.kill('SIGKILL');
    }
    assert.equal(lines('done').length, 10, out);
    assert.ok(out.includes('closed'));
    const started = lines('start').map((l) => l.slice(6));
    const jobs = await Promise.all(ids.map((id) => client.jobs.get(id)));
    const completed = jobs.filter((j) => j.status === 'completed').map((j) => j.id);
    assert.deepEqual(completed.sort(), [...started].sort());
    const untouched = jobs.filter((j) => !started.includes(j.id));
    assert.equal(untouched.length, 10);
    for (const j of untouched) {
      assert.equal(j.status, 'pending');
      assert.equal(j.started_at, null, 'never claimed');
      assert.equal(j.retry_count, 0);
    }
    assert.equal((await client.workers.list().toArray()).some((w) => w.id === 'term-worker'), false);
  });
});

describe('worker runner: a lost lease', { skip: CLIENT_SUITE_SKIP }, () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1));
  let n: TestNode;
  let client: SluiceClient;
  before(async () => {
    n = await startTestNode({ clock });
    client = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey! });
  });
  after(() => n.stop());

  test('aborts the signal, and the late outcome is not counted', async () => {
    const [id] = await enqueueMany(client, 'w-lost', 1);
    const reasons: unknown[] = [];
    const lost: string[] = [];
    const completed: unknown[] = [];
    let attempts = 0;
    const worker = new Worker(
      client,
      'w-lost',
      async (_job, ctx) => {
        attempts++;
        if (attempts > 1) return 'second attempt';
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        reasons.push(ctx.signal.reason);
        return 'late';
      },
      { leaseSeconds: 5, heartbeatIntervalMs: 200, pollWaitMs: 500 },
    );
    worker.on('leaseLost', (job) => lost.push(job.id));
    worker.on('completed', (_job, result) => completed.push(result));
    await until(() => attempts === 1, 10_000, 'the first attempt');
    // The lease runs out on the node's clock: the job goes back to pending with retry_count 1.
    await clock.advance(6_000);
    await until(() => completed.length === 1, 10_000, 'the second attempt');
    await worker.close();
    assert.equal(reasons.length, 1);
    assert.ok(reasons[0] instanceof LeaseLostError);
    assert.deepEqual(lost, [id]);
    assert.deepEqual(completed, ['second attempt']);
    const job = await client.jobs.get(id!);
    assert.equal(job.status, 'completed');
    assert.equal(job.result, 'second attempt');
    assert.equal(job.retry_count, 1);
    assert.equal(job.errors[0]!.error, 'lease expired');
  });
});

/** Puts `around` in front of the node's queue actors (its pool.ask) for the asks about `queue`; returns the undo. */
function aroundAsks(n: TestNode, queue: string, around: (op: string, ask: () => Promise<unknown>) => Promise<unknown>): () => void {
  const pool = n.node.pool;
  const ask = pool.ask;
  pool.ask = ((o: string, q: string, op: string, args: unknown) => {
    const real = () => (ask as (...a: unknown[]) => Promise<unknown>).call(pool, o, q, op, args);
    return q === queue ? around(op, real) : real();
  }) as typeof pool.ask;
  return () => void (pool.ask = ask);
}

describe('worker runner: close() with a report in flight', { skip: CLIENT_SUITE_SKIP }, () => {
  let n: TestNode;
  let client: SluiceClient;
  before(async () => {
    n = await startTestNode();
    client = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey! });
  });
  after(() => n.stop());

  // The handler returns once close() has begun, and the queue's actor holds its complete until a fail of the
  // queue is answered (the give-back that would race it) or for a second, past the grace: the report is in flight
  // when the grace ends.
  for (const transport of ['http', 'grpc'] as const) {
    test(`a job whose complete is in flight when the grace ends is not given back: it ends completed (${transport})`, async () => {
      const queue = `w-close-report-${transport}`;
      const [id] = await enqueueMany(client, queue, 1);
      let failAnswered!: () => void;
      const failed = new Promise<void>((resolve) => (failAnswered = resolve));
      let completes = 0;
      const restore = aroundAsks(n, queue, (op, ask) => {
        if (op === 'fail') return ask().finally(failAnswered);
        if (op !== 'complete' && op !== 'completeMany') return ask();
        completes++;
        return Promise.race([failed, sleep(1000)]).then(ask);
      });
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const events: string[] = [];
      const worker = new Worker(
        client,
        queue,
        async () => {
          await gate;
          return 'done';
        },
        { pollWaitMs: 1000, transport, grpc: { address: `127.0.0.1:${n.node.grpcPort}` } },
      );
      for (const event of ['completed', 'failed', 'leaseLost'] as const) worker.on(event, () => events.push(event));
      worker.on('error', () => {});
      try {
        await until(() => worker.active === 1, 10_000, 'the job to start');
        const closed = worker.close({ graceMs: 300 });
        release();
        await until(() => completes > 0, 5_000, 'the complete at the node');
        await closed;
      } finally {
        restore();
        await worker.close();
      }
      await until(async () => (await client.jobs.get(id!)).status !== 'processing', 10_000, 'the job to leave processing');
      const job = await client.jobs.get(id!);
      assert.deepEqual([job.status, job.result, job.errors], ['completed', 'done', []]);
      assert.ok(!events.includes('failed') && !events.includes('leaseLost'), `events: ${events.join(', ')}`);
    });
  }

  // The complete went out on the stream; the queue's actor holds it, so its ack does not come. close() waits for
  // the acks in flight within its grace, not for up to 5 s before it, and reports the one it could not settle.
  test('over gRPC, close() with an ack in flight returns within its short grace, not after a wait for the ack', async () => {
    const queue = 'w-close-acks';
    const [id] = await enqueueMany(client, queue, 1);
    let completes = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const restore = aroundAsks(n, queue, (op, ask) => {
      if (op !== 'complete' && op !== 'completeMany') return ask();
      completes++;
      return released.then(ask);
    });
    const worker = new Worker(client, queue, () => 'done', { pollWaitMs: 1000, transport: 'grpc', grpc: { address: `127.0.0.1:${n.node.grpcPort}` } });
    const errors: Array<[unknown, string]> = [];
    worker.on('error', (err, context) => errors.push([err, context]));
    let took = Infinity;
    try {
      await until(() => completes === 1, 10_000, 'the complete at the node');
      const started = Date.now();
      await worker.close({ graceMs: 300 });
      took = Date.now() - started;
    } finally {
      release();
      restore();
      await worker.close();
    }
    assert.ok(took < 2_500, `close() took ${took} ms`);
    // What close() could not settle is told, before it returns.
    assert.deepEqual(
      errors.map(([err, context]) => [context, err instanceof ConnectionError && err.code]),
      [[`report of job ${id}`, 'TIMEOUT']],
    );
    // The complete held at the node lands all the same.
    await until(async () => (await client.jobs.get(id!)).status === 'completed', 10_000, 'the job completed');
  });

  // The node never answers this worker's completes and fails (each attempt waits out the client's 1 s timeoutMs,
  // and would be retried four times): close() returns after its grace and the give-backs' bound, and reports what it
  // could not settle.
  test('over REST, close() is bounded by its grace and the give-backs\' bound; what it could not settle is an error', async () => {
    const queue = 'w-close-bound';
    const ids = await enqueueMany(client, queue, 2);
    const silent: typeof fetch = (input, init) => {
      if (!/^\/api\/v1\/jobs\/(complete|[^/]+\/fail)$/.test(new URL(String(input)).pathname)) return fetch(input, init);
      return new Promise((_, reject) => init!.signal!.addEventListener('abort', () => reject(init!.signal!.reason), { once: true }));
    };
    const c = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey!, fetch: silent, timeoutMs: 1000 });
    let running = 0;
    const worker = new Worker(
      c,
      queue,
      async (job, ctx) => {
        running++;
        // The first job returns at once (its complete goes unanswered); the second runs until close() gives it back.
        if (job.id === ids[1]) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        return 'done';
      },
      { concurrency: 2, pollWaitMs: 1000 },
    );
    const errors: Array<[unknown, string]> = [];
    worker.on('error', (err, context) => errors.push([err, context]));
    let took = Infinity;
    try {
      await until(() => running === 2, 10_000, 'both jobs running');
      const started = Date.now();
      await worker.close({ graceMs: 300 });
      took = Date.now() - started;
    } finally {
      await worker.close();
    }
    assert.ok(took < 2_500, `close() took ${took} ms`);
    assert.deepEqual(
      errors.map(([err, context]) => [context, err instanceof ConnectionError && err.code]).sort(),
      [
        [`give back job ${ids[1]}`, 'TIMEOUT'],
        [`report of job ${ids[0]}`, 'TIMEOUT'],
      ],
    );
  });

  // The node never answers the deregistration: each attempt would wait out the client's 1 s timeoutMs and be
  // retried four times. close() gives it up after one timeoutMs, tells it as an error, and the worker is still
  // listed until the node reaps it.
  test('close() is bounded while the node does not answer the deregistration', async () => {
    const silent: typeof fetch = (input, init) => {
      if (!new URL(String(input)).pathname.endsWith('/deregister')) return fetch(input, init);
      return new Promise((_, reject) => init!.signal!.addEventListener('abort', () => reject(init!.signal!.reason), { once: true }));
    };
    const c = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey!, fetch: silent, timeoutMs: 1000 });
    const workerId = `w-close-deregister-${Date.now()}`;
    const worker = new Worker(c, 'w-close-deregister', async () => 'done', { pollWaitMs: 1000, workerId });
    const errors: Array<[unknown, string]> = [];
    worker.on('error', (err, context) => errors.push([err, context]));
    await worker.ready;
    const started = Date.now();
    await worker.close({ graceMs: 300 });
    const took = Date.now() - started;
    assert.ok(took < 2_500, `close() took ${took} ms`);
    assert.deepEqual(
      errors.map(([err, context]) => [context, err instanceof ConnectionError && err.code]),
      [['deregister', 'TIMEOUT']],
    );
    assert.equal((await client.workers.get(workerId)).status, 'active');
  });
});
