// Hostile input is refused at the door with 422 naming the field, and nothing a request carries can take the
// node down, freeze it, or reach the store: JSON nested 5,000 deep (it used to kill the process through an
// uncaught postMessage RangeError), strings PostgreSQL cannot store (NUL, lone surrogates: they used to fail
// whole group commits, or answer 500), arrays of 100,000 permissions (an O(n²) uniqueness check froze the
// node for 102 s). Every request body schema bounds its strings and arrays.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Pool, type Dispatcher } from 'undici';
import { CATALOG } from '../src/errors.js';
import { loadedBuild, loadUws } from '../src/io/http/uws.js';
import { startTestNode, type TestNode } from './helpers.js';
import { assertInvalid } from './http-assert.js';

let n: TestNode;
const ADMIN = 'admin-key-for-hostile-tests';
before(async () => {
  n = await startTestNode({ env: { ADMIN_API_KEY: ADMIN, REGISTRATION_MODE: 'open' } });
});
after(() => n.stop());

const deep = (levels: number, leaf: unknown = 1): unknown => {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
};
/** The text of a body nested `levels` deep inside `field`, built as text (JSON.stringify would overflow). */
const deepBody = (prefix: string, levels: number, suffix: string) => `${prefix}${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}${suffix}`;

async function alive(): Promise<void> {
  const r = await n.api.get('/health/live');
  assert.equal(r.status, 200, 'the node still answers');
}

async function claimOne(queue: string): Promise<{ id: string; lease_id: string }> {
  await n.api.enqueue({ queue_name: queue });
  const [job] = await n.api.claim(queue);
  return job;
}

describe('deep JSON', () => {
  test('PUT /queues/:name/config nested 5,000 deep: 422, and the node lives', async () => {
    const r = await n.api.call('PUT', '/api/v1/queues/q/config', deepBody('', 5000, ''));
    assertInvalid(r);
    assert.equal(r.body.details[0].field, '(body)');
    assert.match(r.body.message, /deeper than 64/);
    await alive();
  });

  test('a result nested 5,000 deep on complete: 422; the job is still held and completes after', async () => {
    const job = await claimOne('deep-complete');
    const r = await n.api.call('POST', `/api/v1/jobs/${job.id}/complete`, deepBody(`{"worker_id":"w1","lease_id":"${job.lease_id}","result":`, 5000, '}'));
    assertInvalid(r);
    await alive();
    assert.equal((await n.api.get(`/api/v1/jobs/${job.id}`)).body.status, 'processing');
    const done = await n.api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: job.lease_id, result: deep(40) });
    assert.equal(done.status, 200);
  });

  test('a payload nested 5,000 deep: 422, not 500; 60 levels are fine', async () => {
    const r = await n.api.call('POST', '/api/v1/jobs', deepBody('{"queue_name":"deep","payload":', 5000, '}'));
    assertInvalid(r);
    const ok = await n.api.post('/api/v1/jobs', { queue_name: 'deep', payload: deep(60) as Record<string, unknown> });
    assert.equal(ok.status, 201);
  });

  test('two million brackets (the 4 MiB ceiling) are refused without parsing them', async () => {
    const r = await n.api.call('POST', '/api/v1/jobs', '['.repeat(2_000_000));
    assertInvalid(r);
    await alive();
  });
});

describe('strings the store cannot keep', () => {
  const bad = { nul: 'a\u0000b', surrogate: 'a\ud800b', trailing: '\udc00' };

  for (const [what, s] of Object.entries(bad)) {
    test(`${what} in a payload value, a payload key, tags and a result: 422 naming the field`, async () => {
      let r = await n.api.post('/api/v1/jobs', { queue_name: 'nul', payload: { deep: { x: s } } });
      assertInvalid(r);
      assert.equal(r.body.details[0].field, 'payload.deep.x');
      r = await n.api.post('/api/v1/jobs', { queue_name: 'nul', payload: { [s]: 1 } });
      assertInvalid(r);
      r = await n.api.post('/api/v1/jobs', { queue_name: 'nul', payload: {}, tags: { k: s } });
      assertInvalid(r);
      assert.equal(r.body.details[0].field, 'tags.k');
      r = await n.api.post('/api/v1/jobs/bulk', { jobs: [{ queue_name: 'nul', payload: { a: [s] } }] });
      assertInvalid(r);
      assert.equal(r.body.details[0].field, 'jobs[0].payload.a[0]');
      const job = await claimOne('nul-result');
      r = await n.api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: job.lease_id, result: { s } });
      assertInvalid(r);
      r = await n.api.post(`/api/v1/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: job.lease_id, error: s });
      assertInvalid(r);
    });
  }

  test('NUL in organization, schedule, webhook and worker fields, secrets and hostnames: 422, not 500', async () => {
    const cases: Array<[string, string, unknown, Record<string, string>?]> = [
      ['POST', '/api/v1/organizations', { name: 'a\u0000', slug: 'nul-org' }],
      ['POST', '/api/v1/admin/organizations', { name: 'x', slug: 'nul-org-2', owner_email: 'a\u0000@b.c' }, { 'x-admin-key': ADMIN }],
      ['POST', '/api/v1/schedules', { name: 's\u0000', cron_expression: '0 * * * * *', timezone: 'UTC', queue_name: 'q', payload_template: {} }],
      ['POST', '/api/v1/outgoing-webhooks', { name: 'w\u0000', url: 'http://127.0.0.1:9/x', events: ['job.created'] }],
      ['POST', '/api/v1/outgoing-webhooks', { name: 'w', url: 'http://127.0.0.1:9/x', events: ['job.created'], secret: 's\u0000' }],
      ['POST', '/api/v1/outgoing-webhooks', { name: 'w', url: 'http://exa\u0000mple.com/x', events: ['job.created'] }],
      ['POST', '/api/v1/workers/register', { worker_id: 'w-nul', hostname: 'h\u0000' }],
      ['POST', '/api/v1/api-keys', { name: 'k\u0000' }],
      ['POST', '/api/v1/queues', { name: 'q', pause_reason: 'x' }],
      ['POST', '/api/v1/workflows', { name: 'wf\u0000', jobs: [{ name: 'a', queue_name: 'q', payload: {} }] }],
    ];
    for (const [method, path, body, headers] of cases) {
      const r = await n.api.call(method, path, body, headers);
      assert.ok(r.status < 500, `${method} ${path} ${JSON.stringify(body)} answered ${r.status}`);
    }
    for (const [method, path, body, headers] of cases.filter((c) => JSON.stringify(c[2]).includes('\\u0000'))) {
      const r = await n.api.call(method, path, body, headers);
      assertInvalid(r);
    }
  });

  test('NUL or a lone surrogate in a query or a path: 422 naming it', async () => {
    for (const p of ['/api/v1/jobs?tag=%00', '/api/v1/jobs/dlq?tag=a%00b', '/api/v1/queues?cursor=%00', '/api/v1/jobs?queue_name=%ED%A0%80x%00']) {
      const r = await n.api.get(p);
      assertInvalid(r);
      assert.match(r.body.details[0].field, /^query/);
    }
    const r = await n.api.get('/api/v1/queues/a%00b');
    assertInvalid(r);
    assert.equal(r.body.details[0].field, 'path.name');
  });
});

describe('arrays and strings are bounded', () => {
  test('100,000 permissions or webhook events: 422 at once (the uniqueness check is linear)', { timeout: 30_000 }, async () => {
    // Over the body's value limit: refused before parsing.
    let r = await n.api.post('/api/v1/api-keys', { name: 'k', permissions: Array(100_000).fill('jobs:read') });
    assertInvalid(r, '(body)');
    assert.match(r.body.message, /more than 50000 values/);
    // Under it: refused by the array's own maximum, before any per-item check.
    r = await n.api.post('/api/v1/api-keys', { name: 'k', permissions: Array(40_000).fill('jobs:read') });
    assertInvalid(r, 'permissions');
    r = await n.api.post('/api/v1/api-keys', { name: 'k', permissions: ['jobs:read', 'jobs:read'] });
    assertInvalid(r);
    assert.match(r.body.message, /duplicate/);
    r = await n.api.post('/api/v1/outgoing-webhooks', { name: 'w', url: 'http://127.0.0.1:9/x', events: Array(40_000).fill('job.created') });
    assertInvalid(r, 'events');
    await alive();
  });

  test('tags as an object: at most 50, names of 1 to 100 characters, checked before the rest (jobs, bulk, workflows)', async () => {
    const many = (k: number) => Object.fromEntries(Array.from({ length: k }, (_, i) => [`t${i}`, 'v']));
    let r = await n.api.post('/api/v1/jobs', { queue_name: 'tags', payload: {}, tags: many(51) });
    assertInvalid(r, 'tags');
    assert.match(r.body.message, /at most 50 properties/);
    r = await n.api.post('/api/v1/jobs', { queue_name: 'tags', payload: {}, tags: { ['k'.repeat(101)]: 'v' } });
    assertInvalid(r, 'tags');
    assert.ok(!r.body.message.includes('k'.repeat(101)), 'the key is not echoed');
    r = await n.api.post('/api/v1/jobs', { queue_name: 'tags', payload: {}, tags: { '': 'v' } });
    assertInvalid(r, 'tags');
    // A bulk item is validated alone and reported.
    r = await n.api.post('/api/v1/jobs/bulk', { jobs: [{ queue_name: 'tags', payload: {}, tags: many(51) }] });
    assert.equal(r.status, 200);
    assert.equal(r.body.failed[0].error.details[0].field, 'tags');
    r = await n.api.post('/api/v1/workflows', { name: 'wf', jobs: [{ name: 'a', queue_name: 'tags', payload: {}, tags: { ['k'.repeat(101)]: 'v' } }] });
    assertInvalid(r, 'jobs[0].tags');
    // 40,000 keys (under the body's value limit): refused by the count before typebox runs (its message would be
    // "must not have more than 50 properties", after listing every key: 1.3 s here).
    r = await n.api.post('/api/v1/jobs', { queue_name: 'tags', payload: {}, tags: many(40_000) });
    assertInvalid(r, 'tags');
    assert.deepEqual(r.body.details, [{ field: 'tags', message: 'must have at most 50 properties' }]);
    // At the limits: 50 tags, a name of 100 characters (code points: 100 emoji are 200 UTF-16 units).
    r = await n.api.post('/api/v1/jobs', { queue_name: 'tags', payload: {}, tags: { ...many(49), ['😀'.repeat(100)]: 'v' } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  });

  test('every request body schema bounds its strings (maxLength), arrays (maxItems) and object maps (maxProperties, key length)', async () => {
    const doc = (await n.api.get('/api/v1/openapi.json')).body;
    const unbounded: string[] = [];
    const walk = (s: any, where: string): void => {
      if (!s || typeof s !== 'object') return;
      for (const k of ['anyOf', 'allOf', 'oneOf']) if (Array.isArray(s[k])) s[k].forEach((b: unknown) => walk(b, where));
      if (s.type === 'string' && s.maxLength === undefined && s.const === undefined && s.enum === undefined) unbounded.push(`${where}: string`);
      if (s.type === 'array') {
        if (s.maxItems === undefined) unbounded.push(`${where}: array`);
        walk(s.items, `${where}[]`);
      }
      if (s.type === 'object') {
        // A map (keys chosen by the client, values of one schema) needs a bound on its size and on its keys. Free
        // JSON (payloads: additionalProperties true) is bounded by the body's value count instead.
        const map = Object.keys(s.patternProperties ?? {}).length > 0 || (s.additionalProperties && typeof s.additionalProperties === 'object');
        if (map && s.maxProperties === undefined) unbounded.push(`${where}: object map`);
        if (map && s.propertyNames?.maxLength === undefined) unbounded.push(`${where}: object map keys`);
        for (const [k, v] of Object.entries(s.properties ?? {})) walk(v, `${where}.${k}`);
        for (const v of Object.values(s.patternProperties ?? {})) walk(v, `${where}.*`);
        if (s.additionalProperties && typeof s.additionalProperties === 'object') walk(s.additionalProperties, `${where}.*`);
      }
    };
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        const body = op.requestBody?.content?.['application/json']?.schema;
        if (body) walk(body, `${method.toUpperCase()} ${path}`);
      }
    }
    assert.deepEqual(unbounded, []);
  });
});

describe('every operation of the served document, each hostile shape', () => {
  // Deterministic where test/fuzz.test.ts samples: every operation gets every shape. Bodies go to operations that
  // take one; NUL and a lone surrogate also go into each path and query parameter (a lone surrogate has no UTF-8
  // form, so in a URL it is its WTF-8 bytes %ED%A0%80, which decode to U+FFFD or stay as they are).
  const DEEP_OBJECT = deepBody('', 5000, '');
  const DEEP_ARRAY = `${'['.repeat(5000)}${']'.repeat(5000)}`;
  const MEGABYTE = 'x'.repeat(1024 * 1024);
  const NUL = 'a\u0000b';
  const SURROGATE = 'a\ud800b';
  const IN_URL: Record<string, string> = { nul: '%00', surrogate: '%ED%A0%80' };

  /** A body that passes the schema's shape: its required properties, each with a plain value. */
  const sample = (s: any, name = ''): unknown => {
    if (!s || typeof s !== 'object') return null;
    const branches = s.anyOf ?? s.oneOf;
    if (Array.isArray(branches)) return sample(branches[0], name);
    if (s.const !== undefined) return s.const;
    if (Array.isArray(s.enum)) return s.enum[0];
    switch (s.type) {
      case 'object':
        return Object.fromEntries((s.required ?? []).map((k: string) => [k, sample(s.properties?.[k], k)]));
      case 'array':
        return Array.from({ length: s.minItems ?? 0 }, () => sample(s.items, name));
      case 'string':
        return /0-9a-fA-F\]\{8\}/.test(s.pattern ?? '') ? randomUUID() : /url/.test(name) ? 'http://127.0.0.1:9/x' : /email/.test(name) ? 'a@b.co' : 'hostile';
      case 'integer':
      case 'number':
        return s.minimum ?? 1;
      case 'boolean':
        return true;
      default:
        return null;
    }
  };
  const takes = (s: any, type: string): boolean => s?.type === type || (s?.anyOf ?? []).some((b: any) => b?.type === type);
  /** The sample with `value` in the schema's first string field, required or not (in `x` when it has none). */
  const withString = (s: any, value: string): string => {
    const base = sample(s);
    const o = base !== null && typeof base === 'object' && !Array.isArray(base) ? (base as Record<string, unknown>) : {};
    const field = Object.keys(s?.properties ?? {}).find((k) => takes(s.properties[k], 'string')) ?? 'x';
    return JSON.stringify({ ...o, [field]: value });
  };
  const withArray = (s: any): string => {
    const base = sample(s);
    const o = base !== null && typeof base === 'object' && !Array.isArray(base) ? (base as Record<string, unknown>) : {};
    const field = Object.keys(s?.properties ?? {}).find((k) => takes(s.properties[k], 'array')) ?? 'x';
    return JSON.stringify({ ...o, [field]: Array.from({ length: 100_000 }, (_, i) => i) });
  };

  test('each answer is below 500 or a 503, in the catalog shape, and /health/live answers after each operation', { timeout: 120_000 }, async (t) => {
    // A free organization of its own, its rate limit lifted so that every request reaches the edge's checks.
    const made = await n.api.as('').post('/api/v1/organizations', { name: 'Hostile', slug: 'hostile-every-op' });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const orgId: string = made.body.organization.id;
    assert.equal(made.body.organization.plan, 'free');
    const lifted = await n.api.as('').call('PUT', `/api/v1/admin/organizations/${orgId}/limits`, { limits: { rate_per_second: null, burst: null } }, { 'x-admin-key': ADMIN });
    assert.equal(lifted.status, 200, JSON.stringify(lifted.body));
    const key: string = made.body.api_key.key;
    const free = n.api.as(key);
    const token: string = (await free.get('/api/v1/organizations/webhook-token')).body.token;

    const doc = (await free.get('/api/v1/openapi.json')).body;
    const pool = new Pool(n.node.url, { connections: 2 });
    const problems: string[] = [];
    const statuses = new Map<number, number>();
    let sent = 0;
    try {
      const send = async (what: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<void> => {
        const r = await pool.request({ method: method as Dispatcher.HttpMethod, path, headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, body });
        sent++;
        statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
        // An accepted stream stays open: its status is the answer.
        const streamed = String(r.headers['content-type'] ?? '').startsWith('text/event-stream');
        const text = streamed ? (r.body.destroy(), '') : await r.body.text();
        const where = `${what}: ${r.statusCode} ${text.slice(0, 200)}`;
        if (r.statusCode >= 500 && r.statusCode !== 503) problems.push(where);
        if (r.statusCode >= 400) {
          let e: any;
          try {
            e = JSON.parse(text);
          } catch {
            return void problems.push(`${where}: not JSON`);
          }
          const entry = (CATALOG as Record<string, { error: string; status: number }>)[e?.code];
          if (!entry || e.error !== entry.error || e.status !== r.statusCode || entry.status !== r.statusCode || typeof e.message !== 'string') {
            problems.push(`${where}: not in the catalog's shape`);
          }
        }
      };
      for (const [template, ops] of Object.entries<any>(doc.paths)) {
        for (const [m, op] of Object.entries<any>(ops)) {
          const method = m.toUpperCase();
          const security = (op.security ?? []).flatMap((x: object) => Object.keys(x));
          const headers: Record<string, string> = { authorization: `Bearer ${key}` };
          if (security.includes('adminKey')) headers['x-admin-key'] = ADMIN;
          if (security.includes('webhookToken')) headers['x-webhook-token'] = token;
          const plain: Record<string, string> = { org_id: orgId, id: randomUUID(), name: 'hostile', file: 'x.js' };
          const pathWith = (over: Record<string, string> = {}) => template.replace(/\{(\w+)\}/g, (_, p: string) => over[p] ?? plain[p] ?? 'x');
          const name = `${method} ${template}`;
          const schema = op.requestBody?.content?.['application/json']?.schema;
          if (op.requestBody) {
            const bodies: Record<string, string> = {
              'a body 5,000 deep': DEEP_OBJECT,
              'an array 5,000 deep': DEEP_ARRAY,
              'a NUL in a string': withString(schema, NUL),
              'a lone surrogate in a string': withString(schema, SURROGATE),
              'an array of 100,000 entries': withArray(schema),
              'a 1 MB string': withString(schema, MEGABYTE),
            };
            for (const [shape, body] of Object.entries(bodies)) await send(`${name} with ${shape}`, method, pathWith(), headers, body);
          }
          for (const p of (op.parameters ?? []).filter((x: any) => x.in === 'path')) {
            for (const [shape, v] of Object.entries(IN_URL)) await send(`${name} with ${shape} in path.${p.name}`, method, pathWith({ [p.name]: v }), headers, method === 'GET' ? undefined : '{}');
          }
          for (const p of (op.parameters ?? []).filter((x: any) => x.in === 'query')) {
            // The credential parameters of the real-time routes would replace the header's credential.
            if (p.name === 'api_key' || p.name === 'token') continue;
            for (const [shape, v] of Object.entries(IN_URL)) await send(`${name} with ${shape} in query.${p.name}`, method, `${pathWith()}?${p.name}=${v}`, headers, method === 'GET' ? undefined : '{}');
          }
          const live = await pool.request({ method: 'GET', path: '/health/live' });
          await live.body.dump();
          assert.equal(live.statusCode, 200, `/health/live after ${name}`);
        }
      }
    } finally {
      await pool.close();
    }
    t.diagnostic(`${sent} requests; statuses ${JSON.stringify([...statuses].sort())}`);
    assert.deepEqual(problems, []);
    assert.ok(sent > 300, `${sent} requests`);
  });
});

/** Sends raw bytes and collects what comes back until the server closes or `ms` pass. */
function raw(data: string, ms = 2000): Promise<{ text: string; closed: boolean }> {
  const { port } = new URL(n.node.url);
  return new Promise((resolve) => {
    const s = net.connect(Number(port), '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ text, closed: false });
    }, ms);
    s.on('data', (d) => (text += d.toString('latin1')));
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    s.write(data);
  });
}
const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);

describe('malformed HTTP gets a status, then the connection closes', () => {
  const key = () => n.api.key;

  test('two Authorization headers: 400', async () => {
    const r = await raw(`GET /api/v1/queues HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key()}\r\nAuthorization: Bearer other\r\n\r\n`);
    assert.equal(statusOf(r.text), 400);
    assert.match(r.text, /"code":"BAD_REQUEST"/);
    assert.ok(r.closed);
  });

  test('a path and query over 8 KiB: 414', async () => {
    const r = await raw(`GET /api/v1/jobs?queue_name=${'a'.repeat(9000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    assert.equal(statusOf(r.text), 414);
    assert.ok(r.closed);
  });

  test('a header over 8 KiB, or headers over 32 KiB: 431', async () => {
    let r = await raw(`GET /api/v1/queues HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(9000)}\r\n\r\n`);
    assert.equal(statusOf(r.text), 431);
    assert.ok(r.closed);
    const many = Array.from({ length: 6 }, (_, i) => `X-H${i}: ${'b'.repeat(7000)}\r\n`).join('');
    r = await raw(`GET /api/v1/queues HTTP/1.1\r\nHost: x\r\n${many}\r\n`);
    assert.equal(statusOf(r.text), 431);
  });

  // What uWebSockets.js refuses before any handler runs depends on the build that loads: 20.57
  // (@btc-vision, glibc >= 2.38) answers 400/431/505 itself; 20.30 (@trufflesuite, the only one that loads on
  // glibc 2.36) drops or holds such connections, and nothing in-process can answer them.
  loadUws();
  const newerUws = loadedBuild() === '@btc-vision/uwebsockets.js';
  const only2057 = newerUws ? false : 'this machine loads uWebSockets.js 20.30, which drops these connections without a status (docs/api.md)';
  test('an unknown method and a NUL in a header get a 4xx (uWebSockets.js 20.57)', { skip: only2057 }, async () => {
    for (const req of [`FOO /api/v1/queues HTTP/1.1\r\nHost: x\r\n\r\n`, `GET /api/v1/queues HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n`]) {
      const r = await raw(req);
      const status = statusOf(r.text);
      assert.ok(status >= 400 && status < 500, `answered ${status}`);
      assert.ok(r.closed);
    }
  });

  test('more than 100 headers get a 431, and so do more than 90 (in the catalog shape) (uWebSockets.js 20.57)', { skip: only2057 }, async () => {
    const head = (count: number) => `GET /api/v1/queues HTTP/1.1\r\nHost: x\r\n${Array.from({ length: count - 1 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`;
    // uWS 20.57 parses at most 98 headers and answers more itself; MAX_HEADERS (90) answers below that.
    let r = await raw(head(120));
    assert.equal(statusOf(r.text), 431);
    assert.ok(r.closed);
    r = await raw(head(95));
    assert.equal(statusOf(r.text), 431);
    assert.match(r.text, /"code":"HEADERS_TOO_LARGE"/);
    assert.ok(r.closed);
  });

  test(
    'an unmasked client WebSocket frame closes the socket with 1002 (uWebSockets.js 20.57)',
    // Neither build checks the mask bit of a client frame (docs/api.md): kept as the behaviour the issue asks for.
    { skip: only2057, todo: newerUws && 'uWebSockets.js 20.57 reads every client frame as masked and never closes with 1002 (docs/api.md)' },
    async () => {
      const { port } = new URL(n.node.url);
      const s = net.connect(Number(port), '127.0.0.1');
      s.on('error', () => {});
      let text = '';
      let upgraded = false;
      const closed = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 5_000);
        s.on('close', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      s.on('data', (d) => {
        text += d.toString('latin1');
        if (!upgraded && text.includes('\r\n\r\n')) {
          upgraded = true;
          // FIN + text, no MASK bit, payload "hi".
          s.write(Buffer.from([0x81, 0x02, 0x68, 0x69]));
        }
      });
      s.write(`GET /api/v1/ws?api_key=${n.api.key} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
      const wasClosed = await closed;
      s.destroy();
      assert.equal(statusOf(text), 101);
      const frames = Buffer.from(text.slice(text.indexOf('\r\n\r\n') + 4), 'latin1');
      // A close frame (opcode 8) whose code is 1002.
      assert.ok(frames.length >= 4 && frames[0] === 0x88 && frames.readUInt16BE(2) === 1002, `frames after the upgrade: ${frames.toString('hex')}`);
      assert.ok(wasClosed);
    },
  );

  test('after all of it the node still answers', alive);
});
