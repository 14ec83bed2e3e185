// Many nodes on one PostgreSQL: enqueue throughput through 1, 2 and 3 nodes (load spread over every node and 64
// queues, so about (n-1)/n of the requests are forwarded to their shard's owner), with the CPU of each node
// process and of PostgreSQL; and what forwarding adds to one request: the latency of enqueues sent one at a
// time to the node that owns the queue's shard against the same enqueues sent to another node.
//
//   node --import tsx bench/cluster.ts            BENCH_SECONDS (default 10), BENCH_NODES (default "1,2,3")
//
// Every node runs ACTOR_THREADS=1 (three nodes on two cores); the figures are for docs/BENCHMARKS.md.
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { actorKey, shardOf } from '../src/runtime/shard.js';
import { fmt, freshDatabase, percentile, SERVER_ROOT, sleep, sortedOf } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const COUNTS = (process.env.BENCH_NODES ?? '1,2,3').split(',').map(Number);
const CONNECTIONS = 48;
const QUEUES = 64;
const SECRET = 'bench-cluster-secret-of-at-least-32-characters';
const TICK = 100; // clock ticks per second on Linux
const log = (m: string) => process.stderr.write(`[cluster-bench] ${m}\n`);

interface Node {
  child: ChildProcess;
  url: string;
  clusterAddress: string;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });

async function startNode(databaseUrl: string, dataDir: string): Promise<Node> {
  const clusterPort = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(SERVER_ROOT, 'src/main.ts')], {
    cwd: SERVER_ROOT,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      GRPC_PORT: '0',
      LOG_LEVEL: 'info',
      ACTOR_THREADS: '1',
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      CLUSTER_SECRET: SECRET,
      CLUSTER_PORT: String(clusterPort),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  process.on('exit', () => child.kill('SIGKILL'));
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`node exited (${code}):\n${out}`)));
  });
  return { child, url, clusterAddress: `127.0.0.1:${clusterPort}` };
}

/** utime + stime of a process, in clock ticks. */
function cpuTicks(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function postgresPids(): number[] {
  try {
    return execFileSync('pgrep', ['-x', 'postgres'], { encoding: 'utf8' }).trim().split('\n').map(Number);
  } catch {
    return [];
  }
}

const pgTicks = (): number => postgresPids().reduce((sum, pid) => {
  try {
    return sum + cpuTicks(pid);
  } catch {
    return sum; // a backend that ended meanwhile
  }
}, 0);

/** Stops the nodes, closes the reader, drops the database and the data directory. */
async function teardown(nodes: Node[], db: pg.Client, db0: Awaited<ReturnType<typeof freshDatabase>>, dataDir: string): Promise<void> {
  for (const x of nodes) x.child.kill('SIGTERM');
  await Promise.all(nodes.map((x) => new Promise((r) => (x.child.exitCode !== null ? r(null) : x.child.once('exit', r)))));
  await db.end().catch(() => {});
  await db0.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

async function waitForShares(db: pg.Client, n: number): Promise<void> {
  // A node takes its fair share over a few lease rounds; three nodes on two busy cores can take a minute.
  let rows: Array<{ owner: string; c: number }> = [];
  for (let i = 0; i < 900; i++) {
    rows = (await db.query(`SELECT owner, count(*)::int AS c FROM shards WHERE shard >= 0 AND lease_until > now() GROUP BY owner`)).rows;
    if (rows.length === n && rows.reduce((s, r) => s + r.c, 0) === 256 && rows.every((r) => Math.abs(r.c - 256 / n) < 2)) return; // each node aims at ceil(256 / n): 86, 86, 84
    await sleep(100);
  }
  throw new Error(`the shards were not shared out between ${n} nodes: ${JSON.stringify(rows)}`);
}

async function throughput(n: number): Promise<{ perSec: number; p50: number; p99: number; bad: number; cpu: string }> {
  const db0 = await freshDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-cluster-bench-'));
  const nodes: Node[] = [];
  const db = new pg.Client(db0.url);
  try {
    for (let i = 0; i < n; i++) nodes.push(await startNode(db0.url, dataDir));
    const key = fs.readFileSync(path.join(dataDir, 'default-api-key'), 'utf8').trim();
    await db.connect();
    await waitForShares(db, n);
    const run = (duration: number) =>
      Promise.all(
        nodes.map((node) =>
          autocannon({
            url: `${node.url}/api/v1/jobs`,
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            connections: CONNECTIONS / n,
            duration,
            requests: [{ setupRequest: (req) => ({ ...req, body: JSON.stringify({ queue_name: `q${Math.floor(Math.random() * QUEUES)}`, payload: { n: 1 } }) }) }],
          }),
        ),
      );
    await run(2);
    const before = { nodes: nodes.map((x) => cpuTicks(x.child.pid!)), pg: pgTicks(), at: Date.now() };
    const results = await run(SECONDS);
    const secs = (Date.now() - before.at) / 1000;
    const cpu = nodes.map((x, i) => `node ${i + 1} ${fmt(((cpuTicks(x.child.pid!) - before.nodes[i]!) / TICK / secs) * 100)}%`);
    cpu.push(`PostgreSQL ${fmt(((pgTicks() - before.pg) / TICK / secs) * 100)}%`);
    const ok = results.reduce((s, r) => s + r['2xx'], 0);
    const bad = results.reduce((s, r) => s + r.non2xx + r.errors + r.timeouts, 0);
    return {
      perSec: ok / SECONDS,
      p50: Math.max(...results.map((r) => r.latency.p50)),
      p99: Math.max(...results.map((r) => r.latency.p99)),
      bad,
      cpu: cpu.join(', '),
    };
  } finally {
    await teardown(nodes, db, db0, dataDir);
  }
}

/** Sequential enqueues to the owner of the queue's shard, and to the other node: per-request latency in ms. */
async function forwarding(): Promise<{ local: Float64Array; forwarded: Float64Array }> {
  const db0 = await freshDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-cluster-bench-'));
  const nodes: Node[] = [];
  const db = new pg.Client(db0.url);
  try {
    for (let i = 0; i < 2; i++) nodes.push(await startNode(db0.url, dataDir));
    const key = fs.readFileSync(path.join(dataDir, 'default-api-key'), 'utf8').trim();
    await db.connect();
    await waitForShares(db, 2);
    const org = (await db.query(`SELECT id FROM organizations LIMIT 1`)).rows[0].id as string;
    const owners = new Map<number, string>((await db.query(`SELECT shard, owner::text AS owner FROM shards WHERE shard >= 0`)).rows.map((r) => [r.shard, r.owner]));
    const address = new Map<string, string>((await db.query(`SELECT address, id::text AS id FROM cluster_nodes`)).rows.map((r) => [r.address, r.id]));
    const first = address.get(nodes[0]!.clusterAddress)!;
    // A queue whose shard node 1 owns: enqueues to node 1 run there, enqueues to node 2 are forwarded.
    let queue = '';
    for (let i = 0; queue === ''; i++) if (owners.get(shardOf(actorKey(org, `lat-${i}`), 256)) === first) queue = `lat-${i}`;
    const send = async (node: Node) => {
      const t = performance.now();
      const r = await fetch(`${node.url}/api/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ queue_name: queue, payload: { n: 1 } }),
      });
      await r.arrayBuffer();
      if (r.status !== 201) throw new Error(`enqueue answered ${r.status}`);
      return performance.now() - t;
    };
    for (let i = 0; i < 200; i++) await send(nodes[i % 2]!);
    const local: number[] = [];
    const forwarded: number[] = [];
    // Alternate, so both see the same moments of the machine.
    for (let i = 0; i < 2_000; i++) (i % 2 === 0 ? local : forwarded).push(await send(nodes[i % 2]!));
    return { local: sortedOf(local), forwarded: sortedOf(forwarded) };
  } finally {
    await teardown(nodes, db, db0, dataDir);
  }
}

const lines: string[] = ['| nodes | enqueue/s (all nodes) | p50 / p99 ms | failed | CPU (100% = one core) |', '|---|---|---|---|---|'];
for (const n of COUNTS) {
  log(`${n} node(s): ${SECONDS} s of enqueues through every node`);
  const r = await throughput(n);
  lines.push(`| ${n} | ${fmt(r.perSec)} | ${r.p50} / ${r.p99} | ${r.bad} | ${r.cpu} |`);
  log(lines[lines.length - 1]!);
}
log('forwarding: 1,000 enqueues to the owner and 1,000 to the other node, alternately, one at a time');
const f = await forwarding();
const p = (a: Float64Array, q: number) => fmt(percentile(a, q), 2);
lines.push('', '| sent to | p50 ms | p99 ms |', '|---|---|---|');
lines.push(`| the owner of the queue's shard | ${p(f.local, 50)} | ${p(f.local, 99)} |`);
lines.push(`| another node (forwarded) | ${p(f.forwarded, 50)} | ${p(f.forwarded, 99)} |`);
lines.push(`| forwarding adds | ${fmt(percentile(f.forwarded, 50) - percentile(f.local, 50), 2)} | ${fmt(percentile(f.forwarded, 99) - percentile(f.local, 99), 2)} |`);
console.log(lines.join('\n'));
