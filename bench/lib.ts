// What every scenario shares: a Sluice node in a child process on a fresh PostgreSQL database, a keep-alive
// HTTP client, percentiles, and accounting of where the time went (CPU and run-queue wait per process from
// /proc, PostgreSQL commits and WAL).
//
// The node runs as a child so that its CPU is measured apart from the load generator's; both share the
// same 2 cores with PostgreSQL, which is the point of reporting the split.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { JournalRecord } from '../src/actors/records.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN_URL = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** Milliseconds on one monotonic clock; send and receive times are compared in this process only. */
export const now = (): number => performance.now();

// --- results ---

export interface Row {
  scenario: string;
  metric: string;
  value: string;
  /** Human-readable target, '' when the metric has none. */
  target: string;
  /** null: no target. */
  met: boolean | null;
}

export interface Context {
  url: string;
  key: string;
  server: ServerProcess;
  /** The scenario's own database (scale fills it with SQL and restarts the node on it). */
  databaseUrl: string;
  /** A fresh meter on the server and its database; mark() it where the measured window starts. */
  meter(): Meter;
  log(msg: string): void;
}

export type Scenario = (ctx: Context) => Promise<Row[]>;

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function sortedOf(values: number[]): Float64Array {
  return Float64Array.from(values).sort();
}

/**
 * BENCH_TRACE=<dir>: latency scenarios write `<name>.csv` (ms since start, latency ms) there, to see whether
 * slow requests come in bursts (a stall) or spread out (queueing), or how a fresh node warms up.
 */
export function writeTrace(name: string, points: Array<[number, number]>): void {
  const dir = process.env.BENCH_TRACE;
  if (!dir) return;
  fs.mkdirSync(dir, { recursive: true });
  const lines = points.sort((a, b) => a[0] - b[0]).map(([t, v]) => `${t.toFixed(2)},${v.toFixed(3)}`);
  // A repeated scenario (BENCH_REPEAT) writes <name>-2.csv and so on beside the first run's.
  let file = path.join(dir, `${name}.csv`);
  for (let n = 2; fs.existsSync(file); n++) file = path.join(dir, `${name}-${n}.csv`);
  fs.writeFileSync(file, `t_ms,latency_ms\n${lines.join('\n')}\n`);
}

/**
 * Watches this process's event loop: a stall here would look like server latency in every request that
 * was due or in flight meanwhile, so latency scenarios report it to rule the load generator in or out.
 */
export function watchBenchLoop(): { stop(): { p99: number; max: number } } {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  return {
    stop: () => {
      h.disable();
      return { p99: h.percentile(99) / 1e6, max: h.max / 1e6 };
    },
  };
}

// --- a fresh database per run ---

async function admin(sql: string): Promise<void> {
  const c = new pg.Client(ADMIN_URL);
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

export interface Database {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/**
 * BENCH_PG_SETTINGS="synchronous_commit=off,commit_delay=10" applies settings to this database only, for
 * experiments (what does the fsync cost?); the reported numbers use the server's defaults.
 */
export async function freshDatabase(): Promise<Database> {
  const name = `sluice_bench_${randomBytes(6).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  for (const kv of (process.env.BENCH_PG_SETTINGS ?? '').split(',').filter(Boolean)) {
    const m = /^([a-z_.]+)=([A-Za-z0-9_.]+)$/.exec(kv.trim());
    if (!m) throw new Error(`BENCH_PG_SETTINGS: cannot read ${JSON.stringify(kv)} (name=value)`);
    await admin(`ALTER DATABASE ${name} SET ${m[1]} = '${m[2]}'`);
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

// --- the server under test ---

export interface ServerProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  /** host:port of its gRPC API. */
  grpc: string;
  key: string;
  dataDir: string;
  stop(): Promise<void>;
}

/**
 * Where the node under test comes from: this checkout, or BENCH_SERVER_ROOT (a directory with src/ and
 * package.json, e.g. `git archive <rev>` unpacked with node_modules linked) to measure a fixed revision
 * while the working tree changes.
 */
export const SERVER_ROOT = path.resolve(process.env.BENCH_SERVER_ROOT ?? ROOT);

/**
 * The bootstrap organization is on the free plan (5 requests/s, 10 active jobs): the bench measures the
 * engine, not the plan, so the limits it would hit are lifted (revisions without plans ignore these).
 */
const UNLIMITED_FREE_PLAN: Record<string, string> = Object.fromEntries(
  ['JOBS_PER_DAY', 'ACTIVE_JOBS', 'QUEUES', 'WORKERS', 'RATE_PER_SECOND', 'BURST'].map((r) => [`PLAN_FREE_${r}`, 'unlimited']),
);

/**
 * The flags production starts the node with (Dockerfile, deploy/systemd, `make run`; test/deploy.test.ts keeps them
 * equal): a young generation of twice V8's default size, so that scavenges, each a pause of 2-4 ms on a small
 * machine, come half as often (claim p99 at 1,000 claims/s -28 %, docs/BENCHMARKS.md).
 */
export const NODE_FLAGS = ['--max-semi-space-size=32'];

/**
 * Starts `node --import tsx src/main.ts` on an ephemeral port, or with BENCH_COMPILED=1 the compiled build
 * (`node dist/main.js`, what production runs; `make build` first), with production's NODE_FLAGS. The caller's
 * environment passes through (ACTOR_THREADS, PG_POOL_SIZE…), and BENCH_CPU_PROF=<dir> adds --cpu-prof for every
 * thread of the node.
 */
export async function startServer(databaseUrl: string, reuse: { dataDir: string } | null = null): Promise<ServerProcess> {
  // A restart (scale) reuses the data directory of the node it replaces: its default key and JWT secret.
  const dataDir = reuse?.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-'));
  const compiled = process.env.BENCH_COMPILED === '1';
  if (compiled && !fs.existsSync(path.join(SERVER_ROOT, 'dist/main.js'))) throw new Error(`BENCH_COMPILED=1: no ${SERVER_ROOT}/dist/main.js (run make build)`);
  const args = [...(compiled ? [] : ['--import', 'tsx']), ...NODE_FLAGS];
  const profDir = process.env.BENCH_CPU_PROF;
  if (profDir) args.push('--cpu-prof', `--cpu-prof-dir=${path.resolve(profDir)}`);
  // BENCH_NODE_ARGS="--trace-gc …": flags for the node under test only (NODE_OPTIONS would reach the bench too).
  args.push(...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean));
  args.push(path.join(SERVER_ROOT, compiled ? 'dist/main.js' : 'src/main.ts'));
  const child = spawn(process.execPath, args, {
    cwd: SERVER_ROOT,
    // Its own process group, so a Ctrl-C meant for the bench reaches it only through our cleanup.
    detached: true,
    env: { ...process.env, ...UNLIMITED_FREE_PLAN, HOST: '127.0.0.1', PORT: '0', GRPC_PORT: '0', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', DATABASE_URL: databaseUrl, DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Whatever ends this process, the node must not outlive it (an orphan would skew every later run).
  const orphanGuard = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', orphanGuard);
  child.once('exit', () => process.off('exit', orphanGuard));
  let out = '';
  const [url, grpc] = await new Promise<[string, string]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not listen within 60 s:\n${out}`)), 60_000);
    const onData = (b: Buffer) => {
      // Keep only the head: the listening line and errors at boot are what matter.
      if (out.length < 64 * 1024) out += b.toString();
      const m = /listening on (http:\/\/\S+) .* and (\S+) \(gRPC\)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve([m[1]!, m[2]!]);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${out}`));
    });
  }).catch((err: unknown) => {
    orphanGuard();
    if (!reuse) fs.rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  // Later output (warnings, commit failures) goes to our stderr so a run that misbehaves says why.
  child.stdout!.on('data', (b: Buffer) => process.stderr.write(`[server] ${b}`));
  child.stderr!.on('data', (b: Buffer) => process.stderr.write(`[server] ${b}`));
  let key: string;
  try {
    key = fs.readFileSync(path.join(dataDir, 'default-api-key'), 'utf8').trim();
  } catch (err) {
    orphanGuard();
    throw err;
  }
  let stopped: Promise<void> | null = null;
  return {
    child,
    pid: child.pid!,
    url,
    grpc,
    key,
    dataDir,
    stop: () =>
      (stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise<void>((r) => child.once('exit', () => r()));
          child.kill('SIGTERM');
          // --cpu-prof writes its files on a clean exit; give it time, then stop waiting.
          const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
          await exited;
          clearTimeout(killer);
        }
        if (!reuse) fs.rmSync(dataDir, { recursive: true, force: true });
      })()),
  };
}

// --- HTTP client ---

export interface Reply<T = any> {
  status: number;
  body: T;
}

/**
 * A small JSON client on node:http with a keep-alive agent: one socket per request in flight, reused, so a
 * driver with N loops holds N connections like N workers would.
 */
export class Client {
  private readonly agent: http.Agent;
  private readonly host: string;
  private readonly port: number;
  private readonly auth: string;

  constructor(url: string, key: string, maxSockets: number) {
    const u = new URL(url);
    if (u.hostname !== '127.0.0.1' && u.hostname !== 'localhost') throw new Error(`bench traffic stays on 127.0.0.1, not ${u.hostname}`);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.auth = `Bearer ${key}`;
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  post<T = any>(p: string, body: unknown, timeoutMs = 60_000): Promise<Reply<T>> {
    return this.request<T>('POST', p, JSON.stringify(body), timeoutMs);
  }

  get<T = any>(p: string, timeoutMs = 60_000): Promise<Reply<T>> {
    return this.request<T>('GET', p, null, timeoutMs);
  }

  private request<T>(method: 'GET' | 'POST', p: string, data: string | null, timeoutMs: number): Promise<Reply<T>> {
    const headers: http.OutgoingHttpHeaders = { authorization: this.auth };
    if (data !== null) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
    return new Promise((resolve, reject) => {
      const req = http.request({ agent: this.agent, host: this.host, port: this.port, method, path: p, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            /* keep the text for the error message */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed as T });
        });
        res.on('error', reject);
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${p}: no answer in ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(data ?? undefined);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export function expectStatus(r: Reply, status: number, what: string): void {
  if (r.status !== status) throw new Error(`${what}: HTTP ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
}

/**
 * Enqueues `count` jobs with `concurrency` loops, for scenarios that need a full queue. Bounded by count and
 * by `maxMs`; returns how many went in.
 */
export async function prefill(
  client: Client,
  queue: string,
  count: number,
  concurrency: number,
  maxMs = 120_000,
  /** Jobs spread round-robin over this many concurrency keys; 0: no key. */
  keys = 0,
  /** In batches of 100, as the peer benchmark fills its queue (no concurrency keys then). */
  bulk = process.env.BENCH_PREFILL === 'bulk',
): Promise<number> {
  let next = 0;
  let done = 0;
  const deadline = now() + maxMs;
  const loop = async () => {
    while (next < count && now() < deadline) {
      next++;
      if (bulk && keys === 0) {
        const n = Math.min(100, count - next + 1);
        const r = await client.post('/api/v1/jobs/bulk', { jobs: Array.from({ length: n }, (_, k) => ({ queue_name: queue, payload: { n: next + k } })) });
        expectStatus(r, 200, 'prefill bulk');
        next += n - 1;
        done += n;
        continue;
      }
      const r = await client.post('/api/v1/jobs', { queue_name: queue, payload: { n: next }, ...(keys > 0 ? { concurrency_key: `k${next % keys}` } : {}) });
      expectStatus(r, 201, 'prefill enqueue');
      done++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return done;
}

// --- where the time goes: CPU, waiting for a CPU, and PostgreSQL commits ---
//
// CPU comes from /proc/<pid>/stat (server, every postgres process, this process), run-queue wait from
// /proc/<pid>/task/<tid>/schedstat (time a thread was ready but no core was free: on 2 cores shared by the
// node, PostgreSQL and the load generator this is where latency hides), and PostgreSQL's side from the
// transaction id and WAL position, which move exactly (pg_stat_* counters lag by up to a second).

const TICK = 100; // USER_HZ: /proc reports CPU time in 1/100 s on Linux

export function procTicks(pid: number | string): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces): utime is 14th, stime 15th overall.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]);
  } catch {
    return 0; // the process ended between listing and reading
  }
}

/** Nanoseconds the threads of a process spent runnable but not running. */
function runQueueNs(pid: number | string): number {
  let sum = 0;
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        sum += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
      } catch {
        /* thread gone */
      }
    }
  } catch {
    /* process gone */
  }
  return sum;
}

/**
 * The PostgreSQL processes that work for this run: the backends connected to our database and the shared
 * auxiliary processes (WAL writer, checkpointer…). Backends of other databases belong to whoever else uses
 * the server and are counted as "other".
 */
export function postgresPids(database: string): string[] {
  const pids: string[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (!fs.readFileSync(`/proc/${d}/comm`, 'utf8').trim().startsWith('postgres')) continue;
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8');
      // A client backend names its database and peer ("db 127.0.0.1(5432)" or "[local]"); others do not.
      const backend = /\(\d+\)|\[local\]/.test(cmd);
      if (!backend || cmd.includes(` ${database} `)) pids.push(d);
    } catch {
      /* gone */
    }
  }
  return pids;
}

/** Busy ticks of the whole machine (all cores), from /proc/stat. */
function machineBusyTicks(): number {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal …: busy is everything but idle and iowait.
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return total - f[3]! - f[4]!;
}

/**
 * CPU used by everything that is not this bench, its node or PostgreSQL, in % of one core over `ms`. The
 * machine may be shared (other test runs, other benches); a busy neighbour makes every number here worse.
 */
export async function otherLoad(ms: number, serverPid: number | null, database: string | null): Promise<number> {
  const ours = () => {
    const u = process.cpuUsage();
    let t = ((u.user + u.system) / 1e6) * TICK;
    if (serverPid !== null) t += procTicks(serverPid);
    if (database !== null) t += postgresPids(database).reduce((sum, p) => sum + procTicks(p), 0);
    return t;
  };
  const m0 = machineBusyTicks();
  const o0 = ours();
  await sleep(ms);
  return ((machineBusyTicks() - m0 - (ours() - o0)) / TICK / (ms / 1000)) * 100;
}

/** Per-thread CPU of the server: the main (HTTP) thread apart from the actor threads and helpers. */
function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      let name = 'thread';
      try {
        name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      } catch {
        continue;
      }
      out.set(Number(tid) === pid ? 'main' : `${name}#${tid}`, procTicks(`${pid}/task/${tid}`));
    }
  } catch {
    /* server gone */
  }
  return out;
}

interface Sample {
  at: number;
  server: number;
  postgres: number;
  bench: number;
  serverWaitNs: number;
  postgresWaitNs: number;
  benchWaitNs: number;
  machine: number;
  threads: Map<string, number>;
  xid: bigint;
  lsn: string;
}

export interface Usage {
  seconds: number;
  /** Percent of one core, averaged over the interval (the machine has nproc × 100 %). */
  server: number;
  postgres: number;
  bench: number;
  /** Percent of wall time that some thread of each spent ready to run but without a core (summed over threads). */
  serverWait: number;
  postgresWait: number;
  benchWait: number;
  /** Everything else on the machine (a shared machine's neighbours), % of one core. */
  other: number;
  threads: Array<[string, number]>;
  /** Write transactions PostgreSQL committed (every journal group is one). */
  commits: number;
  walBytes: number;
}

/** Measures one interval: mark() at its start (synchronous, so it can sit in a timed loop), read() at its end. */
export class Meter {
  private first: Promise<Sample> | null = null;

  constructor(
    private readonly serverPid: number,
    private readonly db: pg.Client,
    private readonly database: string,
  ) {}

  mark(): void {
    this.first = this.sample();
    this.first.catch(() => {});
  }

  async read(): Promise<Usage> {
    // Never marked (the run ended before its warm-up did): an empty interval rather than a crash.
    if (!this.first) this.mark();
    const b = await this.sample();
    const a = await this.first!;
    const secs = (b.at - a.at) / 1000;
    const pct = (ticks: number) => (ticks / TICK / secs) * 100;
    const waitPct = (ns: number) => (ns / 1e9 / secs) * 100;
    const threads: Array<[string, number]> = [];
    for (const [k, v] of b.threads) {
      const p = pct(v - (a.threads.get(k) ?? 0));
      if (p >= 1) threads.push([k, p]);
    }
    threads.sort((x, y) => y[1] - x[1]);
    const lsn = await this.db.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS d', [b.lsn, a.lsn]);
    return {
      seconds: secs,
      server: pct(b.server - a.server),
      postgres: pct(b.postgres - a.postgres),
      bench: pct(b.bench - a.bench),
      serverWait: waitPct(b.serverWaitNs - a.serverWaitNs),
      postgresWait: waitPct(b.postgresWaitNs - a.postgresWaitNs),
      benchWait: waitPct(b.benchWaitNs - a.benchWaitNs),
      other: Math.max(0, pct(b.machine - a.machine - (b.server - a.server) - (b.postgres - a.postgres) - (b.bench - a.bench))),
      threads,
      // Minus one: the sample itself takes a transaction id.
      commits: Number(b.xid - a.xid) - 1,
      walBytes: Number(lsn.rows[0]!.d),
    };
  }

  private async sample(): Promise<Sample> {
    const u = process.cpuUsage();
    const pgPids = postgresPids(this.database);
    const s = {
      at: now(),
      server: procTicks(this.serverPid),
      postgres: pgPids.reduce((sum, p) => sum + procTicks(p), 0),
      bench: ((u.user + u.system) / 1e6) * TICK,
      serverWaitNs: runQueueNs(this.serverPid),
      postgresWaitNs: pgPids.reduce((sum, p) => sum + runQueueNs(p), 0),
      benchWaitNs: runQueueNs(process.pid),
      machine: machineBusyTicks(),
      threads: threadTicks(this.serverPid),
    };
    // txid_current() assigns an id, so consecutive samples differ by the write transactions between them plus one.
    const r = await this.db.query<{ xid: string; lsn: string }>('SELECT txid_current()::text AS xid, pg_current_wal_lsn()::text AS lsn');
    return { ...s, xid: BigInt(r.rows[0]!.xid), lsn: r.rows[0]!.lsn };
  }
}

/**
 * The rows every scenario adds: CPU split, run-queue wait, and PostgreSQL commits per second with the
 * state-changing requests (enqueue, claim, complete) each commit carried on average.
 */
export function usageRows(scenario: string, u: Usage, writeRequests: number): Row[] {
  const top = u.threads
    .slice(0, 3)
    .map(([k, v]) => `${k.replace(/#\d+$/, '')} ${fmt(v)}`)
    .join(', ');
  const row = (metric: string, value: string): Row => ({ scenario, metric, value, target: '', met: null });
  return [
    row(
      'CPU, % of one core: server / postgres / bench / other processes',
      `${fmt(u.server)} / ${fmt(u.postgres)} / ${fmt(u.bench)} / ${fmt(u.other)} (busiest server threads: ${top})`,
    ),
    row('waiting for a core, % of wall: server / postgres / bench', `${fmt(u.serverWait)} / ${fmt(u.postgresWait)} / ${fmt(u.benchWait)}`),
    row(
      'PostgreSQL commits/s · write requests per commit · WAL bytes per request',
      `${fmt(u.commits / u.seconds)} · ${fmt(writeRequests / Math.max(1, u.commits), 1)} · ${fmt(u.walBytes / Math.max(1, writeRequests))}`,
    ),
  ];
}

/** A group commit's record of one new job, for the benchmarks of commitBatch alone (commit-fence, fence-cost). */
export function jobInsert(org: string, queue: string): JournalRecord {
  const now = Date.now();
  return {
    kind: 'insert',
    conflictKey: false,
    job: {
      id: randomUUID(), organization_id: org, queue_name: queue, status: 'pending', payload: { n: 1 }, result: null, priority: 0,
      retry_count: 0, max_retries: 3, last_error: null, errors: [], tags: {}, idempotency_key: null, timeout_seconds: 300,
      scheduled_at: null, created_at: now, started_at: null, completed_at: null, updated_at: now, assigned_worker_id: null,
      lease_id: null, lease_expires_at: null, workflow_id: null, dependencies_met: true, completion_webhook: null,
      completion_webhook_secret: null, concurrency_key: null, idempotency_expires_at: null, debounce_key: null, debounce_until: null,
    },
  };
}
