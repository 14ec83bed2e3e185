// Many nodes as separate processes on one PostgreSQL database, under load through all of them (REST and gRPC):
// a node killed with -9, a node frozen long enough to be deposed, and a rolling restart of every node. What must
// hold: no acknowledged job is lost, no job's completion is acknowledged twice, leases outlive the node that
// granted them, and clients see successes or 503s, never a false success.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
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
  api: Api;
  grpc: Client & Json;
  clusterAddress: string;
  env: Record<string, string>;
}

async function spawn(store: StoreLocation, key: string | null, ports?: { http: string; grpc: string; cluster: string }): Promise<Proc> {
  const p = ports ?? { http: String(await freePort()), grpc: String(await freePort()), cluster: String(await freePort()) };
  const env = { ...store.env, ...CLUSTER_ENV, PORT: p.http, GRPC_PORT: p.grpc, CLUSTER_PORT: p.cluster, ACTOR_THREADS: '1' };
  const { child, url } = await spawnNode(env);
  const k = key ?? fs.readFileSync(path.join(store.env.DATA_DIR!, 'default-api-key'), 'utf8').trim();
  const grpc = new v1.QueueService(`127.0.0.1:${p.grpc}`, credentials.createInsecure()) as Client & Json;
  return { child, api: new Api(url, k), grpc, clusterAddress: `127.0.0.1:${p.cluster}`, env: { ...env, ...p } };
}

const ports = (p: Proc) => ({ http: p.env.PORT!, grpc: p.env.GRPC_PORT!, cluster: p.env.CLUSTER_PORT! });

function grpcCall(p: Proc, method: string, req: Json): Promise<Json> {
  const m = new Metadata();
  m.set('x-api-key', p.api.key);
  return new Promise((resolve, reject) => p.grpc[method](req, m, (err: ServiceError | null, res: Json) => (err ? reject(err) : resolve(res))));
}

async function stop(p: Proc, signal: NodeJS.Signals): Promise<void> {
  p.grpc.close();
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill(signal);
  await exited;
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

/**
 * Load through every node in `nodes()` (re-read each turn: nodes come and go): enqueuers over REST and gRPC,
 * workers claiming through one node and completing through another. Leases are short so that jobs claimed by
 * a worker whose node died come back.
 */
function load(nodes: () => Proc[]) {
  const acked = new Map<string, number>();
  const completed = new Map<string, number>();
  const statuses = new Map<string, number>();
  let stopped = false;
  let next = 0;
  const note = (s: number | string) => statuses.set(String(s), (statuses.get(String(s)) ?? 0) + 1);
  const pick = () => {
    const live = nodes();
    return live[Math.floor(Math.random() * live.length)]!;
  };
  const enqueuer = (viaGrpc: boolean) => async () => {
    while (!stopped) {
      const k = next++;
      const queue = QUEUES[k % QUEUES.length]!;
      const p = pick();
      try {
        if (viaGrpc) {
          const r = await grpcCall(p, 'Enqueue', { queueName: queue, payload: toStruct({ k }) });
          acked.set(r.job.id, k);
          note('grpc-ok');
        } else {
          const r = await p.api.post('/api/v1/jobs', { queue_name: queue, payload: { k } });
          note(r.status);
          if (r.status === 201) acked.set(r.body.id, k);
        }
      } catch (err) {
        // gRPC UNAVAILABLE is its 503; anything else thrown is a connection that failed.
        note((err as ServiceError).code === 14 ? '503' : 'conn');
        await sleep(20);
      }
    }
  };
  const worker = (n: number) => async () => {
    while (!stopped) {
      const queue = QUEUES[(n + next) % QUEUES.length]!;
      try {
        const r = await pick().api.post('/api/v1/jobs/claim', { queue_name: queue, worker_id: `w${n}`, limit: 5, lease_duration_secs: 5 });
        note(r.status);
        if (r.status !== 200) continue;
        for (const j of r.body.jobs) {
          const done = await pick().api.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: `w${n}`, lease_id: j.lease_id });
          note(done.status);
          if (done.status === 200) completed.set(j.id, (completed.get(j.id) ?? 0) + 1);
        }
      } catch {
        note('conn');
        await sleep(20);
      }
    }
  };
  const loops = [...Array.from({ length: 6 }, () => enqueuer(false)()), enqueuer(true)(), ...Array.from({ length: 6 }, (_, i) => worker(i)())];
  return {
    acked,
    completed,
    statuses,
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

/** Only successes, 503s and the 409s of leases that ran out while their worker's node was gone. */
function assertTruthful(statuses: Map<string, number>): void {
  const bad = [...statuses.entries()].filter(([s]) => !['200', '201', 'grpc-ok', '503', '409', 'conn'].includes(s));
  assert.deepEqual(bad, [], `unexpected answers: ${JSON.stringify([...statuses])}`);
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
    const victim = procs[2]!;
    const map = await shardMap(victim.api, store);
    const victimId = map.address.get(victim.clusterAddress)!;
    const org = (await victim.api.get('/api/v1/auth/me')).body.organization_id as string;
    const held: Json[] = [];
    for (let i = 0; held.length < 10 && i < 200; i++) {
      const q = `held-${i}`;
      if (map.owner.get(shardOf(actorKey(org, q), SHARDS)) !== victimId) continue;
      await procs[0]!.api.enqueue({ queue_name: q, payload: { held: i } });
      const [j] = await procs[1]!.api.claim(q, { lease_duration_secs: 600 });
      held.push(j);
    }
    assert.equal(held.length, 10);

    let live = [...procs];
    const l = load(() => live);
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
    await sleep(3_000);
    await l.stop();

    for (const j of held) {
      const done = await procs[0]!.api.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: 'w1', lease_id: j.lease_id });
      assert.equal(done.status, 200, `a lease granted by the dead node still holds: ${JSON.stringify(done.body)}`);
    }
    await verify(procs[0]!, l.acked, l.completed);
    assertTruthful(l.statuses);
    console.log(`shards moved ${moved} ms after the kill; answers: ${JSON.stringify([...l.statuses])}`);
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

test('a rolling restart of three nodes under load: nothing lost, no error but retried 503s', { skip, timeout: 300_000 }, async () => {
  const store = await freshStore();
  const procs: Proc[] = [];
  try {
    procs.push(await spawn(store, null));
    const key = procs[0]!.api.key;
    procs.push(await spawn(store, key), await spawn(store, key));
    await until('three nodes share the shards', async () => (await shardMap(procs[0]!.api, store)).byNode.size === 3, 20_000);
    let live = [...procs];
    const l = load(() => live);
    await until('load running', async () => l.acked.size >= 300, 60_000);
    for (let i = 0; i < procs.length; i++) {
      const old = procs[i]!;
      live = procs.filter((p) => p !== old);
      await sleep(300); // let requests in flight to it finish, as a load balancer draining it would
      await stop(old, 'SIGTERM');
      procs[i] = await spawn(store, key, ports(old));
      live = [...procs];
      await until('the restarted node holds shards again', async () => (await shardMap(procs[0]!.api, store)).byNode.size === 3, 20_000);
    }
    await sleep(1_000);
    await l.stop();
    await verify(procs[0]!, l.acked, l.completed);
    assertTruthful(l.statuses);
    // A stopping node answers what it was handling before it closes: no connection is cut under a request.
    assert.equal(l.statuses.get('conn') ?? 0, 0, `connections failed: ${JSON.stringify([...l.statuses])}`);
    console.log(`rolling restart: ${l.acked.size} enqueues acknowledged; answers: ${JSON.stringify([...l.statuses])}`);
  } finally {
    for (const p of procs) await stop(p, 'SIGKILL');
    await store.dispose();
  }
});
