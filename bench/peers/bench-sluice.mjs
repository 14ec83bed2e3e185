// Sluice, driven over HTTP with the same workload as the peers (lib/common.mjs). Each run starts one Sluice node
// (the project checkout named by BENCH_SLUICE_ROOT) on a fresh PostgreSQL database and drives it from this process
// with undici keep-alive pools. The peers run in-process as libraries; Sluice pays HTTP, auth and JSON on top:
// that is the comparison a user makes when choosing a hosted queue over a library.
//
// Variants (process and latency): claim1 = 50 loops of claim(limit 1) -> handler -> complete;
// batch = 5 loops of long-poll claim(limit 10) -> 10 handlers -> 10 completes in parallel (what an SDK worker
// with prefetch would do); ack = 5 loops of long-poll claim(limit 10) -> 10 handlers -> one batch
// acknowledgement (POST /api/v1/jobs/complete); ackclaim = the same, each acknowledgement also claiming the next
// 10 (its `claim` field), a long poll only when that comes back empty; grpc = one QueueService.ProcessJobs stream keeping 50 jobs
// asked for, each completed on the stream; sdk / sdk-grpc = the TypeScript SDK's Worker (concurrency 50) over
// REST / gRPC, from the checkout's clients/typescript/dist (run `make sdk` there first). Enqueue scenarios
// ignore the variant.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Pool } from 'undici';
import { args, emit, runEnqueue, runProcess, runLatency, WORKLOAD, sleep, waitFor } from './lib/common.mjs';

// Worker shapes: add one here for every new way of working (batch ack, gRPC stream, SDK worker).
const SHAPES = {
  claim1: { loops: 50, limit: 1, waitMs: 0 },
  batch: { loops: 5, limit: 10, waitMs: 1000 },
  ack: { loops: 5, limit: 10, waitMs: 1000, ack: true },
  ackclaim: { loops: 5, limit: 10, waitMs: 1000, ack: true, claimOnAck: true },
  grpc: { grpc: true, concurrency: 50 },
  sdk: { sdk: 'http', concurrency: 50 },
  'sdk-grpc': { sdk: 'grpc', concurrency: 50 },
  // the SDK worker with its prefetch option (jobs claimed ahead of the free slots; SDKs without it ignore it)
  'sdk-prefetch': { sdk: 'http', concurrency: 50, prefetch: 50 },
  'sdk-grpc-prefetch': { sdk: 'grpc', concurrency: 50, prefetch: 50 },
  // as graphile-worker's `batched` variant holds jobs (localQueue.size 500): 50 running and 450 ahead
  'sdk-batched': { sdk: 'http', concurrency: 50, prefetch: 450 },
  'sdk-grpc-batched': { sdk: 'grpc', concurrency: 50, prefetch: 450 },
};
if (process.argv.includes('--variants')) { console.log(Object.keys(SHAPES).join(' ')); process.exit(0); }
const { scenario, variant, run: runNo } = args();
const ROOT = process.env.BENCH_SLUICE_ROOT;
if (!ROOT) throw new Error('set BENCH_SLUICE_ROOT to the Sluice checkout');
const PG = process.env.BENCH_SLUICE_PG || 'postgres://postgres@127.0.0.1:5432';
const ADMIN = 'bench-admin-key-0123456789';
const db = `sluice_bench_${crypto.randomBytes(3).toString('hex')}`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-'));
let child;

function cleanup() {
  try { if (child) process.kill(-child.pid, 'SIGKILL'); } catch {}
  try { execFileSync('psql', [`${PG}/postgres`, '-qc', `drop database if exists ${db}`], { stdio: 'ignore' }); } catch {}
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.on('exit', cleanup);

const freePort = () => new Promise((res, rej) => {
  const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); s.on('error', rej);
});

let pool, auth, grpcAddress, baseUrl;
async function call(method, p, body) {
  const r = await pool.request({ method, path: p, headers: { ...auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.body.text();
  if (r.statusCode >= 300) throw new Error(`${method} ${p} -> ${r.statusCode} ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : null;
}

async function start(again = false) {
  if (!again) execFileSync('psql', [`${PG}/postgres`, '-qc', `create database ${db}`]);
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), GRPC_PORT: String(await freePort()), HOST: '127.0.0.1', DATA_DIR: tmp,
    DATABASE_URL: `${PG}/${db}`, JWT_SECRET: crypto.randomBytes(32).toString('hex'), ADMIN_API_KEY: ADMIN, REGISTRATION_MODE: 'open' };
  for (const k of Object.keys(env)) if (k.startsWith('PLAN_') || k.startsWith('BENCH_')) delete env[k];
  const log = fs.openSync(path.join(tmp, 'server.log'), 'a');
  // BENCH_SLUICE_COMPILED=1 runs the compiled build (`make build` in ROOT first), as production does.
  const entry = process.env.BENCH_SLUICE_COMPILED === '1' ? ['dist/main.js'] : ['--import', 'tsx', 'src/main.ts'];
  child = spawn(process.execPath, entry, { cwd: ROOT, env, detached: true, stdio: ['ignore', log, log] });
  grpcAddress = `127.0.0.1:${env.GRPC_PORT}`;
  baseUrl = `http://127.0.0.1:${port}`;
  pool = new Pool(`http://127.0.0.1:${port}`, { connections: 128, pipelining: 1 });
  for (let i = 0; i < 240; i++) {
    try { const r = await pool.request({ method: 'GET', path: '/health/ready' }); await r.body.text(); if (r.statusCode === 200) break; } catch {}
    await sleep(250);
  }
  // the operator's own organization, created at first boot: enterprise, no rate limit (a benchmark measures the engine)
  const keyFile = path.join(tmp, 'default-api-key');
  const m = fs.existsSync(keyFile) && /svc_(?:live|test)_[A-Za-z0-9_-]+/.exec(fs.readFileSync(keyFile, 'utf8'));
  if (!m) throw new Error(`no key in DATA_DIR; log: ${fs.readFileSync(path.join(tmp, 'server.log'), 'utf8').slice(-500)}`);
  auth = { authorization: `Bearer ${m[0]}` };
}

// The queue of the pass (BENCH_PASSES): each pass has its own, so that its counts are its own.
let Q = 'bench';
const addOne = (i) => call('POST', '/api/v1/jobs', { queue_name: Q, payload: { n: i } });
const addBatch = (is) => call('POST', '/api/v1/jobs/bulk', { jobs: is.map((i) => ({ queue_name: Q, payload: { n: i } })) });
async function preEnqueue(n) {
  const B = 100;
  let next = 0;
  await Promise.all(Array.from({ length: 10 }, async () => {
    for (;;) { const b = next++; if (b * B >= n) return; await addBatch(Array.from({ length: Math.min(B, n - b * B) }, (_, k) => b * B + k)); }
  }));
}
const counts = async () => {
  const s = await call('GET', `/api/v1/jobs/stats?queue_name=${Q}`);
  const flat = JSON.stringify(s);
  const num = (k) => Number((new RegExp(`"${k}":(\\d+)`).exec(flat) || [])[1] || 0);
  return { pending: num('pending'), processing: num('processing'), completed: num('completed') };
};

// A worker of `loops` loops, each claiming up to `limit` jobs (long poll when waitMs), running `handler(job)` for each
// and completing them in parallel. Returns stop().
function startWorkers(shape) {
  if (shape.grpc) return startGrpcWorker(shape);
  if (shape.sdk) return startSdkWorker(shape);
  const { loops, limit, waitMs, handler, ack } = shape;
  let stopped = false;
  const all = Array.from({ length: loops }, async (_, w) => {
    const worker_id = `w${w}`;
    while (!stopped) {
      let jobs;
      try { jobs = (await call('POST', '/api/v1/jobs/claim', { queue_name: Q, worker_id, limit, ...(waitMs ? { wait_ms: waitMs } : {}) })).jobs; }
      catch { await sleep(5); continue; }
      if (!jobs.length) { if (!waitMs) await sleep(5); continue; }
      if (ack) {
        // ackclaim: each acknowledgement also claims the next jobs, until one comes back empty (then a long poll).
        while (jobs.length > 0) {
          for (const job of jobs) handler(job);
          const r = await call('POST', '/api/v1/jobs/complete', {
            worker_id, jobs: jobs.map((job) => ({ id: job.id, lease_id: job.lease_id, result: { ok: true } })),
            ...(shape.claimOnAck && !stopped ? { claim: { queue_name: Q, limit } } : {}),
          });
          jobs = r.jobs ?? [];
        }
        continue;
      }
      await Promise.all(jobs.map(async (job) => {
        handler(job);
        await call('POST', `/api/v1/jobs/${job.id}/complete`, { worker_id, lease_id: job.lease_id, result: { ok: true } });
      }));
    }
  });
  return async () => { stopped = true; await Promise.race([Promise.all(all), sleep(3000)]); };
}
/**
 * One ProcessJobs stream, as a gRPC worker would run it: it keeps `concurrency` jobs asked for (claims add up on
 * the service), completes each on the stream, and asks for more as completions free slots (in tens, so that a
 * claim message carries more than one job).
 */
function startGrpcWorker({ concurrency, handler }) {
  const req = createRequire(path.join(ROOT, 'package.json'));
  const grpc = req('@grpc/grpc-js');
  const loader = req('@grpc/proto-loader');
  const def = loader.loadSync(path.join(ROOT, 'proto/queue/v1/queue.proto'), { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true });
  const { QueueService } = grpc.loadPackageDefinition(def).queue.v1;
  const client = new QueueService(grpcAddress, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set('x-api-key', auth.authorization.slice('Bearer '.length));
  const stream = client.ProcessJobs(md);
  let ref = 0;
  let free = 0;
  const ask = (n) => stream.write({ ref: String(ref++), claim: { queueName: Q, workerId: 'g1', batchSize: n } });
  stream.on('data', (m) => {
    if (m.job) {
      handler(m.job);
      stream.write({ ref: String(ref++), complete: { jobId: m.job.id, workerId: 'g1', leaseId: m.job.leaseId, result: { fields: { ok: { boolValue: true } } } } });
    } else if (m.ack && m.ack.complete !== undefined) {
      if (++free >= 10) { ask(free); free = 0; }
    }
  });
  stream.on('error', () => {});
  ask(concurrency);
  return async () => { stream.cancel(); client.close(); };
}

/** The SDK's Worker, the way a user writes one. */
async function startSdkWorker({ sdk, concurrency, prefetch, handler }) {
  // BENCH_SLUICE_SDK: another SDK build (its dist/index.js) against this node, to compare SDKs on one server build.
  const { SluiceClient, Worker } = await import(pathToFileURL(process.env.BENCH_SLUICE_SDK || path.join(ROOT, 'clients/typescript/dist/index.js')).href);
  const client = new SluiceClient({ url: baseUrl, apiKey: auth.authorization.slice('Bearer '.length) });
  const worker = new Worker(client, Q, async (job) => { handler(job); return { ok: true }; }, { concurrency, transport: sdk, grpc: { address: grpcAddress }, ...(prefetch ? { prefetch } : {}) });
  return async () => { await worker.close({ graceMs: 1000 }).catch(() => {}); };
}

const shape = SHAPES[variant === 'default' ? 'claim1' : variant];
if (!shape) throw new Error(`unknown variant ${variant}`);

// BENCH_PASSES=n runs the scenario n times on one node (each pass on a queue of its own, 1.5 s apart): a fresh
// node's first seconds cost more than a warm node's (docs/BENCHMARKS.md). BENCH_PASS_RESTART=1 starts a new node on
// the same database for each later pass instead.
const PASSES = Number(process.env.BENCH_PASSES ?? 1);
async function main() {
  await start();
  for (let pass = 1; pass <= PASSES; pass++) {
    if (pass > 1) {
      if (process.env.BENCH_PASS_RESTART === '1') {
        await stopNode();
        await pool.close();
        await start(true);
      } else await sleep(1500);
      Q = `bench-${pass}`;
    }
    await runPass(PASSES > 1 ? { pass, restarted: pass > 1 && process.env.BENCH_PASS_RESTART === '1' } : {});
  }
}

async function runPass(passInfo) {
  const base = { lib: 'sluice', version: JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version,
    commit: execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']).toString().trim(), driver: shape.grpc || shape.sdk === 'grpc' ? 'gRPC' : 'undici HTTP', backend: 'postgres', scenario, variant, run: runNo };
  let result, stop;
  if (scenario === 'enqueue-single' || scenario === 'enqueue-batch') {
    result = await runEnqueue({ mode: scenario === 'enqueue-single' ? 'single' : 'batch', addOne, addBatch });
  } else if (scenario === 'process') {
    await preEnqueue(WORKLOAD.processJobs);
    try { execFileSync('psql', [`${PG}/${db}`, '-qc', 'checkpoint'], { stdio: 'ignore' }); } catch {}
    result = await runProcess({
      startWorker: async ({ onStart, onEnd }) => { stop = await startWorkers({ ...shape, handler: () => { onStart(); onEnd(); } }); },
      allDone: () => waitFor(async () => (await counts()).completed >= WORKLOAD.processJobs, 50),
      completedCount: async () => (await counts()).completed,
      stopWorker: () => stop(),
    });
  } else if (scenario === 'latency') {
    // the latency worker always long-polls (a claim1 worker that sleeps between empty claims measures its sleep)
    const lat = { ...shape, waitMs: 1000 };
    result = await runLatency({
      startWorker: async ({ onStart }) => { stop = await startWorkers({ ...lat, handler: (job) => onStart(job.payload.n) }); },
      send: (i) => addOne(i),
    });
  } else throw new Error(`unknown scenario ${scenario}`);
  if (stop) await stop();
  emit({ ...base, ...passInfo, settings: { shape, server: `one node, ACTOR_THREADS default, ${process.env.BENCH_SLUICE_COMPILED === '1' ? 'compiled' : 'tsx'}` } }, result);
}

// The node is killed and awaited before this process exits, so it never outlives the run as an orphan.
async function stopNode() {
  if (!child || child.exitCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  try { process.kill(-child.pid, 'SIGKILL'); } catch {}
  await Promise.race([gone, sleep(5000)]);
}
main().then(async () => { await stopNode(); process.exit(0); }).catch(async (e) => { console.error(e); await stopNode(); process.exit(1); });
