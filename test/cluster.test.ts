// Several nodes on one PostgreSQL database, in this process: the shards are shared out, any node takes any
// request and forwards it to the shard's owner, and two nodes racing for one queue hand each job out once;
// a long poll and the gRPC streams stay on the node the client is connected to and are fed by the owner, which
// answers them at once when that node stops.
// The crash, deposed-owner, rolling-restart and delivery-adoption runs are in cluster-failover.test.ts
// (separate processes).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { credentials, Metadata, type Client, type ClientDuplexStream, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { loadConfig } from '../src/config.js';
import { loadQueueV1 } from '../src/io/grpc/proto.js';
import { actorKey, shardOf } from '../src/runtime/shard.js';
import { startNode, type SluiceNode } from '../src/node.js';
import { planLimit } from '../src/actors/org/plans.js';
import { Api, CLUSTER_ENV, freshStore, sleep, startTestNode, STORE, type StoreLocation, type TestNode } from './helpers.js';
import { insertKey } from './http-assert.js';

const skip = STORE !== 'pg' ? 'many nodes need PostgreSQL' : false;

/** Shards owned per node, read from the store. */
async function owners(n: TestNode): Promise<Map<string, number>> {
  const rows = await n.node.store.query<{ owner: string; n: number }>(
    `SELECT owner::text AS owner, count(*)::int AS n FROM shards WHERE shard >= 0 AND lease_until > now() GROUP BY owner`,
  );
  return new Map(rows.map((r) => [r.owner, r.n]));
}

/** An SSE reader: the envelopes received so far. */
async function openSse(url: string, key: string): Promise<{ received: Array<{ id: string; event: string; data: Record<string, unknown> }>; close(): void }> {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` }, signal: ac.signal });
  assert.equal(res.status, 200);
  const received: Array<{ id: string; event: string; data: Record<string, unknown> }> = [];
  void (async () => {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body!) {
        buf += decoder.decode(chunk, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const data = buf.slice(0, i).split('\n').find((l) => l.startsWith('data: '));
          buf = buf.slice(i + 2);
          if (data) received.push(JSON.parse(data.slice(6)));
        }
      }
    } catch {
      // closed
    }
  })();
  return { received, close: () => ac.abort() };
}

async function until(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`${what} did not happen within ${ms} ms`);
    await sleep(50);
  }
}

describe('two nodes on one database', { skip }, () => {
  let store: StoreLocation;
  let a: TestNode;
  let b: SluiceNode;
  let onA: Api;
  let onB: Api;

  before(async () => {
    store = await freshStore();
    a = await startTestNode({ store, env: { ...CLUSTER_ENV, STREAMS_PER_ORG: '3' } });
    b = await startNode({ config: loadConfig(a.env) });
    onA = a.api;
    onB = new Api(b.url, a.api.key);
    // B takes a fair share: A hands over what is over its share, B takes it on its next rounds.
    await until('the shards are shared out', async () => {
      const m = await owners(a);
      return m.size === 2 && [...m.values()].every((n) => n === 128);
    });
  });
  after(async () => {
    await b?.stop();
    await a?.stop();
    await store?.dispose();
  });

  test('any node takes any request: jobs enqueued through one are claimed and completed through the other', async () => {
    const queues = Array.from({ length: 20 }, (_, i) => `spread-${i}`);
    const ids = new Set<string>();
    for (let i = 0; i < 200; i++) ids.add((await onA.enqueue({ queue_name: queues[i % queues.length], payload: { i } })).id);
    let done = 0;
    for (const q of queues) {
      const claimed = await onB.claim(q, { limit: 100 });
      assert.equal(claimed.length, 10, q);
      for (const j of claimed) {
        assert.ok(ids.has(j.id));
        const r = await onA.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: 'w1', lease_id: j.lease_id, result: { ok: true } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        done++;
      }
    }
    assert.equal(done, 200);
    const stats = await onB.get('/api/v1/jobs/stats');
    assert.equal(stats.body.counts.completed, 200);
  });

  test('a quota holds across nodes: 40 queue creations racing through both, exactly the plan limit succeed', async () => {
    const { key } = await insertKey(a, { plan: 'starter' });
    const limit = planLimit('starter', 'queues')!;
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? onA : onB).as(key).post('/api/v1/queues', { name: `quota-${i}` })),
    );
    assert.equal(results.filter((r) => r.status === 201).length, limit);
    assert.deepEqual([...new Set(results.filter((r) => r.status !== 201).map((r) => r.body.code))], ['QUOTA_EXCEEDED']);
    for (const api of [onA, onB]) assert.equal((await api.as(key).get('/api/v1/organizations/usage')).body.usage.queues.current, limit);
  });

  test('an SSE subscriber on one node hears every event caused on the other, once', async () => {
    const events = await openSse(`${b.url}/api/v1/events`, onA.key);
    try {
      await sleep(300); // B announces its subscriber to A (at once; a round at most)
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push((await onA.enqueue({ queue_name: `heard-${i % 7}`, payload: { i } })).id);
      await until('20 job.created heard on B', async () => events.received.filter((e) => e.event === 'job.created').length >= 20);
      await sleep(300);
      const created = events.received.filter((e) => e.event === 'job.created').map((e) => e.data.job_id as string);
      assert.deepEqual(created.sort(), [...ids].sort(), 'each event once');
      assert.equal(new Set(events.received.map((e) => e.id)).size, events.received.length);
    } finally {
      events.close();
    }
  });

  test('the stream cap of an organization counts the streams of every node', async () => {
    const open = [await openSse(`${a.node.url}/api/v1/events`, onA.key), await openSse(`${a.node.url}/api/v1/events`, onA.key), await openSse(`${b.url}/api/v1/events`, onA.key)];
    try {
      await until('B refuses a fourth stream', async () => (await fetch(`${b.url}/api/v1/events`, { headers: { authorization: `Bearer ${onA.key}` } }).then(async (r) => {
        if (r.status === 200) await r.body?.cancel();
        return r.status;
      })) === 429);
      const r = await fetch(`${a.node.url}/api/v1/events`, { headers: { authorization: `Bearer ${onA.key}` } });
      assert.equal(r.status, 429);
      assert.equal(((await r.json()) as { code: string }).code, 'TOO_MANY_STREAMS');
    } finally {
      for (const s of open) s.close();
    }
  });

  test('a free organization\'s rate limit holds across two nodes: one burst for the organization, not one per node', async () => {
    const { key } = await insertKey(a, { plan: 'free', limited: true }); // 5/s, burst 10
    const burst = planLimit('free', 'burst')!;
    const results = await Promise.all(Array.from({ length: 4 * burst }, (_, i) => (i % 2 === 0 ? onA : onB).as(key).get('/api/v1/organizations/usage')));
    const ok = results.filter((r) => r.status === 200).length;
    // All 40 were sent within one second, so at most one burst passes (fewer if the second turned meanwhile).
    assert.ok(ok <= burst && ok >= burst - 1, `${ok} of ${results.length} passed`);
    assert.deepEqual([...new Set(results.filter((r) => r.status !== 200).map((r) => r.body.code))], ['RATE_LIMITED']);
  });

  test('two nodes racing for one queue, 16 claim loops each over 5,000 jobs: every job is claimed exactly once', { timeout: 120_000 }, async () => {
    const total = 5_000;
    for (let i = 0; i < total; i += 100) {
      const r = await (i % 200 === 0 ? onA : onB).post('/api/v1/jobs/bulk', { queue_name: 'race', jobs: Array.from({ length: 100 }, (_, k) => ({ payload: { n: i + k } })) });
      assert.equal(r.body.success_count, 100);
    }
    const seen = new Map<string, number>();
    const loop = async (api: Api, worker: string) => {
      for (;;) {
        const r = await api.post('/api/v1/jobs/claim', { queue_name: 'race', worker_id: worker, limit: 10 });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        if (r.body.jobs.length === 0) return;
        for (const j of r.body.jobs) seen.set(j.id, (seen.get(j.id) ?? 0) + 1);
      }
    };
    await Promise.all([
      ...Array.from({ length: 16 }, (_, i) => loop(onA, `a${i}`)),
      ...Array.from({ length: 16 }, (_, i) => loop(onB, `b${i}`)),
    ]);
    assert.equal(seen.size, total);
    assert.deepEqual([...seen.values()].filter((n) => n !== 1), []);
  });

  test('concurrency_per_key 2 holds across nodes: 16 claim loops through each node, never more than 2 of a key at once', { timeout: 120_000 }, async () => {
    const queue = 'perkey-cluster';
    assert.equal((await onA.post('/api/v1/queues', { name: queue, concurrency_per_key: 2 })).status, 201);
    for (const key of ['K1', 'K2', 'K3']) {
      const r = await onB.post('/api/v1/jobs/bulk', { queue_name: queue, jobs: Array.from({ length: 20 }, () => ({ payload: {}, concurrency_key: key })) });
      assert.equal(r.body.success_count, 20);
    }
    const held = new Map<string, number>();
    let worst = 0;
    let done = 0;
    const loop = async (api: Api, w: string) => {
      for (let idle = 0; idle < 8 && done < 60; ) {
        const jobs = await api.claim(queue, { worker_id: w, limit: 3 });
        if (jobs.length === 0) {
          idle++;
          await sleep(5);
          continue;
        }
        for (const j of jobs) held.set(j.concurrency_key, (held.get(j.concurrency_key) ?? 0) + 1);
        worst = Math.max(worst, ...held.values());
        await sleep(3);
        for (const j of jobs) {
          // Released before the complete is sent: the owner still counts it, so this count never overstates.
          held.set(j.concurrency_key, held.get(j.concurrency_key)! - 1);
          const c = await api.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: w, lease_id: j.lease_id });
          assert.equal(c.status, 200, JSON.stringify(c.body));
          done++;
        }
      }
    };
    await Promise.all(Array.from({ length: 32 }, (_, i) => loop(i % 2 === 0 ? onA : onB, `pk-${i}`)));
    assert.equal(done, 60);
    assert.ok(worst <= 2, `a key had ${worst} jobs processing at once`);
  });
});

describe('three nodes: the cluster-wide tasks run once; long polls and gRPC streams are fed by the owner', { skip }, () => {
  let store: StoreLocation;
  let a: TestNode;
  const others: SluiceNode[] = [];
  let apis: Api[] = [];
  let receiver: http.Server;
  const delivered: Array<{ event: string; jobId: string }> = [];
  let hookUrl = '';

  before(async () => {
    receiver = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw);
        delivered.push({ event: body.event, jobId: body.data?.job_id });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    store = await freshStore();
    a = await startTestNode({ store, env: CLUSTER_ENV });
    for (let i = 0; i < 2; i++) others.push(await startNode({ config: loadConfig(a.env) }));
    apis = [a.api, ...others.map((n) => new Api(n.url, a.api.key))];
    // Shared out for good (every shard held, none over its fair share of 86), so no shard moves under the tests.
    await until('three nodes share the shards', async () => {
      const m = await owners(a);
      return m.size === 3 && [...m.values()].reduce((x, y) => x + y, 0) === 256 && [...m.values()].every((n) => n <= 86);
    });
  });
  after(async () => {
    for (const n of others) await n.stop();
    await a?.stop();
    await store?.dispose();
    receiver?.closeAllConnections();
    await new Promise((r) => receiver?.close(r));
  });

  test('a schedule created through any node fires once per fire time', { timeout: 60_000 }, async () => {
    // Every 2 seconds, created through a node that need not be the leader.
    const s = await apis[2]!.post('/api/v1/schedules', { name: 'tick', cron_expression: '*/2 * * * * *', queue_name: 'ticks', payload_template: {} });
    assert.equal(s.status, 201, JSON.stringify(s.body));
    await sleep(7_000);
    await apis[0]!.post(`/api/v1/schedules/${s.body.id}/pause`);
    const runs = (await apis[1]!.get(`/api/v1/schedules/${s.body.id}/runs?limit=100`)).body as Array<{ scheduled_for: string; job_id: string }>;
    assert.ok(runs.length >= 2 && runs.length <= 5, `${runs.length} runs in 7 s`);
    assert.equal(new Set(runs.map((r) => r.scheduled_for)).size, runs.length, 'one run per fire time');
    const jobs = await a.node.store.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE queue_name = 'ticks'`);
    assert.equal(jobs[0]!.n, runs.length, 'one job per fire time');
  });

  /** A queue name (with `prefix`) whose shard `owner` holds. */
  async function queueOwnedBy(owner: SluiceNode, prefix: string): Promise<string> {
    const org = (await apis[0]!.get('/api/v1/auth/me')).body.organization_id as string;
    const rows = await a.node.store.query<{ shard: number }>(`SELECT shard FROM shards WHERE owner = $1 AND lease_until > now()`, [owner.nodeId]);
    const held = new Set(rows.map((r) => r.shard));
    const shards = loadConfig(a.env).shardCount;
    for (let i = 0; ; i++) if (held.has(shardOf(actorKey(org, `${prefix}-${i}`), shards))) return `${prefix}-${i}`;
  }

  test('a long poll parked through one node for a queue another node owns is answered when a job is enqueued through the third, or through the owner', { timeout: 60_000 }, async () => {
    const [nodeA, nodeB] = [a.node, others[0]!];
    for (const [via, name] of [[apis[2]!, 'the third node'], [apis[1]!, 'the owner']] as const) {
      const queue = await queueOwnedBy(nodeB, via === apis[1] ? 'parked-owner' : 'parked-third');
      const started = Date.now();
      const poll = apis[0]!.post('/api/v1/jobs/claim', { queue_name: queue, worker_id: 'lp', wait_ms: 20_000 });
      let answered = false;
      void poll.then(() => (answered = true));
      await sleep(300); // the poll reaches the owner and parks there (it would answer [] only after 20 s)
      assert.equal(answered, false, 'nothing to claim yet: the poll waits');
      const sent = Date.now();
      const job = await via.enqueue({ queue_name: queue, payload: { via: name } });
      const r = await poll;
      const latency = Date.now() - sent;
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.jobs.map((j: { id: string }) => j.id), [job.id], `enqueued through ${name}`);
      // Forwarded twice (A → B for the poll, C → B for the enqueue), answered at the enqueue's commit.
      assert.ok(latency < 1_000, `answered ${latency} ms after the enqueue through ${name} was sent (parked ${sent - started} ms)`);
      assert.notEqual(nodeA.nodeId, nodeB.nodeId);
    }
  });

  test('GET /api/v1/metrics through any node gives the job series of queues other nodes own, counted once by their owner', { timeout: 60_000 }, async () => {
    // One queue owned by each of two nodes; each job enqueued, claimed and completed through three different nodes.
    const queues = [await queueOwnedBy(others[0]!, 'metered-b'), await queueOwnedBy(a.node, 'metered-a')];
    for (const queue of queues) {
      for (let i = 0; i < 2; i++) {
        const job = await apis[i]!.enqueue({ queue_name: queue });
        const claimed = await apis[(i + 1) % 3]!.claim(queue);
        assert.deepEqual(claimed.map((j) => j.id), [job.id]);
        const done = await apis[(i + 2) % 3]!.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: claimed[0]!.lease_id });
        assert.equal(done.status, 200, JSON.stringify(done.body));
      }
    }
    const series = (text: string, queue: string) =>
      ['job.created', 'job.started', 'job.completed'].map((e) => {
        const name = `sluice_job_events_total{queue="${queue}",event="${e}"} `;
        return Number(text.split('\n').find((l) => l.startsWith(name))?.slice(name.length));
      });
    for (const [i, api] of apis.entries()) {
      const r = await fetch(`${api.url}/api/v1/metrics`, { headers: { authorization: `Bearer ${api.key}` } });
      assert.equal(r.status, 200);
      const text = await r.text();
      for (const queue of queues) {
        assert.deepEqual(series(text, queue), [2, 2, 2], `${queue} through node ${i}`);
        assert.match(text, new RegExp(`^sluice_job_run_seconds_count\\{queue="${queue}",outcome="completed"\\} 2$`, 'm'));
        assert.match(text, new RegExp(`^sluice_job_wait_seconds_count\\{queue="${queue}"\\} 2$`, 'm'));
      }
    }
  });

  test('gRPC streams connected to one node are fed the jobs of a queue another node owns', { timeout: 60_000 }, async () => {
    const v1 = loadQueueV1();
    const client = new v1.QueueService(`127.0.0.1:${a.node.grpcPort}`, credentials.createInsecure()) as Client & Record<string, any>;
    const md = new Metadata();
    md.set('x-api-key', a.api.key);
    const unary = (method: string, req: object) =>
      new Promise<any>((resolve, reject) => client[method](req, md, (err: ServiceError | null, res: unknown) => (err ? reject(err) : resolve(res))));
    try {
      // StreamJobs on A, the queue on B, the jobs enqueued through C; completed through A (forwarded to B).
      const streamed = await queueOwnedBy(others[0]!, 'streamed');
      const stream = client.StreamJobs({ queueName: streamed, workerId: 'sw', batchSize: 2 }, md) as ClientReadableStream<any>;
      const got: any[] = [];
      stream.on('data', (j) => got.push(j));
      stream.on('error', () => {});
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await apis[2]!.enqueue({ queue_name: streamed, payload: { i } })).id);
      await until('five jobs down the stream', async () => got.length >= 5);
      assert.deepEqual(got.map((j) => j.id).sort(), [...ids].sort());
      for (const j of got) {
        assert.equal(j.status, 'processing');
        assert.equal((await unary('Complete', { jobId: j.id, workerId: 'sw', leaseId: j.leaseId })).status, 'completed');
      }
      stream.cancel();

      // ProcessJobs on A: claims of a queue on B fed by enqueues through C, completes acknowledged on the stream.
      const processed = await queueOwnedBy(others[0]!, 'processed');
      const duplex = client.ProcessJobs(md) as ClientDuplexStream<any, any>;
      const down: any[] = [];
      duplex.on('data', (m) => down.push(m));
      duplex.on('error', () => {});
      duplex.write({ ref: 'c', claim: { queueName: processed, workerId: 'pw', batchSize: 3 } });
      await sleep(100); // the claim parks on B first, so the enqueues feed it there
      const more: string[] = [];
      for (let i = 0; i < 3; i++) more.push((await apis[2]!.enqueue({ queue_name: processed, payload: { i } })).id);
      await until('three jobs down the stream', async () => down.filter((m) => m.job).length >= 3);
      const jobs = down.filter((m) => m.job).map((m) => m.job);
      assert.deepEqual(jobs.map((j) => j.id).sort(), [...more].sort());
      for (const j of jobs) duplex.write({ ref: `done-${j.id}`, complete: { jobId: j.id, workerId: 'pw', leaseId: j.leaseId } });
      await until('three acknowledgements', async () => down.filter((m) => m.ack).length >= 3);
      assert.deepEqual(down.filter((m) => m.ack).map((m) => [m.ack.code, m.ack.complete?.status]), [[0, 'completed'], [0, 'completed'], [0, 'completed']]);
      duplex.end();
      const st = await apis[1]!.get(`/api/v1/queues/${processed}/stats`);
      assert.equal(st.body.completed, 3);
    } finally {
      client.close();
    }
  });

  test('a webhook event is delivered once, whichever node caused it', { timeout: 60_000 }, async () => {
    const hook = await apis[1]!.post('/api/v1/outgoing-webhooks', { name: 'once', url: hookUrl, events: ['job.created'] });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    await sleep(200); // every node's dispatcher drops its cached endpoints (announced over NOTIFY)
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await apis[i % 3]!.enqueue({ queue_name: `hooked-${i % 5}`, payload: { i } })).id);
    await until('30 deliveries', async () => delivered.filter((d) => d.event === 'job.created').length >= 30);
    await sleep(500);
    const got = delivered.filter((d) => d.event === 'job.created').map((d) => d.jobId);
    assert.deepEqual(got.sort(), ids.sort(), 'each event delivered once');
  });
});

describe('a node that stops, and the long polls it forwarded', { skip }, () => {
  test('the owner answers them at once, empty, and keeps no claim for them', { timeout: 60_000 }, async () => {
    const store = await freshStore();
    const a = await startTestNode({ store, env: CLUSTER_ENV });
    const b = await startNode({ config: loadConfig(a.env) });
    let aStopped = false;
    try {
      await until('two nodes share the shards', async () => {
        const m = await owners(a);
        return m.size === 2 && [...m.values()].reduce((x, y) => x + y, 0) === 256;
      });
      const org = (await a.api.get('/api/v1/auth/me')).body.organization_id as string;
      const held = new Set((await a.node.store.query<{ shard: number }>(`SELECT shard FROM shards WHERE owner = $1 AND lease_until > now()`, [b.nodeId])).map((r) => r.shard));
      const shards = loadConfig(a.env).shardCount;
      let queue = '';
      for (let i = 0; !queue; i++) if (held.has(shardOf(actorKey(org, `fwd-${i}`), shards))) queue = `fwd-${i}`;
      // Through A, for a queue B owns: forwarded to B and parked there for up to 30 s.
      const poll = a.api.post('/api/v1/jobs/claim', { queue_name: queue, worker_id: 'leaving', wait_ms: 30_000 });
      await sleep(300);
      const t0 = performance.now();
      const stopping = a.stop().then(() => (aStopped = true));
      const r = await poll;
      const answeredMs = performance.now() - t0;
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.jobs, []);
      assert.equal(r.headers.get('connection'), 'close');
      // Far below the stop's grace (5 s): B answered it when A said it was leaving.
      assert.ok(answeredMs < 2_500, `answered ${answeredMs.toFixed(0)} ms after the stop began`);
      await stopping;
      // B parks nothing for it any more: a job enqueued now goes to the next claim, not to the poll that left.
      const api = new Api(b.url, a.api.key);
      const job = await api.enqueue({ queue_name: queue, payload: {} });
      const got = await api.post('/api/v1/jobs/claim', { queue_name: queue, worker_id: 'next' });
      assert.deepEqual(got.body.jobs.map((j: { id: string }) => j.id), [job.id]);
    } finally {
      await b.stop();
      if (!aStopped) await a.stop();
      await store.dispose();
    }
  });
});

test('the embedded store stays one node: a second node on its data directory refuses to start, and says why', { skip: STORE !== 'pglite' ? 'the embedded store only' : false }, async () => {
  const store = await freshStore();
  const first = await startTestNode({ store });
  try {
    await assert.rejects(startNode({ config: loadConfig(first.env) }), /in use by process \d+: the embedded store serves one node/);
    assert.equal((await first.api.get('/health/ready')).status, 200, 'the first node goes on');
  } finally {
    await first.stop();
    await store.dispose();
  }
});
