// The production build: `make build` compiles the server to dist/, and `node dist/main.js` runs it with
// plain node: no tsx (the process runs from a directory where tsx cannot be resolved, so a worker thread
// that tried to register it would fail), migrations and the proto file found from dist/, the dashboard
// served. It boots on the store of the run and passes /health/ready, then stops on SIGTERM.
//
// `make build` is a no-op when dist/ is newer than every source, so only the first store's run pays for tsc.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { freePort, freshStore, ROOT, sleep } from './helpers.js';

const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

test('node dist/main.js (make build) boots with plain node and passes /health/ready', async () => {
  execFileSync('make', ['-s', 'build'], { cwd: ROOT, stdio: 'inherit' });
  const store = await freshStore();
  const away = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-dist-'));
  const port = await freePort();
  // Only what a deployment sets: no NODE_OPTIONS or loader from the test runner's environment.
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', PORT: String(port), GRPC_PORT: '0', ACTOR_THREADS: '2', LOG_FORMAT: 'json', ...store.env };
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/main.js')], { cwd: away, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const url = `http://127.0.0.1:${port}`;
    let ready: Response | null = null;
    // How long a boot takes is not what this checks (a fresh PGlite store, on two cores shared with the other
    // store's suite, took over 10 s): it must come up and say ready, within a minute.
    for (const end = Date.now() + 60_000; Date.now() < end && child.exitCode === null; ) {
      ready = await fetch(`${url}/health/ready`).catch(() => null);
      if (ready?.status === 200) break;
      await sleep(50);
    }
    assert.equal(ready?.status, 200, `not ready; output:\n${out}`);
    assert.deepEqual(await ready!.json(), { status: 'ready', checks: { store: 'ok' } });
    assert.equal(ready!.headers.get('x-sluice-version'), VERSION);
    // Worker threads ran: an enqueue goes through an actor thread and its commit.
    const key = (out.match(/svc_test_[A-Za-z0-9_-]+/) ?? [])[0];
    assert.ok(key, `the first boot printed its key:\n${out}`);
    const made = await fetch(`${url}/api/v1/jobs`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"queue_name":"dist","payload":{}}' });
    assert.equal(made.status, 201);
    const ui = await fetch(`${url}/ui/`);
    assert.equal(ui.status, 200, 'the dashboard is served from the build');
    const boot = out.split('\n').map((l) => (l.startsWith('{') ? (JSON.parse(l) as Record<string, unknown>) : null)).find((o) => o && String(o.msg).startsWith('listening on'));
    assert.equal(boot?.address, '127.0.0.1');
  } finally {
    child.kill('SIGTERM');
    const code = await exited;
    await store.dispose();
    fs.rmSync(away, { recursive: true, force: true });
    assert.equal(code, 0, `exit code on SIGTERM; output:\n${out}`);
  }
});
