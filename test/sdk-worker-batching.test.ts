// The SDK worker's fast path over REST, against a real node: completions go out as batch acknowledgements
// (POST /api/v1/jobs/complete) and claims carry several jobs, counted by the node itself (/metrics); concurrency
// stays a hard cap; a stale item inside a batch is that job's leaseLost only; a batch whose answer was lost and
// that was sent again is not taken for lost leases (the rule in clients/typescript/src/acks.ts), nor is a fail
// sent again, over REST or a gRPC unary call; over gRPC, the claim goes out with the completes, for the slots they
// free, before their acks, and a stream broken meanwhile is reopened without claiming beyond the free slots; on a
// connection that is up but silent, a unary call ends at its deadline and close() returns, a stream is broken by
// the worker's keepalive, and the node's own keepalive ends the streams of a client gone silent; over gRPC, jobs
// and completes travel several per message, and with a node from before that (a stand-in) the worker falls back
// to single messages and claims of 100; and the optional
// prefetch holds claimed jobs beyond the concurrency without running more handlers at once.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Server, ServerCredentials, status, type ServerDuplexStream } from '@grpc/grpc-js';
import { ConnectionError, SluiceClient, Worker, type Job, type RetryEvent } from '../clients/typescript/src/index.js';
import { GrpcTransport } from '../clients/typescript/src/grpc.js';
import type { TransportHost } from '../clients/typescript/src/worker.js';
import { ManualClock } from '../src/clock.js';
import { loadQueueV1, toStruct } from '../src/io/grpc/proto.js';
import { CLIENT_SUITE_SKIP, sleep, startTestNode, type TestNode } from './helpers.js';

async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function enqueue(c: SluiceClient, queue: string, items: Array<Record<string, unknown>>): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < items.length; i += 100) {
    const r = await c.jobs.enqueueBulk(items.slice(i, i + 100).map((extra, k) => ({ payload: { i: i + k }, ...extra })), { queue_name: queue });
    assert.equal(r.failure_count, 0);
    ids.push(...r.succeeded.sort((a, b) => a.index - b.index).map((s) => s.id));
  }
  return ids;
}

/** Answered POSTs of a route so far, from the node's own request histogram. */
async function served(n: TestNode, route: string): Promise<number> {
  const text = await (await fetch(`${n.node.url}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('sluice_http_request_duration_seconds_count{')) continue;
    if (line.includes('method="POST"') && line.includes(`route="${route}"`)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** A client whose requests pass through `around` (a recording or answer-dropping hop in front of the real node). */
function clientThrough(n: TestNode, around: (url: URL, init: RequestInit | undefined, send: () => Promise<Response>) => Promise<Response>): SluiceClient {
  const f: typeof fetch = (input, init) => around(new URL(String(input)), init, () => fetch(input, init));
  return new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey!, fetch: f, retry: { baseDelayMs: 20 } });
}

/** gRPC streams the node has open now, from its /metrics. */
async function openGrpcStreams(n: TestNode): Promise<number> {
  const text = await (await fetch(`${n.node.url}/metrics`)).text();
  return Number(/^sluice_streams_open\{transport="grpc"\} (\d+)$/m.exec(text)?.[1] ?? NaN);
}

/**
 * A TCP relay in front of the node's gRPC port, as the network between a worker and the service: `mute()` stops
 * passing what the node sends (acks, jobs) while the worker's messages still go through, `reset()` resets every
 * connection through it at once (a broken network path) and passes new ones both ways again.
 */
/** The gRPC transport alone, without a worker or its stream: complete, fail and renew go as unary calls. */
function unaryTransport(c: SluiceClient, queue: string, workerId: string, port: number): Promise<GrpcTransport> {
  const host: TransportHost = {
    client: c,
    queue,
    workerId,
    concurrency: 1,
    prefetch: 0,
    active: 0,
    leaseSeconds: undefined,
    pollWaitMs: 1000,
    grpc: { address: `127.0.0.1:${port}` },
    stopping: false,
    free: () => 0,
    dispatch: () => {},
    cancelled: () => {},
    reportError: () => {},
  };
  return GrpcTransport.create(host);
}

class GrpcRelay {
  private readonly sockets = new Set<net.Socket>();
  private readonly server: net.Server;
  private muted = false;
  private refusing = false;
  port = 0;
  /** Connections refused (reset at once) while refusing. */
  refused = 0;

  constructor(target: number) {
    this.server = net.createServer((worker) => {
      if (this.refusing) {
        this.refused++;
        worker.on('error', () => {});
        worker.resetAndDestroy();
        return;
      }
      const node = net.connect(target, '127.0.0.1');
      for (const s of [worker, node]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      worker.pipe(node);
      node.on('data', (b: Buffer) => void (this.muted || worker.write(b)));
      worker.on('close', () => node.destroy());
      node.on('close', () => worker.destroy());
    });
  }

  async open(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  mute(): void {
    this.muted = true;
  }

  reset(): void {
    this.muted = false;
    for (const s of this.sockets) s.resetAndDestroy();
  }

  /** The node unreachable: connections are cut, new ones reset at once, until accept(). */
  refuse(): void {
    this.refusing = true;
    this.reset();
  }

  accept(): void {
    this.refusing = false;
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('worker over REST: batch acknowledgements and claims of several jobs', { skip: CLIENT_SUITE_SKIP }, () => {
  let n: TestNode;
  let client: SluiceClient;
  before(async () => {
    n = await startTestNode();
    client = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey! });
  });
  after(() => n.stop());

  test('concurrency 20 completes 500 jobs with far fewer complete requests and claims than jobs, never more than 20 at once', async () => {
    const ids = await enqueue(client, 'b-many', Array.from({ length: 500 }, () => ({})));
    const before = { many: await served(n, '/api/v1/jobs/complete'), one: await served(n, '/api/v1/jobs/:id/complete'), claims: await served(n, '/api/v1/jobs/claim') };
    let running = 0;
    let max = 0;
    const results = new Map<string, unknown>();
    const worker = new Worker(
      client,
      'b-many',
      async (job) => {
        running++;
        max = Math.max(max, running);
        // Handlers as long as one another: those started together finish in the same turn. (Handlers of
        // different lengths finish in different turns, and each turn's completions are one batch: with 0–2 ms
        // handlers here, about 5 jobs per request instead of about 10.)
        await sleep(1);
        running--;
        return { twice: (job.payload.i as number) * 2 };
      },
      { concurrency: 20, pollWaitMs: 1000 },
    );
    worker.on('completed', (job, result) => results.set(job.id, result));
    await until(() => results.size === 500, 60_000, '500 completions');
    await worker.close();
    assert.ok(max <= 20, `${max} handlers at once`);
    const many = (await served(n, '/api/v1/jobs/complete')) - before.many;
    const one = (await served(n, '/api/v1/jobs/:id/complete')) - before.one;
    const claims = (await served(n, '/api/v1/jobs/claim')) - before.claims;
    assert.equal(one, 0, 'no single completes');
    assert.ok(many > 0 && many <= 100, `${many} batch acknowledgements for 500 jobs`);
    assert.ok(claims <= 100, `${claims} claims for 500 jobs`);
    const stats = await client.jobs.stats({ queue_name: 'b-many' });
    assert.equal(stats.counts.completed, 500);
    for (const id of [ids[0]!, ids[250]!, ids[499]!]) {
      const job = await client.jobs.get(id);
      assert.deepEqual(job.result, { twice: (job.payload.i as number) * 2 });
      assert.deepEqual(results.get(id), job.result);
    }
  });

  // close() while an acknowledgement carrying a claim is in flight: the node has claimed the jobs for this worker,
  // so they are its own and run within the grace; none is left leased to a worker that is gone.
  test('close() with a claim riding on an acknowledgement in flight runs the jobs that claim brings', async () => {
    const queue = 'b-ride-close';
    const ids = await enqueue(client, queue, Array.from({ length: 4 }, () => ({})));
    let release: (() => void) | null = null;
    let held = false;
    let brought: string[] = [];
    const c = clientThrough(n, async (url, init, send) => {
      if (url.pathname !== '/api/v1/jobs/complete' || held || !JSON.parse(String(init!.body)).claim) return send();
      held = true;
      const res = await send();
      brought = ((await res.clone().json()) as { jobs?: Array<{ id: string }> }).jobs?.map((j) => j.id) ?? [];
      // Answered by the node (the claim is made); the answer reaches the worker when the test lets it.
      await new Promise<void>((resolve) => (release = resolve));
      return res;
    });
    const completed = new Set<string>();
    const errors: unknown[] = [];
    const worker = new Worker(c, queue, async () => 'ok', { concurrency: 2, pollWaitMs: 1000 });
    worker.on('completed', (job) => completed.add(job.id));
    worker.on('error', (err) => errors.push(err));
    worker.on('leaseLost', (job) => errors.push(new Error(`lost ${job.id}`)));
    await until(() => release !== null, 10_000, 'an acknowledgement carrying a claim in flight');
    const closing = worker.close({ graceMs: 5_000 });
    await sleep(200);
    release!();
    await closing;
    assert.deepEqual(errors, []);
    assert.ok(brought.length > 0, 'the claim riding on the held acknowledgement brought jobs');
    for (const id of brought) assert.ok(completed.has(id), `job ${id}, brought by the riding claim, ran`);
    // Every job is done or still waiting for a worker: none is left leased to this one.
    const statuses = await Promise.all(ids.map(async (id) => (await client.jobs.get(id)).status));
    assert.deepEqual(statuses.filter((st) => st !== 'completed' && st !== 'pending'), []);
    assert.equal(statuses.filter((st) => st === 'completed').length, completed.size);
  });

  test('acknowledgements carry the next claim: the claim route is left to the long polls of an emptied worker', async () => {
    await enqueue(client, 'b-ride', Array.from({ length: 300 }, () => ({})));
    let claimRequests = 0;
    let ridden = 0;
    let batches = 0;
    const c = clientThrough(n, async (url, init, send) => {
      if (url.pathname === '/api/v1/jobs/claim') claimRequests++;
      if (url.pathname === '/api/v1/jobs/complete') {
        batches++;
        if (JSON.parse(String(init!.body)).claim) ridden++;
      }
      return send();
    });
    let running = 0;
    let max = 0;
    let done = 0;
    const errors: unknown[] = [];
    const worker = new Worker(
      c,
      'b-ride',
      async () => {
        running++;
        max = Math.max(max, running);
        await sleep(1);
        running--;
      },
      { concurrency: 10, pollWaitMs: 1000 },
    );
    worker.on('completed', () => done++);
    worker.on('error', (err) => errors.push(err));
    worker.on('leaseLost', (job) => errors.push(new Error(`lost ${job.id}`)));
    await until(() => done === 300, 60_000, '300 completions');
    await worker.close();
    assert.deepEqual(errors, []);
    assert.ok(max <= 10, `${max} handlers at once`);
    assert.ok(ridden >= batches / 2, `${ridden} of ${batches} batches carried a claim`);
    assert.ok(claimRequests < ridden, `${claimRequests} claim requests beside ${ridden} claims on acknowledgements`);
    assert.equal((await client.jobs.stats({ queue_name: 'b-ride' })).counts.completed, 300);
  });

  test('claims carry up to 500 jobs; against an older service that refuses over 100, the worker claims 100 at most, without an error', async () => {
    // The hop answers as a service before CLAIM_MAX did (422 on `limit` or `claim.limit`, nothing changed) when
    // `old` is set; the worker holds 600 (concurrency 100, prefetch 500), so it asks for more than 100 at once.
    const sizes = async (queue: string, old: boolean) => {
      await enqueue(client, queue, Array.from({ length: 1500 }, () => ({})));
      const asked: number[] = [];
      let refused = 0;
      const c = clientThrough(n, async (url, init, send) => {
        const body = url.pathname === '/api/v1/jobs/claim' || url.pathname === '/api/v1/jobs/complete' ? JSON.parse(String(init!.body)) : null;
        const limit: number | undefined = url.pathname === '/api/v1/jobs/claim' ? body.limit : body?.claim?.limit;
        if (limit !== undefined) asked.push(limit);
        if (old && limit !== undefined && limit > 100) {
          refused++;
          const field = url.pathname === '/api/v1/jobs/claim' ? 'limit' : 'claim.limit';
          const error = { error: 'validation_error', code: 'VALIDATION_ERROR', message: `${field} must be <= 100`, status: 422, details: [{ field, message: 'must be <= 100' }] };
          return new Response(JSON.stringify(error), { status: 422, headers: { 'content-type': 'application/json' } });
        }
        return send();
      });
      let done = 0;
      const errors: unknown[] = [];
      const worker = new Worker(c, queue, async () => sleep(1), { concurrency: 100, prefetch: 500, pollWaitMs: 1000 });
      worker.on('completed', () => done++);
      worker.on('error', (err) => errors.push(err));
      worker.on('leaseLost', (job) => errors.push(new Error(`lost ${job.id}`)));
      await until(() => done === 1500, 60_000, '1,500 completions');
      await worker.close();
      assert.deepEqual(errors, []);
      assert.equal((await client.jobs.stats({ queue_name: queue })).counts.completed, 1500);
      return { asked, refused };
    };
    const now = await sizes('b-claim-500', false);
    assert.ok(Math.max(...now.asked) > 100 && Math.max(...now.asked) <= 500, `claims of ${now.asked.join(', ')}`);
    const old = await sizes('b-claim-old', true);
    assert.ok(old.refused >= 1 && old.refused <= 3, `${old.refused} claims refused: only those asked before the first refusal came back`);
    assert.ok(old.asked.slice(old.refused + 2).every((l) => l <= 100), `claims of ${old.asked.join(', ')}`);
  });

  test('two acknowledgements in flight each carry a claim (two lanes), together never for more slots than they free', async () => {
    // Concurrency 10 in two lanes of 5. The first five handlers return at once, the other five on a gate; the first
    // batch's request is held until the second batch arrives, so both are in flight together.
    await enqueue(client, 'b-lanes', Array.from({ length: 30 }, () => ({})));
    const claims: number[] = [];
    let batches = 0;
    let second!: () => void;
    const secondSent = new Promise<void>((resolve) => (second = resolve));
    const c = clientThrough(n, async (url, init, send) => {
      if (url.pathname === '/api/v1/jobs/complete') {
        const body = JSON.parse(String(init!.body)) as { claim?: { limit: number } };
        const k = ++batches;
        if (k <= 2) claims.push(body.claim?.limit ?? 0);
        if (k === 1) await secondSent;
        if (k === 2) second();
      }
      return send();
    });
    let running = 0;
    let max = 0;
    let started = 0;
    let done = 0;
    let gate!: () => void;
    const open = new Promise<void>((resolve) => (gate = resolve));
    const errors: unknown[] = [];
    const worker = new Worker(
      c,
      'b-lanes',
      async () => {
        running++;
        max = Math.max(max, running);
        if (++started > 5 && started <= 10) await open;
        running--;
      },
      { concurrency: 10, pollWaitMs: 1000 },
    );
    worker.on('completed', () => done++);
    worker.on('error', (err) => errors.push(err));
    await until(() => batches === 1, 10_000, 'the first batch');
    gate();
    await until(() => done === 30, 30_000, '30 completions');
    await worker.close();
    assert.deepEqual(errors, []);
    assert.deepEqual(claims, [5, 5], 'each of the two batches in flight claims its own five slots');
    assert.ok(max <= 10, `${max} handlers at once`);
    assert.equal((await client.jobs.stats({ queue_name: 'b-lanes' })).counts.completed, 30);
  });

  test('a result the service refuses fails alone: its batch is split into single completes', async () => {
    // Deeper than BODY_MAX_DEPTH: the batch is refused whole (422), then each job is completed alone.
    let deep: unknown = 'bottom';
    for (let i = 0; i < 80; i++) deep = { d: deep };
    const ids = await enqueue(client, 'b-split', Array.from({ length: 6 }, () => ({})));
    const errors: Array<[unknown, string]> = [];
    const completed: string[] = [];
    let gate!: () => void;
    const open = new Promise<void>((resolve) => (gate = resolve));
    const worker = new Worker(client, 'b-split', async (job) => {
      await open;
      return job.payload.i === 3 ? deep : 'ok';
    }, { concurrency: 6, pollWaitMs: 1000 });
    worker.on('completed', (job) => completed.push(job.id));
    worker.on('error', (err, context) => errors.push([err, context]));
    await until(() => worker.active === 6, 10_000, 'six jobs running');
    gate();
    await until(() => completed.length === 5 && errors.length === 1, 10_000, 'five completions and one refusal');
    await worker.close();
    assert.deepEqual(completed.sort(), ids.filter((_, i) => i !== 3).sort());
    assert.match(errors[0]![1], new RegExp(`report of job ${ids[3]}`));
    assert.equal((await client.jobs.get(ids[3]!)).status, 'processing');
  });
});

describe('worker over REST: stale items and resent batches', { skip: CLIENT_SUITE_SKIP }, () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1));
  let n: TestNode;
  let client: SluiceClient;
  before(async () => {
    n = await startTestNode({ clock });
    client = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey! });
  });
  after(() => n.stop());

  /**
   * Five jobs held by a worker of concurrency 5 whose handlers wait for `gate` (then throw, with `fail`); job 2 has
   * a 5 s lease (its timeout), the others 60 s. No renewal runs before the gate opens (the period is a minute), so
   * advancing the node's clock 6 s makes job 2's lease stale and no other.
   */
  /** `failWith`: the message the first attempts fail with (null: they complete). */
  async function fiveHeld(queue: string, c: SluiceClient, failWith: string | null = null) {
    const ids = await enqueue(client, queue, [0, 1, 2, 3, 4].map((i) => ({ timeout_seconds: i === 2 ? 5 : 60 })));
    let gate!: () => void;
    const open = new Promise<void>((resolve) => (gate = resolve));
    const lost: string[] = [];
    const completed: Array<[string, number]> = [];
    const failed: Array<[string, string | null]> = [];
    const errors: unknown[] = [];
    const worker = new Worker(
      c,
      queue,
      async (_job: Job, ctx) => {
        if (ctx.attempt === 1) {
          await open;
          if (failWith !== null) throw new Error(failWith);
        }
        return ctx.attempt;
      },
      { concurrency: 5, pollWaitMs: 500, heartbeatIntervalMs: 60_000 },
    );
    worker.on('leaseLost', (job) => lost.push(job.id));
    worker.on('completed', (job, attempt) => completed.push([job.id, attempt as number]));
    worker.on('failed', (job, _err, status) => failed.push([job.id, status]));
    worker.on('error', (err) => errors.push(err));
    await until(() => worker.active === 5, 10_000, 'five jobs running');
    await clock.advance(6_000);
    await until(async () => (await client.jobs.get(ids[2]!)).retry_count === 1, 10_000, "job 2's lease to run out");
    return { ids, gate, lost, completed, failed, errors, worker };
  }

  test('a stale item inside a batch fires leaseLost for that job only; the others of the batch complete', async () => {
    const batches: string[][] = [];
    const c = clientThrough(n, async (url, init, send) => {
      if (url.pathname === '/api/v1/jobs/complete') batches.push(JSON.parse(String(init!.body)).jobs.map((j: { id: string }) => j.id));
      return send();
    });
    const { ids, gate, lost, completed, errors, worker } = await fiveHeld('b-stale', c);
    gate();
    await until(() => completed.filter(([, a]) => a === 1).length === 4 && lost.length === 1, 10_000, 'four completions and one lost lease');
    await worker.close();
    assert.deepEqual(lost, [ids[2]]);
    assert.deepEqual(completed.filter(([, a]) => a === 1).map(([id]) => id).sort(), ids.filter((_, i) => i !== 2).sort());
    assert.deepEqual(errors, []);
    assert.ok(batches.some((b) => b.length === 5 && b.includes(ids[2]!)), `the stale item rode with the others: ${JSON.stringify(batches)}`);
    for (const [i, id] of ids.entries()) if (i !== 2) assert.equal((await client.jobs.get(id)).status, 'completed');
  });

  test('a batch whose answer was lost is sent again: its completed items are not lost leases, a truly stale one is', async () => {
    let dropped = 0;
    const claims: boolean[] = [];
    const c = clientThrough(n, async (url, init, send) => {
      if (url.pathname === '/api/v1/jobs/complete') claims.push(JSON.parse(String(init!.body)).claim !== undefined);
      const res = await send();
      if (url.pathname === '/api/v1/jobs/complete' && dropped === 0) {
        // The service did the work; its answer never arrives.
        dropped++;
        await res.arrayBuffer();
        throw new TypeError('fetch failed', { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) });
      }
      return res;
    });
    const { ids, gate, lost, completed, errors, worker } = await fiveHeld('b-resent', c);
    gate();
    await until(() => completed.filter(([, a]) => a === 1).length === 4 && lost.length === 1, 10_000, 'four completions and one lost lease');
    await worker.close();
    assert.equal(dropped, 1);
    // The lost batch carried the worker's next claim; it went again without it (a claim is never resent).
    assert.deepEqual(claims.slice(0, 2), [true, false]);
    assert.deepEqual(lost, [ids[2]], 'only the job whose lease really ran out');
    assert.deepEqual(completed.filter(([, a]) => a === 1).map(([id]) => id).sort(), ids.filter((_, i) => i !== 2).sort());
    assert.deepEqual(errors, []);
  });

  /** A client whose first fail of each job reaches the node, which does the work (or refuses it), but whose answer never arrives. */
  function losingFirstFailAnswers(): { c: SluiceClient; dropped: Set<string> } {
    const dropped = new Set<string>();
    const c = clientThrough(n, async (url, _init, send) => {
      const res = await send();
      const id = /^\/api\/v1\/jobs\/([^/]+)\/fail$/.exec(url.pathname)?.[1];
      if (id && !dropped.has(id)) {
        dropped.add(id);
        await res.arrayBuffer();
        throw new TypeError('fetch failed', { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) });
      }
      return res;
    });
    return { c, dropped };
  }

  test('a fail whose answer was lost is sent again: the fails that landed are not lost leases, a truly stale one is', async () => {
    const { c, dropped } = losingFirstFailAnswers();
    const { ids, gate, lost, completed, failed, errors, worker } = await fiveHeld('b-fail-resent', c, 'the first attempt fails');
    try {
      gate();
      await until(() => failed.length === 4 && lost.length === 1 && completed.length === 1, 10_000, 'four fails, one lost lease, its retry completed');
    } finally {
      await worker.close();
    }
    assert.equal(dropped.size, 5);
    assert.deepEqual(lost, [ids[2]], 'only the job whose lease really ran out');
    const others = ids.filter((_, i) => i !== 2);
    assert.deepEqual(failed.map(([id]) => id).sort(), [...others].sort());
    assert.ok(failed.every(([, status]) => status === 'scheduled'), `statuses read back: ${JSON.stringify(failed)}`);
    assert.deepEqual(completed, [[ids[2], 2]]);
    assert.deepEqual(errors, []);
    for (const id of others) {
      const job = await client.jobs.get(id);
      assert.deepEqual([job.status, job.retry_count, job.errors.map((e) => [e.attempt, e.error])], ['scheduled', 1, [[1, 'the first attempt fails']]]);
    }
  });

  // A handler whose message is the very text a lease's expiry writes: a read-back cannot tell its fail from the
  // expiry, so the job whose lease ran out is not reported as failed (nor is any other whose answer was lost: what
  // may be a lost lease is told as one).
  test("a resent fail whose message is `lease expired` is not read back as landed", async () => {
    const { c } = losingFirstFailAnswers();
    const { ids, gate, lost, completed, failed, errors, worker } = await fiveHeld('b-fail-expiry-text', c, 'lease expired');
    try {
      gate();
      await until(() => failed.length + lost.length === 5 && completed.length === 1, 10_000, 'five outcomes, the expired job retried');
    } finally {
      await worker.close();
    }
    assert.ok(lost.includes(ids[2]!), `the expired job is a lost lease: ${JSON.stringify({ lost, failed })}`);
    assert.ok(!failed.some(([id]) => id === ids[2]), 'the expired job is not reported failed');
    assert.deepEqual(completed, [[ids[2], 2]]);
    assert.deepEqual(errors, []);
  });
});

describe('worker over gRPC: the claim rides with the completes', { skip: CLIENT_SUITE_SKIP }, () => {
  let n: TestNode;
  let client: SluiceClient;
  before(async () => {
    n = await startTestNode();
    client = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey! });
  });
  after(() => n.stop());

  /**
   * Counts the claims the queue's actor is asked, and those that ask ahead of the acks: whose limit, with the jobs
   * the worker holds as the actor sees them (handed out by claims, not completed by an answered ask), exceeds
   * concurrency + prefetch. A worker that claims only the slots freed by the acks it has received never does.
   */
  function watchClaims(queue: string, capacity: number): { claims: number; ahead: number; stop: () => void } {
    const pool = n.node.pool;
    const ask = pool.ask;
    const seen = { claims: 0, ahead: 0, stop: () => void (pool.ask = ask) };
    let held = 0;
    pool.ask = ((o: string, q: string, op: string, args: { limit?: number }) => {
      const reply = (ask as (...a: unknown[]) => Promise<any>).call(pool, o, q, op, args);
      if (q !== queue) return reply;
      if (op === 'claim') {
        seen.claims++;
        if (held + args.limit! > capacity) seen.ahead++;
        void reply.then((r: { jobs: unknown[] }) => (held += r.jobs.length), () => {});
      }
      if (op === 'completeMany') void reply.then((r: Array<{ ok: boolean }>) => (held -= r.filter((x) => x.ok).length), () => {});
      return reply;
    }) as typeof pool.ask;
    return seen;
  }

  for (const { concurrency, prefetch } of [
    { concurrency: 1, prefetch: 0 },
    { concurrency: 4, prefetch: 0 },
    { concurrency: 2, prefetch: 4 },
  ]) {
    test(`concurrency ${concurrency}, prefetch ${prefetch}: claims go out with the completes, each job runs once, never more than ${concurrency} at once`, async () => {
      const queue = `g-ride-${concurrency}-${prefetch}`;
      const total = 200;
      await enqueue(client, queue, Array.from({ length: total }, () => ({})));
      const runs = new Map<string, number>();
      let running = 0;
      let max = 0;
      let done = 0;
      const errors: unknown[] = [];
      const watch = watchClaims(queue, concurrency + prefetch);
      const worker = new Worker(
        client,
        queue,
        async (job) => {
          runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
          running++;
          max = Math.max(max, running);
          await sleep(1);
          running--;
        },
        { concurrency, prefetch, pollWaitMs: 1000, transport: 'grpc', grpc: { address: `127.0.0.1:${n.node.grpcPort}` } },
      );
      worker.on('completed', () => done++);
      worker.on('error', (err) => errors.push(err));
      worker.on('leaseLost', (job) => errors.push(new Error(`lost ${job.id}`)));
      try {
        await until(() => done === total, 60_000, `${total} completions`);
      } finally {
        watch.stop();
        await worker.close();
      }
      assert.deepEqual(errors, []);
      assert.ok(max <= concurrency, `${max} handlers at once`);
      assert.equal(runs.size, total);
      assert.ok([...runs.values()].every((r) => r === 1), 'each job ran once');
      assert.equal((await client.jobs.stats({ queue_name: queue })).counts.completed, total);
      assert.ok(watch.ahead >= watch.claims / 2, `${watch.ahead} of ${watch.claims} claims asked for the slots of completes not answered yet`);
    });
  }

  test('batches on the stream: jobs come in JobBatch messages, completes go out in CompleteBatch messages, claims of more than 100', async () => {
    const queue = 'g-batches';
    const total = 1_000;
    const [concurrency, prefetch] = [50, 450];
    await enqueue(client, queue, Array.from({ length: total }, () => ({})));
    const watch = watchClaims(queue, concurrency + prefetch);
    const claimSizes: number[] = [];
    const pool = n.node.pool;
    const ask = pool.ask;
    pool.ask = ((o: string, q: string, op: string, args: { limit?: number }) => {
      if (q === queue && op === 'claim') claimSizes.push(args.limit!);
      return (ask as (...a: unknown[]) => Promise<unknown>).call(pool, o, q, op, args);
    }) as typeof pool.ask;
    const runs = new Map<string, number>();
    const errors: unknown[] = [];
    const sent = { complete: 0, completes: 0, items: 0 };
    const got = { job: 0, jobs: 0 };
    const worker = new Worker(client, queue, async (job) => void runs.set(job.id, (runs.get(job.id) ?? 0) + 1), {
      concurrency,
      prefetch,
      pollWaitMs: 1000,
      transport: 'grpc',
      grpc: { address: `127.0.0.1:${n.node.grpcPort}` },
      autostart: false,
    });
    worker.on('error', (err) => errors.push(err));
    worker.on('leaseLost', (job) => errors.push(new Error(`lost ${job.id}`)));
    // The transport's stream, watched from the inside: what the worker writes and what it is sent.
    const proto = GrpcTransport.prototype as unknown as { open(): void };
    const open = proto.open;
    proto.open = function (this: { stream: any }) {
      open.call(this);
      const stream = this.stream;
      const write = stream.write.bind(stream);
      stream.write = (msg: Record<string, any>) => {
        if (msg.complete) sent.complete++;
        if (msg.completes) {
          sent.completes++;
          sent.items += msg.completes.items.length;
        }
        return write(msg);
      };
      stream.on('data', (msg: Record<string, any>) => {
        if (msg.job) got.job++;
        if (msg.jobs) got.jobs++;
      });
    };
    try {
      await worker.start();
      await until(async () => (await client.jobs.stats({ queue_name: queue })).counts.completed === total, 60_000, `${total} completions`);
    } finally {
      proto.open = open;
      pool.ask = ask;
      watch.stop();
      await worker.close();
    }
    assert.deepEqual(errors, []);
    assert.equal(runs.size, total);
    assert.ok([...runs.values()].every((r) => r === 1), 'each job ran once');
    assert.equal(got.job, 0, 'no job came alone');
    assert.ok(got.jobs > 0 && got.jobs < total / 10, `${got.jobs} JobBatch messages for ${total} jobs`);
    assert.equal(sent.items + sent.complete, total, 'every complete went on the stream');
    assert.ok(sent.completes > 0 && sent.completes < total / 10, `${sent.completes} CompleteBatch messages, ${sent.complete} single completes`);
    assert.ok(Math.max(...claimSizes) > 100, `claims of up to ${Math.max(...claimSizes)} jobs`);
  });

  /**
   * A stand-in for another node's ProcessJobs (the worker registers with the real node over REST), which hands out
   * `total` made-up jobs: one that predates batches ignores jobBatches, refuses a batchSize over 100 as such a node
   * did, and answers a CompleteBatch as a message without a kind; `jobBatches` makes it send JobBatch messages
   * (and still refuse CompleteBatch messages whole).
   */
  async function standIn(total: number, jobBatches: boolean) {
    const asked: number[] = [];
    const seen = { complete: 0, completes: 0 };
    let next = 0;
    const server = new Server();
    server.addService(loadQueueV1().QueueService.service, {
      ProcessJobs: (call: ServerDuplexStream<any, any>) => {
        call.on('data', (m: any) => {
          if (m.claim) {
            asked.push(m.claim.batchSize);
            if (m.claim.batchSize > 100) {
              call.write({ ack: { ref: m.ref, code: status.INVALID_ARGUMENT, message: 'VALIDATION_ERROR: Invalid request {"details":[{"field":"batchSize","message":"must be from 1 to 100"}]}' } });
              return;
            }
            const jobs = [];
            for (let k = 0; k < m.claim.batchSize && next < total; k++, next++) {
              const id = `00000000-0000-4000-8000-${String(next).padStart(12, '0')}`;
              jobs.push({ id, queueName: 'legacy', status: 'processing', payload: toStruct({ k }), leaseId: id, timeoutSeconds: 300, createdAt: new Date().toISOString() });
            }
            if (jobBatches && m.claim.jobBatches) call.write({ jobs: { jobs } });
            else for (const job of jobs) call.write({ job });
          } else if (m.complete) {
            seen.complete++;
            call.write({ ack: { ref: m.ref, jobId: m.complete.jobId, code: 0, complete: { jobId: m.complete.jobId, status: 'completed' } } });
          } else {
            if (m.completes) seen.completes++;
            call.write({ ack: { ref: m.ref, code: status.INVALID_ARGUMENT, message: 'VALIDATION_ERROR: kind is required' } });
          }
        });
        call.on('end', () => call.end());
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    const errors: unknown[] = [];
    let done = 0;
    const worker = new Worker(client, 'legacy', async () => {}, { concurrency: 50, prefetch: 450, pollWaitMs: 1000, transport: 'grpc', grpc: { address: `127.0.0.1:${port}` } });
    worker.on('completed', () => done++);
    worker.on('error', (err) => errors.push(err));
    try {
      await until(() => done === total, 30_000, `${total} completions`);
    } finally {
      await worker.close();
      server.forceShutdown();
    }
    return { asked, seen, errors };
  }

  test('a server from before batches: Job messages, single completes, claims cut to 100 after its refusal', async () => {
    const total = 400;
    const { asked, seen, errors } = await standIn(total, false);
    assert.deepEqual(errors, [], 'the refused size is not an error');
    assert.equal(asked[0], 500, 'the first claim asks for the whole prefetch');
    assert.ok(asked.length > 1 && asked.slice(1).every((s) => s <= 100), `claims after the refusal: ${asked.slice(1).join(', ')}`);
    assert.equal(seen.completes, 0, 'no CompleteBatch to a server that never sent a JobBatch');
    assert.equal(seen.complete, total);
  });

  test('a CompleteBatch refused whole: its items go again one by one, and so do the completes after it', async () => {
    const total = 300;
    const { seen, errors } = await standIn(total, true);
    assert.deepEqual(errors, []);
    assert.equal(seen.completes, 1, 'one CompleteBatch, then no more on that stream');
    assert.equal(seen.complete, total, 'every complete answered alone');
  });

  test('a stream broken while a claim rides ahead of unacknowledged completes: reopened, no claim beyond the free slots, each job once', async () => {
    const queue = 'g-broken';
    const concurrency = 4;
    const relay = new GrpcRelay(n.node.grpcPort);
    await relay.open();
    const grpcStreams = () => openGrpcStreams(n);

    // The queue's actor as the worker's claims reach it. A claim may ask for the slots of completes not answered
    // yet (the service asks it after them), so a job counts as held from the claim that handed it out until its
    // complete is asked; a claim asked must fit with the jobs held and the claims still waiting (asked, not
    // answered). A broken stream's claim still waits at the actor, but its jobs are put back (docs/grpc.md):
    // it is counted with the old stream, not the new one.
    const pool = n.node.pool;
    const ask = pool.ask;
    let held = 0;
    let completesDone = 0;
    let claimsAfterBreak = 0;
    const waiting = new Set<{ limit: number }>();
    const beyond: string[] = [];
    const reserved = () => [...waiting].reduce((sum, c) => sum + c.limit, 0);
    let broken = false;
    pool.ask = ((o: string, q: string, op: string, args: { limit?: number; items?: unknown[] }) => {
      const reply = (ask as (...a: unknown[]) => Promise<any>).call(pool, o, q, op, args);
      if (q !== queue) return reply;
      if (op === 'claim') {
        const c = { limit: args.limit! };
        if (broken) claimsAfterBreak++;
        if (held + reserved() + c.limit > concurrency) beyond.push(`a claim of ${c.limit} with ${held} held and ${reserved()} asked`);
        waiting.add(c);
        void reply.then(
          (r: { jobs: unknown[] }) => waiting.delete(c) && (held += r.jobs.length),
          () => waiting.delete(c),
        );
      }
      if (op === 'completeMany') {
        held -= args.items!.length;
        void reply.then(
          (r: Array<{ ok: boolean }>) => {
            completesDone += r.filter((x) => x.ok).length;
            held += r.filter((x) => !x.ok).length;
          },
          () => (held += args.items!.length),
        );
      }
      if (op === 'complete') void reply.then(() => held--, () => {});
      return reply;
    }) as typeof pool.ask;

    const first = await enqueue(client, queue, Array.from({ length: concurrency }, () => ({})));
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const runs = new Map<string, number>();
    let running = 0;
    const max = { before: 0, after: 0 };
    const completed: string[] = [];
    const lost: string[] = [];
    const errors: Array<[unknown, string]> = [];
    const worker = new Worker(
      client,
      queue,
      async (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        running++;
        const phase = broken ? 'after' : 'before';
        max[phase] = Math.max(max[phase], running);
        await (first.includes(job.id) ? gate : sleep(1));
        running--;
      },
      { concurrency, pollWaitMs: 1000, transport: 'grpc', grpc: { address: `127.0.0.1:${relay.port}` } },
    );
    worker.on('completed', (job) => completed.push(job.id));
    worker.on('leaseLost', (job) => lost.push(job.id));
    worker.on('error', (err, context) => errors.push([err, context]));
    const reported = () => completed.length + lost.length + errors.filter(([, context]) => context.startsWith('report of')).length;
    const later = Array.from({ length: 40 }, () => ({}));
    try {
      await until(() => running === concurrency, 10_000, 'the first jobs running');
      // From here the worker hears nothing: its completes go out and are done, their acks never arrive.
      relay.mute();
      open();
      await until(() => completesDone === concurrency && reserved() === concurrency, 10_000, 'the completes done and the claim for their slots asked');
      // The claim is out for the slots of completes the worker has no ack for: the break comes now.
      broken = true;
      waiting.clear();
      relay.reset();
      await until(() => reported() === concurrency, 10_000, 'the first reports settled');
      // The new stream claims, and the node has let the old one go (its claim's jobs would be put back).
      await until(async () => claimsAfterBreak > 0 && (await grpcStreams()) === 1, 10_000, 'the stream reopened, the old one gone');
      await enqueue(client, queue, later);
      await until(() => reported() === concurrency + later.length, 30_000, 'every job reported');
    } finally {
      pool.ask = ask;
      // Failed before the break: on the muted connection close()'s unary calls would wait out their deadline (30 s).
      if (!broken) relay.reset();
      await worker.close();
      await relay.close();
    }
    assert.deepEqual(beyond, [], 'claims within the free slots');
    assert.deepEqual(lost, [], 'the completes re-sent as unary calls found their own success, not a lost lease');
    assert.ok(errors.length > 0 && errors.every(([, context]) => context === 'gRPC stream'), `errors: ${errors.map(([e, c]) => `${c}: ${e}`).join('; ')}`);
    assert.equal(max.before, concurrency);
    assert.ok(max.after <= concurrency, `${max.after} handlers at once after the break`);
    assert.equal(runs.size, concurrency + later.length);
    assert.ok([...runs.values()].every((r) => r === 1), 'each job ran once');
    assert.equal(new Set(completed).size, concurrency + later.length);
    const stats = await client.jobs.stats({ queue_name: queue });
    assert.deepEqual([stats.counts.completed, stats.counts.processing, stats.counts.pending], [concurrency + later.length, 0, 0]);
  });

  // A connection that is up but silent (a middlebox dropping what the node sends): the relay is muted. The unary
  // calls' deadline is the client's timeoutMs, short here.
  test('a silent connection: a unary call ends at its deadline with ConnectionError TIMEOUT, after the retries REST would make', async () => {
    const queue = 'g-silent-unary';
    const relay = new GrpcRelay(n.node.grpcPort);
    await relay.open();
    const retries: RetryEvent[] = [];
    const quick = new SluiceClient({
      url: n.node.url,
      apiKey: n.node.bootstrapKey!,
      timeoutMs: 300,
      retry: { retries: 1, baseDelayMs: 20 },
      onRetry: (e) => retries.push(e),
    });
    await enqueue(client, queue, [{}]);
    const [job] = await client.jobs.claim({ queue_name: queue, worker_id: 'g-silent', limit: 1 });
    assert.ok(job);
    const transport = await unaryTransport(quick, queue, 'g-silent', relay.port);
    // The completes the queue's actor is asked: the call and its one retry (retry.retries 1), as over REST.
    const pool = n.node.pool;
    const ask = pool.ask;
    let completes = 0;
    pool.ask = ((o: string, q: string, op: string, args: unknown) => {
      if (q === queue && op === 'complete') completes++;
      return (ask as (...a: unknown[]) => Promise<unknown>).call(pool, o, q, op, args);
    }) as typeof pool.ask;
    let outcome: unknown = 'pending';
    try {
      // The connection is up (a renewal is answered), then falls silent.
      await transport.renew(job as Job<never>, undefined);
      relay.mute();
      transport.complete(job as Job<never>, { ok: true }).then(
        () => (outcome = 'completed'),
        (err: unknown) => (outcome = err),
      );
      await until(() => outcome !== 'pending', 15_000, 'the unary complete to end');
      // Both went out before their deadlines; the node may be slower to see them than that on a busy machine.
      await until(() => completes >= 2, 10_000, 'the retry asked at the node');
    } finally {
      pool.ask = ask;
      relay.reset();
      await transport.close();
      await relay.close();
    }
    assert.ok(outcome instanceof ConnectionError, `ended with ${String(outcome)}`);
    assert.equal(outcome.code, 'TIMEOUT');
    assert.ok(outcome.retryable, 'retryable, as a REST request past its timeout');
    assert.equal(completes, 2, 'the complete and its retry reached the node');
    // The client's onRetry hook hears of the retry as it does of a REST one.
    assert.deepEqual(
      retries.map((e) => [e.method, e.path, e.attempt, e.error.code, e.delayMs >= 0]),
      [['POST', '/queue.v1.QueueService/Complete', 1, 'TIMEOUT', true]],
    );
  });

  // The fail reaches the node and is done; its answer is lost (the relay muted, then every connection reset): the
  // retry is answered LEASE_EXPIRED, and the job read back shows our fail landed.
  test('a unary fail whose answer was lost is retried, and its LEASE_EXPIRED read back as the fail that landed', async () => {
    const queue = 'g-fail-echo';
    const relay = new GrpcRelay(n.node.grpcPort);
    await relay.open();
    const c = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey!, retry: { baseDelayMs: 20 } });
    const [id] = await enqueue(client, queue, [{}]);
    const [job] = await client.jobs.claim({ queue_name: queue, worker_id: 'g-fail-echo', limit: 1 });
    assert.ok(job);
    const transport = await unaryTransport(c, queue, 'g-fail-echo', relay.port);
    const pool = n.node.pool;
    const ask = pool.ask;
    let fails = 0;
    let landed = false;
    pool.ask = ((o: string, q: string, op: string, args: unknown) => {
      const reply = (ask as (...a: unknown[]) => Promise<unknown>).call(pool, o, q, op, args);
      if (q === queue && op === 'fail') {
        fails++;
        void reply.then(() => (landed = true), () => {});
      }
      return reply;
    }) as typeof pool.ask;
    let outcome: unknown = 'pending';
    try {
      await transport.renew(job as Job<never>, undefined);
      relay.mute();
      transport.fail(job as Job<never>, 'it broke', true).then(
        (status) => (outcome = status),
        (err: unknown) => (outcome = err),
      );
      await until(() => landed, 10_000, 'the fail done at the node');
      relay.reset();
      await until(() => outcome !== 'pending', 15_000, 'the fail to settle');
    } finally {
      pool.ask = ask;
      relay.reset();
      await transport.close();
      await relay.close();
    }
    assert.equal(outcome, 'scheduled', `ended with ${String(outcome)}`);
    assert.equal(fails, 2, 'the fail and its retry reached the node');
    const after = await client.jobs.get(id!);
    assert.deepEqual([after.status, after.errors.map((e) => e.error)], ['scheduled', ['it broke']]);
  });

  test('a silent connection: close() with jobs in hand returns, their give-backs ending at the deadline', async () => {
    const queue = 'g-silent-close';
    const relay = new GrpcRelay(n.node.grpcPort);
    await relay.open();
    const quick = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey!, timeoutMs: 300 });
    const ids = await enqueue(client, queue, [{}, {}]);
    let running = 0;
    const errors: Array<[unknown, string]> = [];
    const worker = new Worker(
      quick,
      queue,
      async (_job, ctx) => {
        running++;
        // Holds its job until close() runs out of grace.
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      },
      { concurrency: 2, pollWaitMs: 1000, shutdownGraceMs: 100, transport: 'grpc', grpc: { address: `127.0.0.1:${relay.port}` } },
    );
    worker.on('error', (err, context) => errors.push([err, context]));
    let closed = false;
    try {
      await until(() => running === 2, 10_000, 'both jobs running');
      relay.mute();
      void worker.close().then(() => (closed = true));
      await until(() => closed, 15_000, 'close() to return');
    } finally {
      // Failed: let the calls held by the muted connection end, so that close() does.
      relay.reset();
      await worker.close();
      await relay.close();
    }
    const giveBacks = errors.filter(([, context]) => context.startsWith('give back job'));
    assert.deepEqual(errors.filter((e) => !giveBacks.includes(e)).map(([e, c]) => `${c}: ${e}`), []);
    assert.equal(giveBacks.length, 2);
    for (const [err] of giveBacks) assert.ok(err instanceof ConnectionError && err.code === 'TIMEOUT', `give-back: ${String(err)}`);
    // The give-backs reached the node (only their answers were lost): the jobs are not held any more.
    await until(async () => (await client.jobs.status(ids)).every((j) => j.status !== 'processing'), 10_000, 'the jobs given back');
  });

  // A unary call made while the channel waits out grpc-js's reconnect backoff (the node was unreachable, a connection
  // attempt failed) waits for the channel within its deadline instead of failing at once "No connection
  // established". One attempt (retries 0): no retry carries it past the backoff.
  test('a unary call made during the reconnect backoff waits for the channel within its deadline', async () => {
    const queue = 'g-backoff-unary';
    const relay = new GrpcRelay(n.node.grpcPort);
    await relay.open();
    const once = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey!, timeoutMs: 15_000, retry: { retries: 0 } });
    await enqueue(client, queue, [{}]);
    const [job] = await client.jobs.claim({ queue_name: queue, worker_id: 'g-backoff', limit: 1 });
    assert.ok(job);
    const transport = await unaryTransport(once, queue, 'g-backoff', relay.port);
    let outcome: unknown = 'pending';
    try {
      // The channel is connected (a renewal is answered), then the node becomes unreachable.
      await transport.renew(job as Job<never>, undefined);
      relay.refuse();
      // Renewals (whatever their outcome) until the channel has seen the drop and a connection attempt refused: a
      // call made before it saw the drop would go on the dropped connection, which no waiting can save.
      let poke: Promise<unknown> | null = null;
      await until(
        () => {
          poke ??= transport.renew(job as Job<never>, undefined).then(
            () => (poke = null),
            () => (poke = null),
          );
          return relay.refused >= 1;
        },
        15_000,
        'a connection attempt refused',
      );
      transport.complete(job as Job<never>, { ok: true }).then(
        () => (outcome = 'completed'),
        (err: unknown) => (outcome = err),
      );
      // A second refused attempt comes only after grpc-js's backoff: the channel has been in it with the call made.
      await until(() => relay.refused >= 2 || outcome !== 'pending', 15_000, 'a reconnect after the backoff');
      relay.accept();
      await until(() => outcome !== 'pending', 20_000, 'the unary complete to end');
    } finally {
      relay.accept();
      await transport.close();
      await relay.close();
    }
    assert.equal(outcome, 'completed', `ended with ${String(outcome)}`);
    const [line] = await client.jobs.status([job.id]);
    assert.equal(line?.status, 'completed');
  });

  // The stream itself falling silent: nothing ends it but the channel's keepalive (short here), whose unanswered
  // ping drops the connection, so the stream fails UNAVAILABLE and the broken-stream path runs.
  test('a silent stream is declared broken by keepalive: its unacknowledged complete settles once, the worker reconnects', async () => {
    const queue = 'g-keepalive';
    const concurrency = 2;
    const relay = new GrpcRelay(n.node.grpcPort);
    await relay.open();
    // Unary calls (the re-sent complete) end at a short deadline while the network is out, and are retried with the
    // default budget: each waits for the channel to connect (grpc-js's reconnect backoff) within its deadline.
    const quick = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey!, timeoutMs: 1000 });
    const pool = n.node.pool;
    const ask = pool.ask;
    let completesAsked = 0;
    pool.ask = ((o: string, q: string, op: string, args: { items?: unknown[] }) => {
      if (q === queue && op === 'completeMany') completesAsked += args.items!.length;
      return (ask as (...a: unknown[]) => Promise<unknown>).call(pool, o, q, op, args);
    }) as typeof pool.ask;
    const [first] = await enqueue(client, queue, [{}]);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const runs = new Map<string, number>();
    let running = 0;
    let max = 0;
    const completed: string[] = [];
    const lost: string[] = [];
    const errors: Array<[unknown, string]> = [];
    const worker = new Worker(
      quick,
      queue,
      async (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        running++;
        max = Math.max(max, running);
        if (job.id === first) await gate;
        running--;
      },
      { concurrency, pollWaitMs: 1000, transport: 'grpc', grpc: { address: `127.0.0.1:${relay.port}`, keepaliveMs: 200, keepaliveTimeoutMs: 200 } },
    );
    worker.on('completed', (job) => completed.push(job.id));
    worker.on('leaseLost', (job) => lost.push(job.id));
    worker.on('error', (err, context) => errors.push([err, context]));
    const later = Array.from({ length: 6 }, () => ({}));
    let broke = false;
    try {
      await until(() => running === 1, 10_000, 'the first job running');
      // From here the worker hears nothing: its complete goes out and is done, its ack never arrives.
      relay.mute();
      open();
      await until(() => completesAsked === 1, 10_000, 'the complete asked at the node');
      assert.deepEqual(completed, [], 'no ack came back');
      await until(() => errors.some(([, context]) => context === 'gRPC stream'), 10_000, 'the silent stream declared broken');
      broke = true;
      // The network is back (connections tried while it was out are cut, as a black hole would have left them).
      relay.reset();
      await until(() => completed.length + lost.length === 1 || errors.some(([, context]) => context.startsWith('report of')), 15_000, 'the first job reported');
      await enqueue(client, queue, later);
      await until(() => completed.length === 1 + later.length, 15_000, 'the later jobs completed over the reopened stream');
    } finally {
      pool.ask = ask;
      relay.reset();
      await worker.close();
      await relay.close();
    }
    assert.ok(broke);
    const streamErrors = errors.filter(([, context]) => context === 'gRPC stream');
    assert.deepEqual(errors.filter((e) => !streamErrors.includes(e)).map(([e, c]) => `${c}: ${e}`), []);
    const [firstBreak] = streamErrors[0]!;
    assert.ok(firstBreak instanceof ConnectionError, `the break: ${String(firstBreak)}`);
    assert.deepEqual(lost, [], 'the complete re-sent as a unary call found its own success, not a lost lease');
    assert.deepEqual(completed.filter((id) => id === first), [first], 'the first job completed once');
    assert.equal(new Set(completed).size, 1 + later.length);
    assert.ok([...runs.values()].every((r) => r === 1), 'each job ran once');
    assert.ok(max <= concurrency, `${max} handlers at once`);
    const stats = await client.jobs.stats({ queue_name: queue });
    assert.deepEqual([stats.counts.completed, stats.counts.processing, stats.counts.pending], [1 + later.length, 0, 0]);
  });

  // The service must take the pings (a server that polices them answers GOAWAY ENHANCE_YOUR_CALM "too_many_pings",
  // which would break the stream): a busy run with the default keepalive, and one pinging every 50 ms.
  for (const keepaliveMs of [undefined, 50]) {
    test(`keepalive ${keepaliveMs ?? 'by default'}: 300 jobs over gRPC with no stream error, each once`, async () => {
      const queue = `g-pings-${keepaliveMs ?? 'default'}`;
      const total = 300;
      const concurrency = 4;
      await enqueue(client, queue, Array.from({ length: total }, () => ({})));
      const runs = new Map<string, number>();
      let running = 0;
      let max = 0;
      let done = 0;
      const errors: Array<[unknown, string]> = [];
      const worker = new Worker(
        client,
        queue,
        async (job) => {
          runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
          running++;
          max = Math.max(max, running);
          await sleep(2);
          running--;
        },
        { concurrency, pollWaitMs: 1000, transport: 'grpc', grpc: { address: `127.0.0.1:${n.node.grpcPort}`, keepaliveMs } },
      );
      worker.on('completed', () => done++);
      worker.on('error', (err, context) => errors.push([err, context]));
      worker.on('leaseLost', (job) => errors.push([new Error(`lost ${job.id}`), 'leaseLost']));
      try {
        await until(() => done === total, 60_000, `${total} completions`);
      } finally {
        await worker.close();
      }
      assert.deepEqual(errors.map(([e, c]) => `${c}: ${e}`), []);
      assert.ok(max <= concurrency, `${max} handlers at once`);
      assert.equal(runs.size, total);
      assert.ok([...runs.values()].every((r) => r === 1), 'each job ran once');
      assert.equal((await client.jobs.stats({ queue_name: queue })).counts.completed, total);
    });
  }
});

describe('gRPC server: keepalive towards a client gone silent', { skip: CLIENT_SUITE_SKIP }, () => {
  let n: TestNode;
  let client: SluiceClient;
  before(async () => {
    n = await startTestNode({ env: { GRPC_KEEPALIVE_MS: '200', GRPC_KEEPALIVE_TIMEOUT_MS: '200' } });
    client = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey! });
  });
  after(() => n.stop());

  // The worker pings nothing (keepaliveMs 0) and the relay drops what the node sends, the node's pings included:
  // only the node's keepalive can tell that the client is gone.
  test('the node drops a silent connection: its stream ends, a job enqueued after is not handed to it, the worker gets it once back', async () => {
    const queue = 'g-server-keepalive';
    const relay = new GrpcRelay(n.node.grpcPort);
    await relay.open();
    const pool = n.node.pool;
    const ask = pool.ask;
    let claimsWaiting = 0;
    pool.ask = ((o: string, q: string, op: string, args: unknown) => {
      const reply = (ask as (...a: unknown[]) => Promise<unknown>).call(pool, o, q, op, args);
      if (q === queue && op === 'claim') {
        claimsWaiting++;
        void reply.finally(() => claimsWaiting--).catch(() => {});
      }
      return reply;
    }) as typeof pool.ask;
    const runs = new Map<string, number>();
    const completed: string[] = [];
    const worker = new Worker(
      client,
      queue,
      (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      },
      { concurrency: 1, pollWaitMs: 1000, transport: 'grpc', grpc: { address: `127.0.0.1:${relay.port}`, keepaliveMs: 0 } },
    );
    const errors: Array<[unknown, string]> = [];
    worker.on('completed', (job) => completed.push(job.id));
    worker.on('error', (err, context) => errors.push([err, context]));
    let id = '';
    try {
      await until(async () => claimsWaiting > 0 && (await openGrpcStreams(n)) === 1, 10_000, "the worker's claim waiting at the node");
      relay.mute();
      await until(async () => (await openGrpcStreams(n)) === 0, 10_000, 'the node to let the silent stream go');
      // A claim of the ended stream still polling takes the job and puts it back at once (docs/grpc.md).
      id = (await enqueue(client, queue, [{}]))[0]!;
      await until(async () => claimsWaiting === 0 && (await client.jobs.get(id)).status === 'pending', 10_000, 'the job left pending');
      assert.equal((await client.jobs.get(id)).retry_count, 0);
      relay.reset();
      await until(() => completed.length === 1, 15_000, 'the job completed by the worker, reconnected');
    } finally {
      pool.ask = ask;
      relay.reset();
      await worker.close();
      await relay.close();
    }
    assert.deepEqual(completed, [id]);
    assert.deepEqual([...runs.entries()], [[id, 1]]);
    // The stream the node ended, and the reopenings tried while the network was out.
    assert.ok(errors.every(([, context]) => context === 'gRPC stream'), `errors: ${errors.map(([e, c]) => `${c}: ${e}`).join('; ')}`);
  });
});

describe('worker: prefetch', { skip: CLIENT_SUITE_SKIP }, () => {
  let n: TestNode;
  let client: SluiceClient;
  before(async () => {
    n = await startTestNode();
    client = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey! });
  });
  after(() => n.stop());

  for (const transport of ['http', 'grpc'] as const) {
    test(`prefetch holds jobs beyond the concurrency, never runs more handlers than the concurrency (${transport})`, async () => {
      const queue = `b-prefetch-${transport}`;
      await enqueue(client, queue, Array.from({ length: 60 }, () => ({})));
      let running = 0;
      let max = 0;
      let done = 0;
      let heldMax = 0;
      const worker = new Worker(
        client,
        queue,
        async () => {
          running++;
          max = Math.max(max, running);
          await sleep(30);
          running--;
        },
        { concurrency: 4, prefetch: 4, pollWaitMs: 1000, transport, grpc: { address: `127.0.0.1:${n.node.grpcPort}` } },
      );
      worker.on('completed', () => done++);
      const watch = setInterval(() => {
        void client.jobs.stats({ queue_name: queue }).then((s) => (heldMax = Math.max(heldMax, s.counts.processing)));
      }, 15);
      try {
        await until(() => done === 60, 30_000, '60 completions');
      } finally {
        clearInterval(watch);
      }
      await worker.close();
      assert.equal(max, 4, 'handlers at once');
      assert.ok(heldMax <= 8, `${heldMax} jobs held at once`);
      assert.ok(heldMax > 4, `prefetch held ${heldMax} at most`);
    });
  }

  for (const transport of ['http', 'grpc'] as const) {
    test(`a prefetched job starts when the handler before it returns, before that job's report is answered (${transport})`, async () => {
      const queue = `b-prefetch-order-${transport}`;
      const ids = await enqueue(client, queue, [{}, {}]);
      const order: string[] = [];
      let running = 0;
      let max = 0;
      const worker = new Worker(
        client,
        queue,
        async (job) => {
          running++;
          max = Math.max(max, running);
          order.push(`start ${job.id}`);
          await sleep(20);
          running--;
        },
        { concurrency: 1, prefetch: 1, pollWaitMs: 1000, transport, grpc: { address: `127.0.0.1:${n.node.grpcPort}` } },
      );
      worker.on('completed', (job) => order.push(`completed ${job.id}`));
      try {
        await until(() => order.length === 4, 10_000, 'both jobs completed');
      } finally {
        await worker.close();
      }
      // Both came in one claim (limit 2), so which ran first is the claim's order.
      const [first, second] = order[0] === `start ${ids[0]}` ? ids : [ids[1]!, ids[0]!];
      assert.deepEqual(order.slice(0, 2), [`start ${first}`, `start ${second}`], `the second handler did not wait for the first report: ${order.join(', ')}`);
      assert.equal(max, 1, 'handlers at once');
    });
  }

  test('close() runs the prefetched jobs it holds before it deregisters', async () => {
    const ids = await enqueue(client, 'b-prefetch-close', Array.from({ length: 8 }, () => ({})));
    const started: string[] = [];
    const worker = new Worker(client, 'b-prefetch-close', async (job) => {
      started.push(job.id);
      await sleep(300);
    }, { concurrency: 2, prefetch: 6, pollWaitMs: 1000 });
    // Held by the worker, not merely claimed in the store: close() abandons a claim it has no answer to yet, and the
    // service puts that claim's jobs back (the store said "none pending" that early once, and none had run).
    await until(async () => worker.free() === 0, 10_000, 'all 8 held');
    await worker.close();
    assert.equal(started.length, 8);
    for (const id of ids) assert.equal((await client.jobs.get(id)).status, 'completed');
  });
});
