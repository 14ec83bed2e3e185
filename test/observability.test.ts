// What an operator reads: every answer's X-Request-Id (the caller's when sane) and X-Sluice-Version, the
// request id in that request's log lines, LOG_FORMAT=json as one JSON object per line, the boot line naming
// the bound address and both ports; and the dashboard's files with their content types, caching and
// Content-Security-Policy.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { createLog } from '../src/log.js';
import { startNode, type SluiceNode } from '../src/node.js';
import { freshStore, ROOT, sleep, type StoreLocation } from './helpers.js';

const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('request ids, version header, JSON logs, dashboard files', () => {
  let node: SluiceNode;
  let store: StoreLocation;
  const lines: string[] = [];
  const logged = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

  before(async () => {
    execFileSync('make', ['-s', 'ui'], { cwd: ROOT, stdio: 'inherit' });
    store = await freshStore();
    // No HOST: the default must be this machine only.
    const config = loadConfig({ PORT: '0', GRPC_PORT: '0', ACTOR_THREADS: '1', ...store.env });
    node = await startNode({ config, log: createLog('debug', 'json', (l) => lines.push(l)) });
  });
  after(async () => {
    await node?.stop();
    await store?.dispose();
  });

  test('every log line is one JSON object; the boot line names the bound address and both ports', () => {
    for (const l of lines) {
      assert.ok(!l.includes('\n'), `one line: ${l}`);
      const o = JSON.parse(l) as Record<string, unknown>;
      assert.equal(typeof o.time, 'string');
      assert.ok(['debug', 'info', 'warn', 'error'].includes(o.level as string));
      assert.equal(typeof o.msg, 'string');
    }
    const boot = logged().find((o) => String(o.msg).startsWith('listening on'));
    assert.ok(boot, 'a boot line');
    assert.match(String(boot.msg), new RegExp(`^listening on http://127\\.0\\.0\\.1:${node.port} \\(HTTP.*\\) and 127\\.0\\.0\\.1:${node.grpcPort} \\(gRPC\\), bound to 127\\.0\\.0\\.1, this machine only`));
    assert.deepEqual([boot.address, boot.http_port, boot.grpc_port, boot.version], ['127.0.0.1', node.port, node.grpcPort, VERSION]);
  });

  test('X-Request-Id: generated, or the caller’s when sane; X-Sluice-Version on every answer', async () => {
    const plain = await fetch(`${node.url}/health`);
    assert.match(plain.headers.get('x-request-id') ?? '', UUID);
    assert.equal(plain.headers.get('x-sluice-version'), VERSION);

    const mine = await fetch(`${node.url}/api/v1/jobs`, { headers: { 'x-request-id': 'trace-42.a:b' } });
    assert.equal(mine.status, 401);
    assert.equal(mine.headers.get('x-request-id'), 'trace-42.a:b');
    assert.equal(mine.headers.get('x-sluice-version'), VERSION);

    for (const bad of ['has space', 'x'.repeat(129), 'quote"d', 'new\tline']) {
      const r = await fetch(`${node.url}/nowhere`, { headers: { 'x-request-id': bad } });
      // An unknown path without a credential is 401 (docs/errors.md, NOT_FOUND).
      assert.equal(r.status, 401);
      assert.match(r.headers.get('x-request-id') ?? '', UUID, `${JSON.stringify(bad)} is replaced`);
    }

    // A streamed answer carries them too.
    const key = node.bootstrapKey!;
    const ac = new AbortController();
    const sse = await fetch(`${node.url}/api/v1/events?api_key=${key}`, { headers: { 'x-request-id': 'stream-1' }, signal: ac.signal });
    assert.equal(sse.status, 200);
    assert.equal(sse.headers.get('x-request-id'), 'stream-1');
    assert.equal(sse.headers.get('x-sluice-version'), VERSION);
    ac.abort();
  });

  test("the request id is in the request's log line (LOG_LEVEL=debug: one line per request)", async () => {
    await fetch(`${node.url}/health/ready`, { headers: { 'x-request-id': 'find-me-7' } });
    for (let i = 0; i < 50 && !logged().some((o) => o.request_id === 'find-me-7'); i++) await sleep(10);
    const line = logged().find((o) => o.request_id === 'find-me-7');
    assert.ok(line, 'a line with the request id');
    assert.equal(line.level, 'debug');
    assert.equal(line.msg, 'GET /health/ready 200');
    assert.equal(typeof line.ms, 'number');
    // The query string (where stream credentials travel) is never logged.
    await fetch(`${node.url}/api/v1/events/queues/none?api_key=svc_test_secret`, { headers: { 'x-request-id': 'no-query' } });
    for (let i = 0; i < 50 && !logged().some((o) => o.request_id === 'no-query'); i++) await sleep(10);
    assert.ok(!lines.some((l) => l.includes('svc_test_secret')));
  });

  test('/ redirects to /ui/; the page and its assets have content types, caching and a strict CSP', async () => {
    const root = await fetch(`${node.url}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/ui/');

    for (const p of ['/ui', '/ui/']) {
      const r = await fetch(node.url + p);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(r.headers.get('cache-control'), 'no-cache');
      const csp = r.headers.get('content-security-policy') ?? '';
      for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) {
        assert.ok(csp.includes(d), `CSP has ${d}: ${csp}`);
      }
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
      const html = await r.text();
      assert.doesNotMatch(html, /<script>|<style|style=|https?:\/\//, 'no inline script or style, nothing from another origin');
      const assets = [...html.matchAll(/(?:src|href)="(\/ui\/assets\/[^"]+)"/g)].map((m) => m[1]!);
      assert.equal(assets.length, 3, 'script, stylesheet, icon');
      for (const a of assets) {
        const res = await fetch(node.url + a);
        assert.equal(res.status, 200, a);
        assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
        const type = res.headers.get('content-type');
        assert.equal(type, a.endsWith('.js') ? 'text/javascript; charset=utf-8' : a.endsWith('.css') ? 'text/css; charset=utf-8' : 'image/svg+xml');
      }
    }
    const missing = await fetch(`${node.url}/ui/assets/app-nope.js`);
    assert.equal(missing.status, 404);
  });
});

test('createLog json: an error is a field with its stack, still one line; text keeps fields as key=value', () => {
  const out: string[] = [];
  const log = createLog('info', 'json', (l) => out.push(l));
  log.debug('hidden');
  log.error('commit failed', Object.assign(new Error('boom', { cause: new Error('socket closed') }), { code: 'ECONNRESET' }), { request_id: 'r1' });
  assert.equal(out.length, 1);
  assert.ok(!out[0]!.includes('\n'));
  const o = JSON.parse(out[0]!);
  assert.equal(o.level, 'error');
  assert.equal(o.request_id, 'r1');
  assert.deepEqual([o.err.name, o.err.message, o.err.code, o.err.cause.message], ['Error', 'boom', 'ECONNRESET', 'socket closed']);
  assert.match(o.err.stack, /\n\s+at /);

  const text: string[] = [];
  createLog('info', 'text', (l) => text.push(l)).info('GET /x 200', undefined, { request_id: 'r2', note: 'two words' });
  assert.match(text[0]!, / INFO GET \/x 200 request_id=r2 note="two words"$/);
});
