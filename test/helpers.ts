// Test harness: whole nodes on ephemeral ports, each on its own fresh store.
//
// SLUICE_TEST_STORE=pg   a new PostgreSQL database per node (dropped at stop), on TEST_PG_ADMIN_URL
// SLUICE_TEST_STORE=pglite (default)  a copy of a migrated PGlite directory per node: a fresh PGlite
//                        initdb takes ~4 s here, copying a template ~50 ms
import { createHash, randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Clock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { migrate, readMigrations } from '../src/io/db/migrate.js';
import { PgliteStore } from '../src/io/db/pglite.js';
import { startNode, type SluiceNode } from '../src/node.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const STORE: 'pg' | 'pglite' = process.env.SLUICE_TEST_STORE === 'pg' ? 'pg' : 'pglite';
/**
 * The skip of a suite that tests a client (the SDK's worker, the CLI) rather than the server: it runs against
 * PostgreSQL only, since the server paths it drives run on both stores in their own tests.
 */
export const CLIENT_SUITE_SKIP: string | false = STORE !== 'pg' && 'a client suite: run against PostgreSQL only';
const ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const TMP = path.join(ROOT, '.tmp');

export interface StoreLocation {
  env: Record<string, string>;
  dispose(): Promise<void>;
}

/**
 * A fresh, empty (but migrated, for PGlite) store for one node. Its nodes skip the warm-up (WARM_UP_JOBS=0): it
 * spends up to seconds per start on what no test measures; test/warm-up.test.ts turns it on.
 */
export async function freshStore(): Promise<StoreLocation> {
  fs.mkdirSync(TMP, { recursive: true });
  const dataDir = fs.mkdtempSync(path.join(TMP, 'node-'));
  if (STORE === 'pg') {
    const name = `sluice_test_${randomBytes(6).toString('hex')}`;
    await adminQuery(`CREATE DATABASE ${name}`);
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;
    return {
      env: { DATABASE_URL: url.toString(), DATA_DIR: dataDir, WARM_UP_JOBS: '0' },
      dispose: async () => {
        await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  fs.cpSync(await pgliteTemplate(), path.join(dataDir, 'pglite'), { recursive: true });
  return { env: { DATA_DIR: dataDir, WARM_UP_JOBS: '0' }, dispose: async () => fs.rmSync(dataDir, { recursive: true, force: true }) };
}

async function adminQuery(sql: string): Promise<void> {
  const c = new pg.Client(ADMIN_URL);
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function pgliteTemplate(): Promise<string> {
  const hash = createHash('sha256')
    .update(readMigrations().map((m) => m.sql).join('\n'))
    .digest('hex')
    .slice(0, 12);
  const dir = path.join(TMP, `pglite-template-${hash}`);
  const lock = `${dir}.lock`;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'READY'))) return dir;
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
    } catch {
      await sleep(100);
      continue;
    }
    try {
      fs.rmSync(dir, { recursive: true, force: true });
      const store = await PgliteStore.open(dir);
      await migrate(store);
      await store.close();
      fs.writeFileSync(path.join(dir, 'READY'), '');
    } finally {
      fs.rmSync(lock, { force: true });
    }
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What nodes sharing one PostgreSQL database need: the cluster secret, a short lease, an ephemeral peer port. */
export const CLUSTER_ENV = { CLUSTER_SECRET: 'a-cluster-secret-of-at-least-32-chars', CLUSTER_LEASE_MS: '2000', CLUSTER_PORT: '0' };

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export class Api {
  constructor(
    readonly url: string,
    readonly key: string,
  ) {}

  async call<T = any>(method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const res = await fetch(this.url + p, {
      method,
      headers: {
        ...(this.key ? { authorization: `Bearer ${this.key}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  get = <T = any>(p: string, headers?: Record<string, string>) => this.call<T>('GET', p, undefined, headers);
  post = <T = any>(p: string, body?: unknown, headers?: Record<string, string>) => this.call<T>('POST', p, body, headers);
  put = <T = any>(p: string, body?: unknown) => this.call<T>('PUT', p, body);
  delete = <T = any>(p: string) => this.call<T>('DELETE', p);

  as(key: string): Api {
    return new Api(this.url, key);
  }

  /** Enqueue and assert 201. */
  async enqueue(body: Record<string, unknown>): Promise<any> {
    const r = await this.post('/api/v1/jobs', { payload: {}, ...body });
    if (r.status !== 201) throw new Error(`enqueue: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  async claim(queue: string, extra: Record<string, unknown> = {}): Promise<any[]> {
    const r = await this.post('/api/v1/jobs/claim', { queue_name: queue, worker_id: 'w1', ...extra });
    if (r.status !== 200) throw new Error(`claim: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.jobs;
  }
}

export interface TestNode {
  node: SluiceNode;
  api: Api;
  env: Record<string, string>;
  stop(): Promise<void>;
}

// Nodes run two actor threads unless a test says otherwise; SLUICE_TEST_ACTOR_THREADS=0 runs the suite with the actors
// on the main thread (the default on two cores or fewer), as `make test` does for the embedded store's suites.

/** A whole node in this process on an ephemeral port, with its own fresh store. */
export async function startTestNode(opts: { clock?: Clock; env?: Record<string, string>; store?: StoreLocation } = {}): Promise<TestNode> {
  const store = opts.store ?? (await freshStore());
  const env = { HOST: '127.0.0.1', PORT: '0', GRPC_PORT: '0', LOG_LEVEL: 'warn', ACTOR_THREADS: process.env.SLUICE_TEST_ACTOR_THREADS ?? '2', ...store.env, ...opts.env };
  const node = await startNode({ config: loadConfig(env), clock: opts.clock });
  if (!node.bootstrapKey) throw new Error('a fresh store should bootstrap the default organization');
  return {
    node,
    api: new Api(node.url, node.bootstrapKey),
    env,
    stop: async () => {
      await node.stop();
      if (!opts.store) await store.dispose();
    },
  };
}

/** Newest modification time (ms) of the files under `dir`. */
export function newest(dir: string): number {
  let max = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    max = Math.max(max, e.isDirectory() ? newest(p) : fs.statSync(p).mtimeMs);
  }
  return max;
}

let nodeCommandArgs: string[] | null = null;

/**
 * How a child node is started: the compiled build (dist/, made by `make build`, which `make test` runs first)
 * when it is newer than every source file, as production runs it and 3–4 times quicker to start than tsx; the
 * sources through tsx otherwise, so a test run after an edit never runs stale code.
 */
function nodeCommand(): string[] {
  if (nodeCommandArgs) return nodeCommandArgs;
  // Decided at the first spawn, not when a test file imports the helpers (most never spawn a node).
  const compiled = path.join(ROOT, 'dist/main.js');
  const fresh = fs.existsSync(compiled) && fs.statSync(compiled).mtimeMs >= newest(path.join(ROOT, 'src'));
  nodeCommandArgs = fresh ? [compiled] : ['--import', 'tsx', path.join(ROOT, 'src/main.ts')];
  return nodeCommandArgs;
}

/** A node in a child process (crash tests): resolves once it listens. */
export async function spawnNode(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, nodeCommand(), {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', GRPC_PORT: '0', LOG_LEVEL: 'info', ACTOR_THREADS: process.env.SLUICE_TEST_ACTOR_THREADS ?? '2', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`node exited (${code}) before listening:\n${out}`)));
  });
  return { child, url, output: () => out };
}

export const freePort = async (): Promise<number> => {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
};
