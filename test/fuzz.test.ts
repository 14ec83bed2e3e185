// Hostile-input fuzz over every operation of the OpenAPI document the node serves: bodies generated from each
// route's schema, then mutated (NUL and lone surrogates, 5,000-deep nesting, 100,000-item arrays, megabyte
// strings, wrong types, prototype keys, bodies that are not JSON, path and query values that are not what they
// should be, missing or strange credentials). Bounded and seeded (FUZZ_SEED repeats a run; FUZZ_REQUESTS sizes
// it). Asserts: no 5xx other than 503; every error in the catalog's shape; the node answers /health/live within
// 100 ms during the run and after. The node runs in a child process, and the liveness probe in a thread of its
// own, so neither the fuzzer's work nor its event loop is counted as the node's.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { CATALOG } from '../src/errors.js';
import { Api, freePort, freshStore, spawnNode, type StoreLocation } from './helpers.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 2500);
const CONCURRENCY = 8;
const ADMIN = 'admin-key-for-the-fuzz-test';

/** mulberry32: small, seedable, good enough to pick shapes. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = rng(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
const chance = (p: number) => random() < p;
const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));

const HOSTILE_STRINGS = ['a\u0000b', '\u0000', 'x\ud800', '\udfff', '\ud800\ud800', '', ' ', '\u202e', '😀'.repeat(10), "'; DROP TABLE jobs; --", '../../etc/passwd', '%00', '\\', '"', '${jndi:x}', '__proto__'];
const BIG_STRING = 'x'.repeat(1_100_000);
const DEEP_TEXT = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
const BRACKETS = '['.repeat(1_500_000);
const RAW_BODIES = ['{', 'null', '[]', '"text"', '1e999', 'true', '\u0000', '{"a":1}{"b":2}', '\xff\xfe', '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}'];

/** Plausible values by field name, so that some requests get past validation and reach the actors and the store. */
const PLAUSIBLE: Record<string, () => unknown> = {
  queue_name: () => pick(['fuzz', 'fuzz-2', 'f.q_3']),
  name: () => pick(['fuzz', `n-${int(0, 999)}`]),
  worker_id: () => pick(['fw1', 'fw2']),
  cron_expression: () => pick(['0 * * * * *', '*/5 * * * * *', 'bad cron']),
  timezone: () => pick(['UTC', 'Europe/Paris', 'Mars/Base']),
  url: () => pick(['http://127.0.0.1:9/hook', 'https://example.com/x', 'ftp://x', 'http://[::1]:9/']),
  completion_webhook: () => 'http://127.0.0.1:9/cb',
  email: () => pick(['a@b.co', 'not-an-email']),
  owner_email: () => 'owner@example.com',
  slug: () => `fz-${int(0, 99999)}`,
  scheduled_at: () => pick([new Date(Date.now() + int(-5000, 5000)).toISOString(), '2030-02-30T00:00:00Z', 'soon']),
  older_than: () => new Date().toISOString(),
  events: () => [pick(['job.created', 'job.completed', 'queue.paused'])],
  permissions: () => [pick(['jobs:read', 'jobs:write', '*', 'dlq:read'])],
  confirm: () => true,
  plan: () => pick(['free', 'starter', 'pro', 'enterprise']),
  // Long polls would hold a slot of the fuzzer for up to 30 s each.
  wait_ms: () => int(0, 20),
};

function generate(schema: any, field: string, depth: number): unknown {
  if (!schema || typeof schema !== 'object') return null;
  if (PLAUSIBLE[field] && chance(0.7)) return PLAUSIBLE[field]!();
  const branches = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(branches)) return generate(pick(branches), field, depth);
  if (Array.isArray(schema.allOf)) return Object.assign({}, ...schema.allOf.map((s: unknown) => generate(s, field, depth)));
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return pick(schema.enum);
  switch (schema.type) {
    case 'object': {
      if (depth > 4) return {};
      const out: Record<string, unknown> = {};
      const required = new Set<string>(schema.required ?? []);
      for (const [k, sub] of Object.entries<any>(schema.properties ?? {})) if (required.has(k) || chance(0.5)) out[k] = generate(sub, k, depth + 1);
      if (!schema.properties || chance(0.1)) out[`k${int(0, 9)}`] = pick([1, 'v', null, { n: 1 }, [1, 2]]);
      return out;
    }
    case 'array': {
      const n = int(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, 3));
      return Array.from({ length: n }, () => generate(schema.items ?? {}, field, depth + 1));
    }
    case 'string':
      if (schema.format === 'uuid' || /0-9a-fA-F\]\{8\}/.test(schema.pattern ?? '')) return randomUUID();
      if (schema.format === 'date-time') return new Date().toISOString();
      return pick(['fuzz', `s${int(0, 1e6)}`, 'x'.repeat(int(1, 40))]);
    case 'integer':
      return int(schema.minimum ?? -5, Math.min(schema.maximum ?? 1000, (schema.minimum ?? -5) + 1000));
    case 'number':
      return random() * 100;
    case 'boolean':
      return chance(0.5);
    case 'null':
      return null;
    default:
      return pick([{ n: int(0, 9) }, 'free', 7, null, [1]]);
  }
}

/** Every leaf path of a value, to aim a mutation at. */
function leaves(v: unknown, at: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  if (v !== null && typeof v === 'object') {
    const entries = Array.isArray(v) ? v.map((x, i) => [i, x] as const) : Object.entries(v);
    if (entries.length === 0) out.push(at);
    for (const [k, x] of entries) leaves(x, [...at, k], out);
  } else out.push(at);
  return out;
}

function setAt(root: unknown, at: Array<string | number>, value: unknown): unknown {
  if (at.length === 0) return value;
  let o = root as Record<string | number, unknown>;
  for (const k of at.slice(0, -1)) o = o[k] as Record<string | number, unknown>;
  o[at[at.length - 1]!] = value;
  return root;
}

/** A body for the schema, mutated one way or another about half the time; a string is sent as it is. */
function body(schema: any): { text: string | undefined; heavy: boolean } {
  let value = schema ? generate(schema, '', 0) : undefined;
  if (chance(0.45)) {
    const m = int(0, 9);
    if (m === 0) return { text: pick(RAW_BODIES), heavy: false };
    if (m === 1 && chance(0.3)) return { text: pick([DEEP_TEXT, BRACKETS, `{"payload":${DEEP_TEXT}}`]), heavy: true };
    const target = value !== null && typeof value === 'object' ? pick(leaves(value)) : [];
    if (m === 2 && chance(0.3)) return { text: JSON.stringify(setAt(value ?? {}, target, Array.from({ length: 100_000 }, (_, i) => i % 7 ? 'jobs:read' : i))), heavy: true };
    if (m === 3 && chance(0.3)) return { text: JSON.stringify(setAt(value ?? {}, target, BIG_STRING)), heavy: true };
    if (m <= 5) value = setAt(value ?? {}, target, pick(HOSTILE_STRINGS));
    else if (m === 6) value = setAt(value ?? {}, target, pick([-1, 1e308, 2 ** 53 + 1, -0, 0.5, true, [], {}, null, 'NaN']));
    else if (m === 7) value = setAt(value ?? {}, target, JSON.parse(`${'{"a":'.repeat(70)}1${'}'.repeat(70)}`));
    else if (m === 8 && value && typeof value === 'object') Object.assign(value, { ['__proto__']: { admin: true } });
    else if (m === 9) value = Array.isArray(value) ? { value } : [value];
  }
  return { text: value === undefined ? undefined : JSON.stringify(value), heavy: false };
}

const PATH_VALUES = () => [randomUUID(), 'x', '%00', 'a%00b', '%ED%A0%80', '..%2F..%2Fetc', '😀', 'A'.repeat(3000), '%', '%zz', 'null'];

interface Op {
  method: string;
  path: string;
  body: unknown;
  query: Array<{ name: string; schema: any }>;
}

let store: StoreLocation;
let child: Awaited<ReturnType<typeof spawnNode>>;
let api: Api;
before(async () => {
  store = await freshStore();
  child = await spawnNode({ ...store.env, PORT: String(await freePort()), ADMIN_API_KEY: ADMIN, REGISTRATION_MODE: 'open' });
  api = new Api(child.url, fs.readFileSync(path.join(store.env.DATA_DIR!, 'default-api-key'), 'utf8').trim());
});
after(async () => {
  child.child.kill('SIGTERM');
  await new Promise((r) => (child.child.exitCode !== null ? r(null) : child.child.once('exit', r)));
  await store.dispose();
});

/** GET /health/live every 50 ms from a thread of its own; resolves with [start (epoch ms), latency] of each. */
/** Sets this thread's nice value; false where the system refuses (raising a priority back needs the privilege). */
function setNice(value: number): boolean {
  try {
    os.setPriority(value);
    return true;
  } catch {
    return false;
  }
}

function livenessProbe(url: string): { stop(): Promise<Array<[number, number]>> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const latencies = []; let running = true;
     parentPort.on('message', () => { running = false; });
     (async () => {
       while (running) {
         const t = performance.now();
         try { const r = await fetch(workerData + '/health/live'); await r.text(); latencies.push([Date.now() - (performance.now() - t), r.status === 200 ? performance.now() - t : Infinity]); }
         catch { latencies.push([Date.now(), Infinity]); }
         await new Promise((r) => setTimeout(r, 50));
       }
       parentPort.postMessage(latencies);
     })();`,
    { eval: true, workerData: url },
  );
  return {
    stop: () =>
      new Promise((resolve) => {
        worker.once('message', (l: Array<[number, number]>) => void worker.terminate().then(() => resolve(l)));
        worker.postMessage('stop');
      }),
  };
}

test(`fuzz: ${REQUESTS} hostile requests over every route (seed ${SEED})`, { timeout: 240_000 }, async (t) => {
  const doc = (await api.get('/api/v1/openapi.json')).body;
  const ops: Op[] = [];
  for (const [p, methods] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(methods)) {
      ops.push({
        method: method.toUpperCase(),
        path: p,
        body: op.requestBody?.content?.['application/json']?.schema,
        query: (op.parameters ?? []).filter((x: any) => x.in === 'query').map((x: any) => ({ name: x.name, schema: x.schema })),
      });
    }
  }
  assert.ok(ops.length >= 70, `the document lists ${ops.length} operations`);

  // Real resources to aim at, beside random ids (never this organization's own key or id: revoking the key or
  // re-planning the organization would only turn the rest of the run into 401s and 429s).
  const job = await api.enqueue({ queue_name: 'fuzz' });
  const schedule = (await api.post('/api/v1/schedules', { name: 's', cron_expression: '0 0 * * * *', timezone: 'UTC', queue_name: 'fuzz', payload_template: {} })).body;
  const hook = (await api.post('/api/v1/outgoing-webhooks', { name: 'h', url: 'http://127.0.0.1:9/x', events: ['job.created'] })).body;
  const real = [job.id, 'fuzz', schedule.id, hook.id, 'fw1'];
  const me = (await api.get('/api/v1/auth/me')).body;
  const credentials = () =>
    pick<Record<string, string>>([
      { authorization: `Bearer ${api.key}` },
      { authorization: `Bearer ${api.key}` },
      { authorization: `Bearer ${api.key}` },
      {},
      { authorization: 'Bearer svc_test_nope' },
      { authorization: 'Bearer eyJhbGciOiJub25lIn0.e30.' },
      { authorization: `Basic ${api.key}` },
      { authorization: `Bearer ${api.key}`, 'x-admin-key': ADMIN },
      { 'x-admin-key': pick([ADMIN, 'wrong']) },
      { 'x-webhook-token': 'nope' },
    ]);

  const problems: string[] = [];
  const statuses = new Map<number, number>();
  let sent = 0;
  let heavy = 0;
  /** [start, end, what] of every request: a slow probe is reported with the requests it overlapped. */
  const spans: Array<[number, number, string]> = [];
  // Every request is built before the probe starts: making megabyte bodies and 100,000-item arrays is the load
  // generator's own work on the same two cores, not the node's, and must not be what the probe measures.
  const plan = () => {
    const op = pick(ops);
    let p = op.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'org_id' && chance(0.5) ? me.organization_id : chance(0.4) ? encodeURIComponent(pick(real)) : pick(PATH_VALUES())));
    const q = new URLSearchParams();
    for (const { name, schema } of op.query) if (chance(0.4)) q.append(name, String(chance(0.3) ? pick(HOSTILE_STRINGS) : generate(schema, name, 0)));
    if (chance(0.1)) q.append('tag', pick(HOSTILE_STRINGS));
    let query = q.toString();
    if (chance(0.05)) query += `&x=${'q'.repeat(int(100, 7000))}&%00=%ED%A0%80`;
    if (query) p += `?${query}`;
    let b = op.body || chance(0.2) ? body(op.body) : { text: undefined, heavy: false };
    if (b.heavy && heavy >= 60) b = { text: '{}', heavy: false };
    if (b.heavy) heavy++;
    const headers: Record<string, string> = { ...credentials(), ...(b.text !== undefined ? { 'content-type': 'application/json' } : {}) };
    return { op, p, b, headers };
  };
  const planned = Array.from({ length: REQUESTS }, plan);
  // Each route once, plainly, before the probe: the first call of a route compiles its code, which is a cost of
  // any fresh node and not of hostile input.
  for (const op of ops) {
    const path = op.path.replace(/\{(\w+)\}/g, () => encodeURIComponent(pick(real)));
    await fetch(child.url + path, { method: op.method, headers: credentials(), body: op.method === 'GET' ? undefined : '{}', signal: AbortSignal.timeout(20_000) })
      .then((r) => r.body?.cancel())
      .catch(() => {});
  }
  const one = async ({ op, p, b, headers }: ReturnType<typeof plan>): Promise<void> => {
    let res: Response;
    let text: string;
    const began = Date.now();
    try {
      res = await fetch(child.url + p, { method: op.method, headers, body: op.method === 'GET' ? undefined : b.text, signal: AbortSignal.timeout(20_000) });
      // A stream that was accepted stays open: its status and headers are the answer.
      if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        await res.body?.cancel();
        text = '';
      } else text = await res.text();
    } catch (err) {
      problems.push(`${op.method} ${p.slice(0, 200)}: no answer (${(err as Error).message})`);
      return;
    }
    sent++;
    spans.push([began, Date.now(), `${op.method} ${op.path} ${res.status} ${String(b.text?.length ?? 0)} bytes: ${String(b.text).slice(0, 60)}`]);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    const where = `${op.method} ${p.slice(0, 160)} ${String(b.text).slice(0, 160)}`;
    if (res.status >= 500 && res.status !== 503) problems.push(`${where}: ${res.status} ${text.slice(0, 300)}`);
    if (res.status >= 400 && !op.path.includes('/events') && op.path !== '/api/v1/ws') {
      let e: any;
      try {
        e = JSON.parse(text);
      } catch {
        problems.push(`${where}: ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
        return;
      }
      const entry = (CATALOG as Record<string, { error: string; status: number }>)[e?.code];
      if (!entry || e.error !== entry.error || e.status !== res.status || entry.status !== res.status || typeof e.message !== 'string') {
        problems.push(`${where}: ${res.status} not in the catalog's shape: ${text.slice(0, 300)}`);
      }
    }
  };
  /** The planned requests, CONCURRENCY at a time, with the liveness probe running: the probe's readings. */
  const storm = async (): Promise<Array<[number, number]>> => {
    const probe = livenessProbe(child.url);
    // The load generator yields the cores to the node and the probe (nice is per thread on Linux; the probe's thread,
    // made first, keeps its own): a probe that waited because this thread held a core measured the fuzzer, not the
    // node. The node's threads keep their priority, so a node that freezes is still seen frozen.
    const niced = setNice(10);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < REQUESTS) await one(planned[next++]!);
      }),
    );
    if (niced) setNice(0);
    // After the storm: the node is alive and quick.
    for (let i = 0; i < 10; i++) assert.equal((await api.get('/health/live')).status, 200);
    return probe.stop();
  };
  const slowProbes = (latencies: Array<[number, number]>) =>
    latencies.filter(([, ms]) => ms > 100).map(([at, ms]) => ({ ms: Math.round(ms), overlapping: spans.filter(([s0, s1]) => s1 >= at && s0 <= at + ms).map((x) => x[2]) }));
  let storms = 1;
  let latencies = await storm();
  let around = slowProbes(latencies);
  if (around.length > 0) {
    // The same seeded requests once more. A freeze they cause comes back; a probe that waited for one of the two
    // cores (the node's threads, PostgreSQL, this load generator and the probe share them) does not.
    t.diagnostic(`first storm: /health/live over 100 ms ${around.length} times of ${latencies.length}; the same requests again: ${JSON.stringify(around).slice(0, 1500)}`);
    spans.length = 0;
    storms++;
    latencies = await storm();
    around = slowProbes(latencies);
  }
  t.diagnostic(`statuses ${JSON.stringify([...statuses].sort())}; heavy bodies ${heavy}`);

  assert.deepEqual(problems.slice(0, 20), [], `${problems.length} problems; statuses ${JSON.stringify([...statuses].sort())}`);
  assert.equal(sent, REQUESTS * storms);
  assert.ok(latencies.length > 20, 'the probe ran');
  assert.deepEqual(around, [], `/health/live over 100 ms ${around.length} times of ${latencies.length}`);
  // The fuzz must have reached the handlers, not only the validators.
  assert.ok((statuses.get(200) ?? 0) + (statuses.get(201) ?? 0) > REQUESTS / 20, `statuses ${JSON.stringify([...statuses].sort())}`);
});
