// Many nodes as separate processes on one PostgreSQL database, under load through all of them (enqueue, claim
// and complete over REST and gRPC): a node killed with -9, a node frozen long enough to be deposed, and a
// rolling restart of every node. What must hold: no acknowledged job is lost, no job's completion is
// acknowledged twice, leases outlive the node that granted them, clients see successes, 503s (after a crash)
// and explained 409s, never a false success; and a rolling restart answers nothing but successes.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { credentials, Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import { loadQueueV1, toStruct } from '../src/io/grpc/proto.js';
import { actorKey, shardOf } from '../src/runtime/shard.js';
import { Api, CLUSTER_ENV, freePort, freshStore, sleep, spawnNode, STORE, type StoreLocation } from './helpers.js';

const skip = STORE !== 'pg' ? 'many nodes need PostgreSQL' : false;
const SHARDS = 256;
const QUEUES = Array.from({ length: 12 }, (_, i) => `fo-${i}`);
const v1 = loadQueueV1();
type Json = Record<string, any>;

interface Proc {
  child: ChildProcess;
  /** Requests of the load in flight to this node. */
  inflight: number;
  api: Api;
  grpc: Client & Json;
  clusterAddress: string;
  env: Record<string, string>;
}

async function spawn(store: StoreLocation, key: string | null, ports?: { http: string; grpc: string; cluster: string }, extra: Record<string, string> = {}): Promise<Proc> {
  const p = ports ?? { http: String(await freePort()), grpc: String(await freePort()), cluster: String(await freePort()) };
  const env = { ...store.env, ...CLUSTER_ENV, PORT: p.http, GRPC_PORT: p.grpc, CLUSTER_PORT: p.cluster, ACTOR_THREADS: '1', ...extra };
  const { child, url } = await spawnNode(env);
  const k = key ?? fs.readFileSync(path.join(store.env.DATA_DIR!, 'default-api-key'), 'utf8').trim();
  const grpc = new v1.QueueService(`127.0.0.1:${p.grpc}`, credentials.createInsecure()) as Client & Json;
  return { child, inflight: 0, api: new Api(url, k), grpc, clusterAddress: `127.0.0.1:${p.cluster}`, env: { ...env, ...p } };
}

const ports = (p: Proc) => ({ http: p.env.PORT!, grpc: p.env.GRPC_PORT!, cluster: p.env.CLUSTER_PORT! });

function grpcCall(p: Proc, method: string, req: Json): Promise<Json> {
  const m = new Metadata();
  m.set('x-api-key', p.api.key);
  const options = { deadline: Date.now() + 30_000 };
  return new Promise((resolve, reject) => p.grpc[method](req, m, options, (err: ServiceError | null, res: Json) => (err ? reject(err) : resolve(res))));
}

async function stop(p: Proc, signal: NodeJS.Signals): Promise<void> {
  p.grpc.close();
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill(signal);
  await exited;
}

async function query<T = Json>(store: StoreLocation, sql: string, params: unknown[] = []): Promise<T[]> {
  const pg = await import('pg');
  const c = new pg.default.Client(store.env.DATABASE_URL);
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end();
  }
}

/** node id → live shard count, and the owner of each shard. */
async function shardMap(api: Api, store: StoreLocation): Promise<{ byNode: Map<string, number>; owner: Map<number, string>; address: Map<string, string> }> {
  const pg = await import('pg');
  const c = new pg.default.Client(store.env.DATABASE_URL);
  await c.connect();
  try {
    const shards = (await c.query(`SELECT shard, owner::text AS owner FROM shards WHERE shard >= 0 AND lease_until > now()`)).rows as Array<{ shard: number; owner: string }>;
    const nodes = (await c.query(`SELECT id::text AS id, address FROM cluster_nodes`)).rows as Array<{ id: string; address: string }>;
    const byNode = new Map<string, number>();
    for (const s of shards) byNode.set(s.owner, (byNode.get(s.owner) ?? 0) + 1);
    void api;
    return { byNode, owner: new Map(shards.map((s) => [s.shard, s.owner])), address: new Map(nodes.map((n) => [n.address, n.id])) };
  } finally {
    await c.end();
  }
}

async function until(what: string, check: () => Promise<boolean>, ms: number): Promise<number> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > ms) assert.fail(`${what} did not happen within ${ms} ms`);
    await sleep(100);
  }
  return Date.now() - start;
}

/** One answer of the load, whatever the protocol: REST status, `grpc-ok`, gRPC UNAVAILABLE as 503 and FAILED_PRECONDITION as 409, or `conn`. */
interface Answer {
  status: string;
  body: Json | null;
}

async function rest(p: Proc, route: string, body: Json): Promise<Answer> {
  p.inflight++;
  try {
    const r = await p.api.post(route, body);
    return { status: String(r.status), body: r.body };
  } catch {
    return { status: 'conn', body: null };
  } finally {
    p.inflight--;
  }
}

async function rpc(p: Proc, method: string, req: Json): Promise<Answer> {
  p.inflight++;
  try {
    return { status: 'grpc-ok', body: await grpcCall(p, method, req) };
  } catch (err) {
    const code = (err as ServiceError).code;
    const status = code === 14 ? '503' : code === 9 ? '409' : code === undefined ? 'conn' : `grpc-${code}`;
    return { status, body: { message: (err as Error).message } };
  } finally {
    p.inflight--;
  }
}

/** A claimed job as either API shows it. */
interface Held {
  id: string;
  leaseId: string;
  leaseExpiresAt: string;
}

/**
 * Load through every node in `nodes()` (re-read each turn: nodes come and go), as clients that retry a 503 or a
 * dropped connection would, on another node: enqueuers over REST and gRPC (with idempotency keys, so a retry
 * never makes a second job), and workers claiming over REST or gRPC (Dequeue) through one node and completing
 * over REST or gRPC through another. `leaseSecs` is short in the crash test so that jobs claimed by a worker
 * whose answer was lost come back.
 *
 * A complete answered 409 must be the truth: either its answer came after the lease's expiry (the machine's one
 * clock, which the nodes share), or an earlier attempt of it answered 503 and did complete the job (the node
 * ran it and died, or its answer was lost, before replying). Any other 409 is `unexplained`.
 */
function load(nodes: () => Proc[], leaseSecs: number) {
  const acked = new Map<string, number>();
  const completed = new Map<string, number>();
  const statuses = new Map<string, number>();
  const unexplained: string[] = [];
  const conflicts = { late: 0, ranBefore: 0 };
  let stopped = false;
  let next = 0;
  const note = (s: string) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
  const pick = () => {
    const live = nodes();
    return live[Math.floor(Math.random() * live.length)]!;
  };
  /** Sends until the answer is neither a 503 nor a dropped connection (each attempt through a node picked again). */
  const send = async (attempt: () => Promise<Answer>, onRetry: () => void = () => {}): Promise<Answer> => {
    for (let i = 0; ; i++) {
      const a = await attempt();
      note(a.status);
      if ((a.status !== '503' && a.status !== 'conn') || i === 30) return a;
      onRetry();
      await sleep(Math.min(50 * 2 ** i, 500));
    }
  };
  const enqueuer = (viaGrpc: boolean) => async () => {
    while (!stopped) {
      const k = next++;
      const queue = QUEUES[k % QUEUES.length]!;
      const key = `load-${k}`;
      const a = await send(() =>
        viaGrpc
          ? rpc(pick(), 'Enqueue', { queueName: queue, payload: toStruct({ k }), idempotencyKey: key })
          : rest(pick(), '/api/v1/jobs', { queue_name: queue, payload: { k }, idempotency_key: key }),
      );
      // A retry after a lost answer finds the job its first attempt made (200, created: false).
      if (a.status === '201' || a.status === '200') acked.set(a.body!.id, k);
      else if (a.status === 'grpc-ok') acked.set(a.body!.job.id, k);
    }
  };
  const complete = async (j: Held, worker: string, viaGrpc: boolean) => {
    let retried = false;
    const a = await send(
      () =>
        viaGrpc
          ? rpc(pick(), 'Complete', { jobId: j.id, workerId: worker, leaseId: j.leaseId })
          : rest(pick(), `/api/v1/jobs/${j.id}/complete`, { worker_id: worker, lease_id: j.leaseId }),
      () => (retried = true),
    );
    const answeredAt = Date.now();
    if (a.status === '200' || a.status === 'grpc-ok') completed.set(j.id, (completed.get(j.id) ?? 0) + 1);
    else if (a.status === '409') {
      if (answeredAt >= Date.parse(j.leaseExpiresAt)) conflicts.late++;
      else if (retried && (await pick().api.get(`/api/v1/jobs/${j.id}`).then((r) => r.body.status, () => null)) === 'completed') conflicts.ranBefore++;
      else unexplained.push(`${j.id} (lease until ${j.leaseExpiresAt}, answered ${new Date(answeredAt).toISOString()}): ${JSON.stringify(a.body)}`);
    }
  };
  const worker = (n: number, viaGrpc: boolean) => async () => {
    const id = `w${n}`;
    for (let turn = 0; !stopped; turn++) {
      const queue = QUEUES[(n + next) % QUEUES.length]!;
      const a = await send(() =>
        viaGrpc
          ? rpc(pick(), 'Dequeue', { queueName: queue, workerId: id, batchSize: 5, leaseDurationSecs: leaseSecs })
          : rest(pick(), '/api/v1/jobs/claim', { queue_name: queue, worker_id: id, limit: 5, lease_duration_secs: leaseSecs }),
      );
      if (a.status !== '200' && a.status !== 'grpc-ok') continue;
      const jobs: Held[] = (a.body!.jobs as Json[]).map((j) =>
        viaGrpc ? { id: j.id, leaseId: j.leaseId, leaseExpiresAt: j.leaseExpiresAt } : { id: j.id, leaseId: j.lease_id, leaseExpiresAt: j.lease_expires_at },
      );
      // Completes alternate between the APIs, whichever claimed the job.
      for (const [i, j] of jobs.entries()) await complete(j, id, (turn + i) % 2 === 0);
    }
  };
  const loops = [
    ...Array.from({ length: 5 }, () => enqueuer(false)()),
    ...Array.from({ length: 2 }, () => enqueuer(true)()),
    ...Array.from({ length: 6 }, (_, i) => worker(i, i % 2 === 1)()),
  ];
  return {
    acked,
    completed,
    statuses,
    unexplained,
    conflicts,
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/** After the load: every acknowledged job exists with its payload, and each one ends completed exactly once. */
async function verify(p: Proc, acked: Map<string, number>, completed: Map<string, number>): Promise<void> {
  const twice = [...completed.entries()].filter(([, n]) => n > 1);
  assert.deepEqual(twice, [], 'a completion was acknowledged twice');
  for (const q of QUEUES) {
    // Drain what is left (leases of dead workers run out in 5 s).
    const end = Date.now() + 30_000;
    while (Date.now() < end) {
      const r = await p.api.post('/api/v1/jobs/claim', { queue_name: q, worker_id: 'drain', limit: 100, lease_duration_secs: 60 });
      if (r.status !== 200) continue;
      for (const j of r.body.jobs) {
        const d = await p.api.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: 'drain', lease_id: j.lease_id });
        assert.equal(d.status, 200);
        completed.set(j.id, (completed.get(j.id) ?? 0) + 1);
      }
      const st = await p.api.get(`/api/v1/jobs/stats?queue_name=${q}`);
      if (st.body.counts.pending + st.body.counts.scheduled + st.body.counts.processing === 0) break;
      if (r.body.jobs.length === 0) await sleep(200);
    }
  }
  const ids = [...acked.keys()];
  let missing = 0;
  let wrong = 0;
  let notDone = 0;
  for (let i = 0; i < ids.length; i += 100) {
    const r = await p.api.get(`/api/v1/jobs/status?ids=${ids.slice(i, i + 100).join(',')}`);
    const found = new Map((r.body as Json[]).map((row) => [row.id, row]));
    for (const id of ids.slice(i, i + 100)) {
      const row = found.get(id);
      if (!row) missing++;
      else if (row.status !== 'completed') notDone++;
    }
  }
  for (const id of ids.slice(0, 200)) {
    const r = await p.api.get(`/api/v1/jobs/${id}`);
    if (r.body.payload?.k !== acked.get(id)) wrong++;
  }
  assert.equal(missing, 0, `${missing} of ${ids.length} acknowledged jobs lost`);
  assert.equal(wrong, 0, 'payloads kept');
  assert.equal(notDone, 0, `${notDone} acknowledged jobs never completed`);
}

/**
 * After a crash: successes, 503s and dropped connections (retried), and 409s each explained (see load): a lease
 * that ran out while its shard had no owner, or a retried complete whose first attempt ran on the node that died.
 */
function assertTruthful(l: ReturnType<typeof load>): void {
  const bad = [...l.statuses.entries()].filter(([s]) => !['200', '201', 'grpc-ok', '503', '409', 'conn'].includes(s));
  assert.deepEqual(bad, [], `unexpected answers: ${JSON.stringify([...l.statuses])}`);
  assert.deepEqual(l.unexplained, [], '409s that no lease expiry or earlier attempt explains');
}

test('three nodes under load, one killed with -9: its shards move within 15 s, nothing acknowledged is lost or completed twice', { skip, timeout: 240_000 }, async () => {
  const store = await freshStore();
  const procs: Proc[] = [];
  try {
    procs.push(await spawn(store, null));
    const key = procs[0]!.api.key;
    procs.push(await spawn(store, key), await spawn(store, key));
    await until('three nodes share the shards', async () => (await shardMap(procs[0]!.api, store)).byNode.size === 3, 20_000);

    // Jobs claimed, before the kill, from queues whose shard the victim owns: their leases were granted by it.
    // Half are claimed over REST, half over gRPC; each is completed later through a node that survives, by the
    // API that claimed it.
    const victim = procs[2]!;
    const map = await shardMap(victim.api, store);
    const victimId = map.address.get(victim.clusterAddress)!;
    const org = (await victim.api.get('/api/v1/auth/me')).body.organization_id as string;
    const held: Array<Held & { viaGrpc: boolean }> = [];
    for (let i = 0; held.length < 10 && i < 200; i++) {
      const q = `held-${i}`;
      if (map.owner.get(shardOf(actorKey(org, q), SHARDS)) !== victimId) continue;
      await procs[0]!.api.enqueue({ queue_name: q, payload: { held: i } });
      if (held.length % 2 === 0) {
        const [j] = await procs[1]!.api.claim(q, { lease_duration_secs: 600 });
        held.push({ id: j.id, leaseId: j.lease_id, leaseExpiresAt: j.lease_expires_at, viaGrpc: false });
      } else {
        const { jobs: [j] } = await grpcCall(procs[1]!, 'Dequeue', { queueName: q, workerId: 'w1', batchSize: 1, leaseDurationSecs: 600 });
        held.push({ id: j.id, leaseId: j.leaseId, leaseExpiresAt: j.leaseExpiresAt, viaGrpc: true });
      }
    }
    assert.equal(held.length, 10);

    let live = [...procs];
    const l = load(() => live, 5);
    await until('a first thousand enqueues', async () => l.acked.size >= 1_000, 60_000);
    victim.child.kill('SIGKILL');
    live = procs.slice(0, 2);
    const moved = await until(
      'the dead node’s shards owned elsewhere',
      async () => {
        const m = await shardMap(procs[0]!.api, store);
        return m.owner.size === SHARDS && [...m.owner.values()].every((o) => o !== victimId);
      },
      15_000,
    );
    // The load goes on through the two nodes left, on every queue (the dead node's included).
    const [enqueued, done] = [l.acked.size, l.completed.size];
    await until('more work done after the move', async () => l.acked.size >= enqueued + 300 && l.completed.size >= done + 300, 60_000);
    await l.stop();

    for (const j of held) {
      const r = j.viaGrpc
        ? await rpc(procs[0]!, 'Complete', { jobId: j.id, workerId: 'w1', leaseId: j.leaseId })
        : await rest(procs[0]!, `/api/v1/jobs/${j.id}/complete`, { worker_id: 'w1', lease_id: j.leaseId });
      assert.equal(r.status, j.viaGrpc ? 'grpc-ok' : '200', `a lease granted by the dead node still holds: ${JSON.stringify(r.body)}`);
    }
    await verify(procs[0]!, l.acked, l.completed);
    assertTruthful(l);
    console.log(`shards moved ${moved} ms after the kill; answers: ${JSON.stringify([...l.statuses])}; 409s: ${JSON.stringify(l.conflicts)}`);
  } finally {
    for (const p of procs) await stop(p, 'SIGKILL');
    await store.dispose();
  }
});

test('a node frozen past its lease is deposed: once it runs again, its clients get the truth', { skip, timeout: 120_000 }, async () => {
  const store = await freshStore();
  const procs: Proc[] = [];
  try {
    procs.push(await spawn(store, null));
    procs.push(await spawn(store, procs[0]!.api.key));
    await until('two nodes share the shards', async () => (await shardMap(procs[0]!.api, store)).byNode.size === 2, 20_000);
    const [a, b] = procs as [Proc, Proc];
    const aId = (await shardMap(a.api, store)).address.get(a.clusterAddress)!;
    // Warm A's actors for every queue, then freeze it past its lease (2 s): B takes its shards over.
    for (const q of QUEUES) await a.api.enqueue({ queue_name: q, payload: { warm: q } });
    a.child.kill('SIGSTOP');
    await until('B owns every shard', async () => {
      const m = await shardMap(b.api, store);
      return m.owner.size === SHARDS && [...m.owner.values()].every((o) => o !== aId);
    }, 20_000);
    // Requests reach the frozen node; it runs them when it wakes, before it has noticed its leases are gone.
    const answers = QUEUES.map((q, i) => a.api.post('/api/v1/jobs', { queue_name: q, payload: { after: i } }));
    await sleep(200);
    a.child.kill('SIGCONT');
    const results = await Promise.all(answers);
    const ok = results.filter((r) => r.status === 201);
    assert.deepEqual(
      results.filter((r) => r.status !== 201 && r.status !== 503).map((r) => r.status),
      [],
      'a success or a 503, nothing else',
    );
    // Every success is real (written under B's epoch, visible through B); nothing was written by the deposed A.
    for (const r of ok) {
      const row = await b.api.get(`/api/v1/jobs/${r.body.id}`);
      assert.equal(row.status, 200, 'an acknowledged job exists');
    }
    const stats = await b.api.get('/api/v1/jobs/stats');
    assert.equal(stats.body.counts.pending, QUEUES.length + ok.length, 'no write of the deposed node beyond what was acknowledged');
    // A serves again, forwarding to B.
    const after = await a.api.post('/api/v1/jobs', { queue_name: QUEUES[0], payload: { later: true } });
    assert.equal(after.status, 201);
  } finally {
    for (const p of procs) {
      p.child.kill('SIGCONT');
      await stop(p, 'SIGKILL');
    }
    await store.dispose();
  }
});

test('a rolling restart of three nodes under load: nothing lost, and no error at all (not even a 503)', { skip, timeout: 300_000 }, async () => {
  const store = await freshStore();
  const procs: Proc[] = [];
  try {
    procs.push(await spawn(store, null));
    const key = procs[0]!.api.key;
    procs.push(await spawn(store, key), await spawn(store, key));
    await until('three nodes share the shards', async () => (await shardMap(procs[0]!.api, store)).byNode.size === 3, 20_000);
    let live = [...procs];
    // No node dies here: leases long enough that none runs out under a worker, so a 409 would be a fault.
    const l = load(() => live, 30);
    await until('load running', async () => l.acked.size >= 300, 60_000);
    for (let i = 0; i < procs.length; i++) {
      const old = procs[i]!;
      // Out of the load balancer first; stopped once what was sent to it is answered.
      live = procs.filter((p) => p !== old);
      await until('requests in flight to it answered', async () => old.inflight === 0, 30_000);
      await stop(old, 'SIGTERM');
      procs[i] = await spawn(store, key, ports(old));
      live = [...procs];
      await until('the restarted node holds shards again', async () => (await shardMap(procs[0]!.api, store)).byNode.size === 3, 20_000);
    }
    const [enqueued, done] = [l.acked.size, l.completed.size];
    await until('more work done after the last restart', async () => l.acked.size >= enqueued + 100 && l.completed.size >= done + 100, 60_000);
    await l.stop();
    await verify(procs[0]!, l.acked, l.completed);
    // Every shard was handed over before its node left, and every call in flight between nodes answered
    // (src/io/cluster/peers.ts): a clean stop answers no 503, cuts no connection, and no lease runs out.
    const errors = [...l.statuses.entries()].filter(([s]) => !['200', '201', 'grpc-ok'].includes(s));
    assert.deepEqual(errors, [], `answers other than successes: ${JSON.stringify([...l.statuses])}`);
    console.log(`rolling restart: ${l.acked.size} enqueues acknowledged; answers: ${JSON.stringify([...l.statuses])}`);
  } finally {
    for (const p of procs) await stop(p, 'SIGKILL');
    await store.dispose();
  }
});

test('webhook deliveries of a node killed with -9 are adopted by the leader and each event is delivered once', { skip, timeout: 180_000 }, async () => {
  // The receiver refuses every attempt while the sender lives, then accepts; it counts, per event id, the
  // attempts that reached it and those it accepted.
  const seen = new Map<string, { job: string; attempts: number; accepted: number }>();
  let accepting = false;
  const receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw) as Json;
      const e = seen.get(body.id) ?? { job: body.data.job_id, attempts: 0, accepted: 0 };
      seen.set(body.id, e);
      e.attempts++;
      if (accepting) e.accepted++;
      res.statusCode = accepting ? 200 : 500;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const store = await freshStore();
  const procs: Proc[] = [];
  // Attempts 2… wait 5, 10… s: the dead node's next attempt is far off when it is killed, so nothing it sent can
  // reach the receiver once it accepts.
  const env = { WEBHOOK_RETRY_UNIT_MS: '5000' };
  try {
    procs.push(await spawn(store, null, undefined, env));
    const key = procs[0]!.api.key;
    procs.push(await spawn(store, key, undefined, env), await spawn(store, key, undefined, env));
    await until('three nodes share the shards', async () => (await shardMap(procs[0]!.api, store)).byNode.size === 3, 20_000);
    const hook = await procs[0]!.api.post('/api/v1/outgoing-webhooks', { name: 'adopted', url, events: ['job.created'] });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));

    // The victim leads: a new leader must take the lead, then adopt what the victim was sending.
    const leaderOf = async () => (await query<{ owner: string }>(store, `SELECT owner::text AS owner FROM shards WHERE shard = -1 AND lease_until > now()`))[0]?.owner;
    const leaderId = (await leaderOf())!;
    const map = await shardMap(procs[0]!.api, store);
    const victim = procs.find((p) => map.address.get(p.clusterAddress) === leaderId)!;
    const other = procs.find((p) => p !== victim)!;
    const org = (await other.api.get('/api/v1/auth/me')).body.organization_id as string;
    // Jobs of queues whose shard the victim owns, enqueued through another node: their job.created events are
    // committed, and their deliveries sent, by the victim.
    const jobs: string[] = [];
    for (let i = 0; jobs.length < 20 && i < 1_000; i++) {
      const q = `hooked-${i}`;
      if (map.owner.get(shardOf(actorKey(org, q), SHARDS)) !== leaderId) continue;
      jobs.push((await other.api.enqueue({ queue_name: q, payload: { i } })).id);
      // The first waits to be attempted: every node has dropped its cached endpoints by then.
      if (jobs.length === 1) await until('a first attempt', async () => seen.size === 1, 10_000);
    }
    assert.equal(jobs.length, 20);
    const attempted = () => new Set([...seen.values()].filter((e) => e.attempts > 0).map((e) => e.job));
    await until('every event attempted (and refused)', async () => jobs.every((j) => attempted().has(j)), 15_000);
    const before = await query<{ node_id: string; status: string }>(store, `SELECT node_id::text AS node_id, status FROM webhook_deliveries`);
    assert.equal(before.length, 20);
    assert.ok(before.every((d) => d.status === 'pending' && d.node_id === leaderId), 'the victim holds every delivery, pending');

    const exited = new Promise((r) => victim.child.once('exit', r));
    victim.child.kill('SIGKILL');
    await exited;
    accepting = true;
    const started = Date.now();
    await until('every event accepted', async () => [...seen.values()].every((e) => e.accepted > 0), 60_000);
    const adoptedIn = Date.now() - started;
    await until('every delivery closed', async () => (await query(store, `SELECT 1 FROM webhook_deliveries WHERE status <> 'success'`)).length === 0, 15_000);
    // Two more adoption rounds (one per CLUSTER_LEASE_MS): a second sender of any delivery would show by then.
    await sleep(4_500);

    assert.deepEqual([...new Set([...seen.values()].map((e) => e.job))].sort(), [...jobs].sort(), 'one event per job');
    assert.deepEqual([...seen.values()].filter((e) => e.accepted !== 1), [], 'each event accepted once');
    const newLeader = await leaderOf();
    assert.ok(newLeader && newLeader !== leaderId, 'another node leads');
    const after = await query<{ node_id: string; attempts: number }>(store, `SELECT node_id::text AS node_id, attempts FROM webhook_deliveries`);
    assert.ok(after.every((d) => d.node_id === newLeader), 'the new leader adopted every delivery');
    assert.ok(after.every((d) => d.attempts >= 2), 'resumed after the attempts already made');
    console.log(`deliveries adopted and accepted ${adoptedIn} ms after the kill`);
  } finally {
    for (const p of procs) await stop(p, 'SIGKILL');
    await store.dispose();
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  }
});
