// `make bench`: runs the load scenarios against a Sluice node on PostgreSQL and prints a markdown table.
//
//   node --import tsx bench/run.ts [enqueue|enqueueBatch|cycle|cycle10|cycleAck|cycleKeys|e2e|claim|sdkWorker|scale|keyFlood ...]   (default: all, in this order)
//
// Each scenario gets a fresh database and a fresh node in a child process, so one scenario's leftover
// jobs (scenario 1 leaves ~100k pending) do not slow the next. Environment: BENCH_SECONDS (measured
// seconds per scenario, default 10), BENCH_CYCLE_JOBS (pre-fill for scenario 2), BENCH_QUIET_PCT (below),
// BENCH_PG_ADMIN_URL, BENCH_PG_SETTINGS, BENCH_SERVER_ROOT, BENCH_NODE_ARGS, BENCH_TRACE, BENCH_CPU_PROF
// (see lib.ts); BENCH_REPEAT=n runs each scenario n times on the same node (the later runs on a node warmed by the
// first: a fresh node's first seconds are slower, docs/BENCHMARKS.md), and with BENCH_RESTART=1 on a new node
// started on the same database (what is new then is the process alone, not the database); anything else, such as
// ACTOR_THREADS or PG_POOL_SIZE, passes through to the node.
// docs/BENCHMARKS.md has the results and what limits them.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { claimLatency } from './claim-latency.js';
import { cycle, cycle10, cycleAck, cycleKeys } from './cycle.js';
import { e2e } from './e2e.js';
import { scale } from './scale.js';
import { sdkWorker } from './sdk-worker.js';
import { enqueue, enqueueBatch } from './enqueue.js';
import { keyFlood } from './key-flood.js';
import { freshDatabase, Meter, otherLoad, SERVER_ROOT, startServer, type Row, type Scenario } from './lib.js';

const SCENARIOS: Record<string, Scenario> = { enqueue, enqueueBatch, cycle, cycle10, cycleAck, cycleKeys, e2e, claim: claimLatency, sdkWorker, scale, keyFlood };

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

// Ctrl-C, a kill or a closed pipe (`| head`) end the run through the same clean-up as success: the node
// stops (the exit hook in lib.ts kills it if it hangs) and the database is dropped.
let cleanup: (() => Promise<void>) | null = null;
let exiting = false;
const abort = (why: string) => {
  if (exiting) return;
  exiting = true;
  log(`${why}: cleaning up`);
  const done = () => process.exit(130);
  (cleanup ? cleanup() : Promise.resolve()).then(done, done);
  setTimeout(done, 30_000).unref();
};
process.on('SIGINT', () => abort('SIGINT'));
process.on('SIGTERM', () => abort('SIGTERM'));
process.stdout.on('error', () => abort('stdout closed'));
process.stderr.on('error', () => abort('stderr closed'));

/** The engine revision measured, and whether its src/ differs from it (a snapshot may carry a REVISION file). */
function revision(): string {
  const file = path.join(SERVER_ROOT, 'REVISION');
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  try {
    const rev = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: SERVER_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: SERVER_ROOT, encoding: 'utf8' }).trim() !== '';
    return `${rev}${dirty ? ' with uncommitted changes in src/' : ''}`;
  } catch {
    return `not a git checkout: ${SERVER_ROOT}`;
  }
}

function pgVersion(): string {
  try {
    return execFileSync('psql', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

async function runOne(name: string, scenario: Scenario): Promise<Row[]> {
  const db = await freshDatabase();
  let server: Awaited<ReturnType<typeof startServer>> | null = null;
  const monitor = new pg.Client(db.url);
  cleanup = async () => {
    await monitor.end().catch(() => {});
    await server?.stop();
    await db.drop();
  };
  try {
    server = await startServer(db.url);
    await monitor.connect();
    log(`${name}: node at ${server.url} (pid ${server.pid})`);
    await waitForQuiet(name, server.pid, db.name);
    const rows: Row[] = [];
    const repeat = Math.max(1, Number(process.env.BENCH_REPEAT ?? 1));
    const restart = process.env.BENCH_RESTART === '1';
    // A restart keeps the first node's default key (its own data directory goes when it stops).
    const dataDir = restart ? fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-repeat-')) : null;
    if (dataDir) fs.cpSync(server.dataDir, dataDir, { recursive: true });
    try {
      for (let i = 0; i < repeat; i++) {
        if (i > 0 && dataDir) {
          await server.stop();
          server = await startServer(db.url, { dataDir });
          await waitForQuiet(name, server.pid, db.name);
        }
        const s = server;
        const got = await scenario({ url: s.url, key: s.key, server: s, databaseUrl: db.url, meter: () => new Meter(s.pid, monitor, db.name), log });
        const label = dataDir ? 'on a new node, same database' : 'on the same node';
        rows.push(...got.map((r) => (i === 0 ? r : { ...r, scenario: `${r.scenario} (run ${i + 1} ${label})` })));
      }
    } finally {
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    }
    return rows;
  } finally {
    const c = cleanup;
    cleanup = null;
    await c();
  }
}

/**
 * On a shared machine another job's load would be measured as ours: wait (up to a minute) until everything
 * else uses less than a fifth of a core, then go on regardless; the "other processes" column tells.
 */
async function waitForQuiet(name: string, serverPid: number, database: string): Promise<void> {
  const limit = Number(process.env.BENCH_QUIET_PCT ?? 20);
  for (let i = 0; i < 30; i++) {
    const other = await otherLoad(2_000, serverPid, database);
    if (other < limit) return;
    if (i === 0) log(`${name}: other processes use ${other.toFixed(0)}% of a core; waiting for a quieter machine (up to 60 s)`);
  }
  log(`${name}: the machine stayed busy; measuring anyway (see the "other processes" CPU)`);
}

function table(rows: Row[]): string {
  const lines = ['| Scenario | Metric | Result | Target | Met |', '|---|---|---|---|---|'];
  for (const r of rows) {
    const met = r.met === null ? '' : r.met ? 'met' : '**not met**';
    lines.push(`| ${r.scenario} | ${r.metric} | ${r.value} | ${r.target} | ${met} |`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const names = process.argv.slice(2);
  for (const n of names) {
    if (!(n in SCENARIOS)) throw new Error(`unknown scenario ${n}; choose from ${Object.keys(SCENARIOS).join(', ')}`);
  }
  const selected = names.length > 0 ? names : Object.keys(SCENARIOS);
  log(`engine ${revision()}; ${os.availableParallelism()} cores, Node ${process.version}, ${pgVersion()}, ACTOR_THREADS=${process.env.ACTOR_THREADS ?? 'default (cores)'}`);
  const rows: Row[] = [];
  for (const name of selected) {
    try {
      rows.push(...(await runOne(name, SCENARIOS[name]!)));
    } catch (err) {
      log(`${name} failed: ${(err as Error).stack ?? err}`);
      rows.push({ scenario: name, metric: 'error', value: (err as Error).message.split('\n')[0]!, target: '', met: false });
    }
  }
  process.stdout.write(`\n${table(rows)}\n`);
}

await main();
