// Every REST route that exists, its success path and each of its error paths, over real HTTP on the store
// chosen by SLUICE_TEST_STORE. Every error body is checked against the catalog shape
// {error, code, message, status[, details]}, and organizations are checked to be invisible to each other.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { MAX_BODY_BYTES } from '../src/io/http/server.js';
import { Api, startTestNode, type TestNode } from './helpers.js';
import { allowOf, assertError, assertInvalid, insertKey, orgOf } from './http-assert.js';

const JOBS = '/api/v1/jobs';
describe('REST routes', () => {
  let n: TestNode;
  let api: Api;
  /** A job id that exists in the default organization (kept pending). */
  let jobId: string;

  before(async () => {
    n = await startTestNode();
    api = n.api;
    jobId = (await api.enqueue({ queue_name: 'routes-fixture', payload: { fixture: true } })).id;
  });
  after(() => n.stop());

  describe('authentication', () => {
    // One request per authenticated route; a 401 must come before anything else is looked at.
    const routes = (): Array<{ method: string; path: string; body?: unknown }> => [
      { method: 'POST', path: JOBS, body: { queue_name: 'auth', payload: {} } },
      { method: 'GET', path: `${JOBS}/${jobId}` },
      { method: 'POST', path: `${JOBS}/claim`, body: { queue_name: 'auth', worker_id: 'w1' } },
      { method: 'POST', path: `${JOBS}/${jobId}/complete`, body: { worker_id: 'w1', lease_id: randomUUID() } },
      { method: 'POST', path: `${JOBS}/${jobId}/fail`, body: { worker_id: 'w1', lease_id: randomUUID(), error: 'x' } },
      { method: 'POST', path: `${JOBS}/${jobId}/heartbeat`, body: { worker_id: 'w1', lease_id: randomUUID() } },
      { method: 'DELETE', path: `${JOBS}/${jobId}` },
    ];

    const refusals = (): Array<{ name: string; headers: Record<string, string>; query?: string }> => [
      { name: 'no Authorization', headers: {} },
      { name: 'a wrong key', headers: { authorization: 'Bearer svc_test_not_a_real_key' } },
      { name: 'Bearer with no token', headers: { authorization: 'Bearer ' } },
      { name: 'Bearer with two tokens', headers: { authorization: `Bearer ${api.key} extra` } },
      { name: 'the Basic scheme', headers: { authorization: `Basic ${Buffer.from(`${api.key}:`).toString('base64')}` } },
      { name: 'the key without a scheme', headers: { authorization: api.key } },
      { name: 'X-API-Key only', headers: { 'x-api-key': api.key } },
      // The query-string refusal holds even beside a valid header.
      { name: '?api_key= and a valid header', headers: { authorization: `Bearer ${api.key}` }, query: `api_key=${api.key}` },
      { name: '?token= and a valid header', headers: { authorization: `Bearer ${api.key}` }, query: `token=${api.key}` },
      { name: '?api_key= alone', headers: {}, query: `api_key=${api.key}` },
      { name: '?token= alone', headers: {}, query: `token=${api.key}` },
    ];

    test('every authenticated route answers 401 unauthorized to each refused credential', async () => {
      const anon = api.as('');
      for (const r of routes()) {
        for (const c of refusals()) {
          const p = c.query ? `${r.path}?${c.query}` : r.path;
          const res = await anon.call(r.method, p, r.body, c.headers);
          assert.equal(res.status, 401, `${r.method} ${r.path} with ${c.name}: ${res.status} ${JSON.stringify(res.body)}`);
          assertError(res, 401, 'UNAUTHORIZED');
        }
      }
    });

    test('an unrelated query parameter beside a valid header is fine; the scheme is case-insensitive', async () => {
      const r = await api.get(`${JOBS}/${jobId}?api_keys=1&tokens=2`);
      assert.equal(r.status, 200);
      const lower = await api.as('').get(`${JOBS}/${jobId}`, { authorization: `bearer ${api.key}` });
      assert.equal(lower.status, 200);
    });

    test('a revoked key is 401', async () => {
      const { key } = await insertKey(n, { organizationId: await orgOf(n, api.key), revoked: true });
      assertError(await api.as(key).get(`${JOBS}/${jobId}`), 401, 'UNAUTHORIZED');
      assertError(await api.as(key).post(JOBS, { queue_name: 'revoked', payload: {} }), 401, 'UNAUTHORIZED');
    });

    test('a key without the route permission is 403 forbidden', async () => {
      const org = await orgOf(n, api.key);
      const reader = api.as((await insertKey(n, { organizationId: org, permissions: ['jobs:read'] })).key);
      const writer = api.as((await insertKey(n, { organizationId: org, permissions: ['jobs:write'] })).key);
      const queues = api.as((await insertKey(n, { organizationId: org, permissions: ['queues:read', 'dlq:write'] })).key);

      assert.equal((await reader.get(`${JOBS}/${jobId}`)).status, 200);
      assertError(await reader.post(JOBS, { queue_name: 'perm', payload: {} }), 403, 'FORBIDDEN');
      assertError(await reader.post(`${JOBS}/claim`, { queue_name: 'perm', worker_id: 'w1' }), 403, 'FORBIDDEN');
      assertError(await reader.post(`${JOBS}/${jobId}/complete`, { worker_id: 'w1', lease_id: randomUUID() }), 403, 'FORBIDDEN');
      assertError(await reader.post(`${JOBS}/${jobId}/fail`, { worker_id: 'w1', lease_id: randomUUID(), error: 'x' }), 403, 'FORBIDDEN');
      assertError(await reader.post(`${JOBS}/${jobId}/heartbeat`, { worker_id: 'w1' }), 403, 'FORBIDDEN');
      assertError(await reader.delete(`${JOBS}/${jobId}`), 403, 'FORBIDDEN');

      assertError(await writer.get(`${JOBS}/${jobId}`), 403, 'FORBIDDEN');
      assert.equal((await writer.post(JOBS, { queue_name: 'perm', payload: {} })).status, 201);

      assertError(await queues.get(`${JOBS}/${jobId}`), 403, 'FORBIDDEN');
      assertError(await queues.post(JOBS, { queue_name: 'perm', payload: {} }), 403, 'FORBIDDEN');
      // The refused requests changed nothing.
      assert.equal((await api.get(`${JOBS}/${jobId}`)).body.status, 'pending');
    });
  });

  describe('POST /api/v1/jobs', () => {
    test('success: every optional field, 201, the secret never echoed', async () => {
      const at = new Date(Date.now() + 3_600_000).toISOString();
      const r = await api.post(JOBS, {
        queue_name: 'Create_1.a-b',
        payload: { nested: { a: [1, 2] } },
        idempotency_key: `create-${randomUUID()}`,
        priority: 100,
        scheduled_at: at,
        max_retries: 100,
        timeout_seconds: 3600,
        completion_webhook: 'https://example.com/hook',
        completion_webhook_secret: 's3cret',
        tags: ['a', 'b'],
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.created, true);
      assert.match(r.body.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.equal(r.body.queue_name, 'Create_1.a-b');
      assert.equal(r.body.status, 'scheduled');
      assert.deepEqual(r.body.payload, { nested: { a: [1, 2] } });
      assert.equal(r.body.priority, 100);
      assert.equal(r.body.max_retries, 100);
      assert.equal(r.body.timeout_seconds, 3600);
      assert.equal(r.body.scheduled_at, at);
      assert.equal(r.body.completion_webhook, 'https://example.com/hook');
      assert.deepEqual(r.body.tags, { a: '', b: '' });
      assert.ok(!JSON.stringify(r.body).includes('s3cret'));
      assert.ok(!('completion_webhook_secret' in r.body));
    });

    test('success at the boundaries: 100-char queue name, priority -100, max_retries 0, http webhook, offset time', async () => {
      const r = await api.post(JOBS, {
        queue_name: 'q'.repeat(100),
        payload: {},
        priority: -100,
        max_retries: 0,
        timeout_seconds: 5,
        completion_webhook: 'http://127.0.0.1:9/cb',
        scheduled_at: '2000-02-29T12:00:00+02:00',
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.priority, -100);
      assert.equal(r.body.max_retries, 0);
      // A time in the past is due now.
      assert.equal(r.body.status, 'pending');
      assert.equal(r.body.scheduled_at, '2000-02-29T10:00:00.000Z');
    });

    const invalid: Array<[string, Record<string, unknown>, string]> = [
      ['queue_name missing', { payload: {} }, 'queue_name'],
      ['queue_name empty', { queue_name: '', payload: {} }, 'queue_name'],
      ['queue_name with a space', { queue_name: 'bad name', payload: {} }, 'queue_name'],
      ['queue_name with a slash', { queue_name: 'a/b', payload: {} }, 'queue_name'],
      ['queue_name with a non-ASCII letter', { queue_name: 'café', payload: {} }, 'queue_name'],
      ['queue_name starting with .', { queue_name: '.hidden', payload: {} }, 'queue_name'],
      ['queue_name starting with -', { queue_name: '-dash', payload: {} }, 'queue_name'],
      ['queue_name of 101 chars', { queue_name: 'q'.repeat(101), payload: {} }, 'queue_name'],
      ['queue_name not a string', { queue_name: 7, payload: {} }, 'queue_name'],
      ['payload missing', { queue_name: 'v' }, 'payload'],
      ['payload an array', { queue_name: 'v', payload: [1] }, 'payload'],
      ['payload a string', { queue_name: 'v', payload: 'x' }, 'payload'],
      ['payload null', { queue_name: 'v', payload: null }, 'payload'],
      ['payload a number', { queue_name: 'v', payload: 5 }, 'payload'],
      ['priority 101', { queue_name: 'v', payload: {}, priority: 101 }, 'priority'],
      ['priority -101', { queue_name: 'v', payload: {}, priority: -101 }, 'priority'],
      ['priority 1.5', { queue_name: 'v', payload: {}, priority: 1.5 }, 'priority'],
      ['priority a string', { queue_name: 'v', payload: {}, priority: '10' }, 'priority'],
      ['max_retries 101', { queue_name: 'v', payload: {}, max_retries: 101 }, 'max_retries'],
      ['max_retries -1', { queue_name: 'v', payload: {}, max_retries: -1 }, 'max_retries'],
      ['max_retries 2.5', { queue_name: 'v', payload: {}, max_retries: 2.5 }, 'max_retries'],
      ['timeout_seconds 4', { queue_name: 'v', payload: {}, timeout_seconds: 4 }, 'timeout_seconds'],
      ['timeout_seconds 3601', { queue_name: 'v', payload: {}, timeout_seconds: 3601 }, 'timeout_seconds'],
      ['scheduled_at words', { queue_name: 'v', payload: {}, scheduled_at: 'tomorrow' }, 'scheduled_at'],
      ['scheduled_at a date only', { queue_name: 'v', payload: {}, scheduled_at: '2030-01-01' }, 'scheduled_at'],
      ['scheduled_at without a zone', { queue_name: 'v', payload: {}, scheduled_at: '2030-01-01T00:00:00' }, 'scheduled_at'],
      ['scheduled_at RFC 2822', { queue_name: 'v', payload: {}, scheduled_at: 'Tue, 01 Jan 2030 00:00:00 GMT' }, 'scheduled_at'],
      ['scheduled_at month 13', { queue_name: 'v', payload: {}, scheduled_at: '2030-13-01T00:00:00Z' }, 'scheduled_at'],
      ['scheduled_at 30 February', { queue_name: 'v', payload: {}, scheduled_at: '2030-02-30T00:00:00Z' }, 'scheduled_at'],
      ['scheduled_at 29 February of a common year', { queue_name: 'v', payload: {}, scheduled_at: '2030-02-29T00:00:00Z' }, 'scheduled_at'],
      ['scheduled_at 31 April', { queue_name: 'v', payload: {}, scheduled_at: '2030-04-31T10:00:00Z' }, 'scheduled_at'],
      ['scheduled_at a number', { queue_name: 'v', payload: {}, scheduled_at: 1_900_000_000_000 }, 'scheduled_at'],
      ['completion_webhook ftp', { queue_name: 'v', payload: {}, completion_webhook: 'ftp://example.com/x' }, 'completion_webhook'],
      ['completion_webhook javascript:', { queue_name: 'v', payload: {}, completion_webhook: 'javascript:alert(1)' }, 'completion_webhook'],
      ['completion_webhook relative', { queue_name: 'v', payload: {}, completion_webhook: '/hook' }, 'completion_webhook'],
      ['completion_webhook not a URL', { queue_name: 'v', payload: {}, completion_webhook: 'not a url' }, 'completion_webhook'],
      ['completion_webhook a number', { queue_name: 'v', payload: {}, completion_webhook: 5 }, 'completion_webhook'],
      ['idempotency_key empty', { queue_name: 'v', payload: {}, idempotency_key: '' }, 'idempotency_key'],
      ['tags with a non-string value', { queue_name: 'v', payload: {}, tags: { k: 5 } }, 'tags'],
    ];
    for (const [name, body, field] of invalid) {
      test(`422 ${name}`, async () => {
        assertInvalid(await api.post(JOBS, body), field);
      });
    }

    test('422 names every missing field at once; an empty body is {} and lacks both', async () => {
      assertInvalid(await api.post(JOBS, {}), 'queue_name', 'payload');
      assertInvalid(await api.post(JOBS), 'queue_name', 'payload');
      assertInvalid(await api.post(JOBS, '  \n'), 'queue_name', 'payload');
    });

    test('422 for a body that is not a JSON object', async () => {
      for (const body of ['null', '[]', '"x"', '5']) assertInvalid(await api.post(JOBS, body), '(body)');
    });

    test('422 for bad JSON', async () => {
      assertInvalid(await api.post(JOBS, '{"queue_name": "v", "payload": {'), '(body)');
      assertInvalid(await api.post(JOBS, "{'queue_name': 'v'}"), '(body)');
    });

    test('413 for a body over the hard ceiling', async () => {
      const big = JSON.stringify({ queue_name: 'big', payload: { x: 'a'.repeat(MAX_BODY_BYTES) } });
      assertError(await api.post(JOBS, big), 413, 'PAYLOAD_TOO_LARGE', ['limit', 'current']);
    });

    test('nothing was enqueued by the refused requests', async () => {
      const rows = await n.node.store.query<{ n: number }>("SELECT count(*)::int AS n FROM jobs WHERE queue_name IN ('v', 'big')");
      assert.equal(rows[0]!.n, 0);
    });
  });

  describe('GET /api/v1/jobs/:id', () => {
    test('success, and an upper-case id names the same job', async () => {
      const r = await api.get(`${JOBS}/${jobId}`);
      assert.equal(r.status, 200);
      assert.equal(r.body.id, jobId);
      assert.equal(r.body.queue_name, 'routes-fixture');
      assert.deepEqual(r.body.payload, { fixture: true });
      const upper = await api.get(`${JOBS}/${jobId.toUpperCase()}`);
      assert.equal(upper.status, 200);
      assert.equal(upper.body.id, jobId);
    });

    test('404 for an unknown id and for ids that are not UUIDs', async () => {
      for (const id of [randomUUID(), 'not-a-uuid', '123', `${jobId}0`, '%E0%A4%A', "1' OR '1'='1"]) {
        assertError(await api.get(`${JOBS}/${encodeURI(id)}`), 404, 'NOT_FOUND');
      }
    });
  });

  describe('POST /api/v1/jobs/claim', () => {
    test('success: jobs with a lease; an empty queue gives {jobs: []}', async () => {
      const id = (await api.enqueue({ queue_name: 'claim-ok', payload: { c: 1 } })).id;
      const r = await api.post(`${JOBS}/claim`, { queue_name: 'claim-ok', worker_id: 'w'.repeat(128), limit: 100, lease_duration_secs: 3600 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(Object.keys(r.body), ['jobs']);
      assert.equal(r.body.jobs.length, 1);
      const [j] = r.body.jobs;
      assert.equal(j.id, id);
      assert.equal(j.status, 'processing');
      assert.equal(j.assigned_worker_id, 'w'.repeat(128));
      assert.deepEqual(j.payload, { c: 1 });
      assert.equal(typeof j.lease_id, 'string');
      assert.ok(Date.parse(j.lease_expires_at) - Date.now() > 3500_000);

      const empty = await api.post(`${JOBS}/claim`, { queue_name: 'claim-ok', worker_id: 'w1', limit: 1, lease_duration_secs: 5 });
      assert.equal(empty.status, 200);
      assert.deepEqual(empty.body, { jobs: [] });
    });

    test('a long poll of up to 30 s returns at once when a job is ready', async () => {
      await api.enqueue({ queue_name: 'claim-wait' });
      const t0 = Date.now();
      const r = await api.post(`${JOBS}/claim`, { queue_name: 'claim-wait', worker_id: 'w1', wait_ms: 30_000 });
      assert.equal(r.status, 200);
      assert.equal(r.body.jobs.length, 1);
      assert.ok(Date.now() - t0 < 10_000);
    });

    const ok = { queue_name: 'claim-bad', worker_id: 'w1' };
    const invalid: Array<[string, Record<string, unknown>, string]> = [
      ['queue_name missing', { worker_id: 'w1' }, 'queue_name'],
      ['queue_name empty', { ...ok, queue_name: '' }, 'queue_name'],
      ['queue_name with bad chars', { ...ok, queue_name: 'a b!' }, 'queue_name'],
      ['queue_name starting with .', { ...ok, queue_name: '.x' }, 'queue_name'],
      ['queue_name of 101 chars', { ...ok, queue_name: 'q'.repeat(101) }, 'queue_name'],
      ['worker_id missing', { queue_name: 'claim-bad' }, 'worker_id'],
      ['worker_id empty', { ...ok, worker_id: '' }, 'worker_id'],
      ['worker_id with a space', { ...ok, worker_id: 'worker 1' }, 'worker_id'],
      ['worker_id with a slash', { ...ok, worker_id: 'w/1' }, 'worker_id'],
      ['worker_id of 129 chars', { ...ok, worker_id: 'w'.repeat(129) }, 'worker_id'],
      ['worker_id a number', { ...ok, worker_id: 1 }, 'worker_id'],
      ['limit 0', { ...ok, limit: 0 }, 'limit'],
      ['limit 501', { ...ok, limit: 501 }, 'limit'],
      ['limit 1.5', { ...ok, limit: 1.5 }, 'limit'],
      ['lease_duration_secs 4', { ...ok, lease_duration_secs: 4 }, 'lease_duration_secs'],
      ['lease_duration_secs 3601', { ...ok, lease_duration_secs: 3601 }, 'lease_duration_secs'],
      ['wait_ms 30001', { ...ok, wait_ms: 30_001 }, 'wait_ms'],
      ['wait_ms -1', { ...ok, wait_ms: -1 }, 'wait_ms'],
    ];
    for (const [name, body, field] of invalid) {
      test(`422 ${name}`, async () => {
        assertInvalid(await api.post(`${JOBS}/claim`, body), field);
      });
    }

    test('422, not a crash, for an empty body: queue_name and worker_id are required', async () => {
      assertInvalid(await api.post(`${JOBS}/claim`), 'queue_name', 'worker_id');
      assertInvalid(await api.post(`${JOBS}/claim`, {}), 'queue_name', 'worker_id');
    });

    test('422 for bad JSON and for a non-object body', async () => {
      assertInvalid(await api.post(`${JOBS}/claim`, '{"queue_name":'), '(body)');
      assertInvalid(await api.post(`${JOBS}/claim`, '[{"queue_name":"x","worker_id":"w"}]'), '(body)');
    });

    test('the refused claims took nothing', async () => {
      const id = (await api.enqueue({ queue_name: 'claim-bad' })).id;
      assertInvalid(await api.post(`${JOBS}/claim`, { ...ok, limit: 0 }), 'limit');
      assert.equal((await api.get(`${JOBS}/${id}`)).body.status, 'pending');
    });
  });

  describe('complete / fail / heartbeat', () => {
    /** A freshly claimed job in its own queue. */
    const claimed = async (queue: string): Promise<{ id: string; lease: string }> => {
      const id = (await api.enqueue({ queue_name: queue, max_retries: 3 })).id;
      const [j] = await api.claim(queue);
      assert.equal(j.id, id);
      return { id, lease: j.lease_id };
    };

    test('success: heartbeat, then complete with a result', async () => {
      const { id, lease } = await claimed('lease-ok');
      const hb = await api.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w1', lease_id: lease, lease_duration_secs: 3600 });
      assert.equal(hb.status, 200, JSON.stringify(hb.body));
      assert.equal(hb.body.id, id);
      assert.equal(hb.body.lease_id, lease);
      assert.ok(Date.parse(hb.body.lease_expires_at) - Date.now() > 3500_000);
      const done = await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: lease, result: [1, 'two'] });
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body.status, 'completed');
      assert.deepEqual((await api.get(`${JOBS}/${id}`)).body.result, [1, 'two']);
    });

    test('success: complete without a result', async () => {
      const { id, lease } = await claimed('lease-ok');
      const done = await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: lease });
      assert.equal(done.status, 200);
      assert.equal(done.body.status, 'completed');
    });

    test('success: fail schedules a retry', async () => {
      const { id, lease } = await claimed('lease-ok');
      const f = await api.post(`${JOBS}/${id}/fail`, { worker_id: 'w1', lease_id: lease, error: 'boom' });
      assert.equal(f.status, 200, JSON.stringify(f.body));
      assert.equal(f.body.status, 'scheduled');
      assert.equal(f.body.last_error, 'boom');
    });

    const cases: Array<{ op: 'complete' | 'fail' | 'heartbeat'; name: string; body: (lease: string) => unknown; field: string }> = [
      { op: 'complete', name: 'worker_id missing', body: (l) => ({ lease_id: l }), field: 'worker_id' },
      { op: 'complete', name: 'worker_id with bad chars', body: (l) => ({ worker_id: 'w 1', lease_id: l }), field: 'worker_id' },
      { op: 'complete', name: 'worker_id of 129 chars', body: (l) => ({ worker_id: 'w'.repeat(129), lease_id: l }), field: 'worker_id' },
      { op: 'complete', name: 'lease_id empty', body: () => ({ worker_id: 'w1', lease_id: '' }), field: 'lease_id' },
      { op: 'complete', name: 'lease_id a number', body: () => ({ worker_id: 'w1', lease_id: 5 }), field: 'lease_id' },
      { op: 'fail', name: 'error missing', body: (l) => ({ worker_id: 'w1', lease_id: l }), field: 'error' },
      { op: 'fail', name: 'error empty', body: (l) => ({ worker_id: 'w1', lease_id: l, error: '' }), field: 'error' },
      { op: 'fail', name: 'error not a string', body: (l) => ({ worker_id: 'w1', lease_id: l, error: { m: 'x' } }), field: 'error' },
      { op: 'fail', name: 'retryable not a boolean', body: (l) => ({ worker_id: 'w1', lease_id: l, error: 'x', retryable: 'no' }), field: 'retryable' },
      { op: 'fail', name: 'worker_id missing', body: (l) => ({ lease_id: l, error: 'x' }), field: 'worker_id' },
      { op: 'heartbeat', name: 'worker_id missing', body: (l) => ({ lease_id: l }), field: 'worker_id' },
      { op: 'heartbeat', name: 'worker_id with bad chars', body: (l) => ({ worker_id: 'w:1', lease_id: l }), field: 'worker_id' },
      { op: 'heartbeat', name: 'lease_duration_secs 4', body: (l) => ({ worker_id: 'w1', lease_id: l, lease_duration_secs: 4 }), field: 'lease_duration_secs' },
      { op: 'heartbeat', name: 'lease_duration_secs 3601', body: (l) => ({ worker_id: 'w1', lease_id: l, lease_duration_secs: 3601 }), field: 'lease_duration_secs' },
      { op: 'heartbeat', name: 'lease_id empty', body: () => ({ worker_id: 'w1', lease_id: '' }), field: 'lease_id' },
    ];

    test('422 for each invalid or missing field, and the lease survives them', async () => {
      const { id, lease } = await claimed('lease-bad');
      for (const c of cases) {
        const r = await api.post(`${JOBS}/${id}/${c.op}`, c.body(lease));
        assert.equal(r.status, 422, `${c.op} ${c.name}: ${r.status} ${JSON.stringify(r.body)}`);
        assertInvalid(r, c.field);
      }
      for (const op of ['complete', 'fail', 'heartbeat']) {
        assertInvalid(await api.post(`${JOBS}/${id}/${op}`), 'worker_id');
        assertInvalid(await api.post(`${JOBS}/${id}/${op}`, '{"worker_id":'), '(body)');
        assertInvalid(await api.post(`${JOBS}/${id}/${op}`, '"w1"'), '(body)');
      }
      assertInvalid(await api.post(`${JOBS}/${id}/complete`), 'worker_id');
      assertInvalid(await api.post(`${JOBS}/${id}/fail`), 'worker_id', 'error');
      // lease_id may be left out (fenced on worker_id alone, test/compat.test.ts): another worker is refused.
      assertError(await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w2' }), 409, 'LEASE_EXPIRED');
      assertError(await api.post(`${JOBS}/${id}/fail`, { worker_id: 'w2', error: 'x' }), 409, 'LEASE_EXPIRED');
      const done = await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: lease });
      assert.equal(done.status, 200, JSON.stringify(done.body));
    });

    test('404 for unknown and non-UUID ids', async () => {
      const bodies = {
        complete: { worker_id: 'w1', lease_id: randomUUID() },
        fail: { worker_id: 'w1', lease_id: randomUUID(), error: 'x' },
        heartbeat: { worker_id: 'w1', lease_id: randomUUID() },
      };
      for (const [op, body] of Object.entries(bodies)) {
        for (const id of [randomUUID(), 'nope', '42']) {
          assertError(await api.post(`${JOBS}/${id}/${op}`, body), 404, 'NOT_FOUND');
        }
      }
    });

    test('409 LEASE_EXPIRED for a wrong lease, a wrong worker, a job never claimed and a finished job', async () => {
      const { id, lease } = await claimed('lease-409');
      const wrongLease = randomUUID();
      for (const r of [
        await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: wrongLease }),
        await api.post(`${JOBS}/${id}/fail`, { worker_id: 'w1', lease_id: wrongLease, error: 'x' }),
        await api.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w1', lease_id: wrongLease }),
        await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: 'not-even-a-uuid' }),
        await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w2', lease_id: lease }),
        await api.post(`${JOBS}/${id}/fail`, { worker_id: 'w2', lease_id: lease, error: 'x' }),
        await api.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w2', lease_id: lease }),
        await api.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w2' }),
      ]) {
        assertError(r, 409, 'LEASE_EXPIRED');
      }
      // The refused reports left the lease intact.
      assert.equal((await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: lease })).status, 200);
      for (const r of [
        await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: lease }),
        await api.post(`${JOBS}/${id}/fail`, { worker_id: 'w1', lease_id: lease, error: 'late' }),
        await api.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w1', lease_id: lease }),
      ]) {
        assertError(r, 409, 'LEASE_EXPIRED');
      }

      const pending = (await api.enqueue({ queue_name: 'lease-409-pending' })).id;
      assertError(await api.post(`${JOBS}/${pending}/complete`, { worker_id: 'w1', lease_id: randomUUID() }), 409, 'LEASE_EXPIRED');
      assertError(await api.post(`${JOBS}/${pending}/heartbeat`, { worker_id: 'w1' }), 409, 'LEASE_EXPIRED');
    });

    test('409 JOB_CANCELLED for the lease holder of a job that was cancelled, LEASE_EXPIRED for another worker', async () => {
      const { id, lease } = await claimed('lease-cancel');
      assert.equal((await api.delete(`${JOBS}/${id}`)).status, 200);
      assertError(await api.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w1', lease_id: lease }), 409, 'JOB_CANCELLED', ['job_status']);
      assertError(await api.post(`${JOBS}/${id}/fail`, { worker_id: 'w1', lease_id: lease, error: 'x' }), 409, 'JOB_CANCELLED', ['job_status']);
      assertError(await api.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w2', lease_id: lease }), 409, 'LEASE_EXPIRED');
    });
  });

  describe('DELETE /api/v1/jobs/:id', () => {
    test('success with no body and with an empty object', async () => {
      const a = (await api.enqueue({ queue_name: 'del' })).id;
      const r = await api.delete(`${JOBS}/${a}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body, { id: a, status: 'cancelled' });
      const b = (await api.enqueue({ queue_name: 'del', scheduled_at: new Date(Date.now() + 3_600_000).toISOString() })).id;
      const s = await api.call('DELETE', `${JOBS}/${b}`, {});
      assert.equal(s.status, 200);
      assert.equal(s.body.status, 'cancelled');
    });

    test('404 for unknown and non-UUID ids', async () => {
      for (const id of [randomUUID(), 'not-a-uuid', 'claim-me']) assertError(await api.delete(`${JOBS}/${id}`), 404, 'NOT_FOUND');
    });

    test('409 conflict for a job already finished', async () => {
      const id = (await api.enqueue({ queue_name: 'del-409' })).id;
      assert.equal((await api.delete(`${JOBS}/${id}`)).status, 200);
      const again = await api.delete(`${JOBS}/${id}`);
      assertError(again, 409, 'JOB_NOT_LIVE', ['job_status']);
      assert.equal(again.body.job_status, 'cancelled');
    });
  });

  describe('health probes', () => {
    test('200 with no credential, with a bogus one, and unaffected by other query parameters', async () => {
      const anon = api.as('');
      for (const p of ['/health', '/health/live', '/health/ready', '/health?verbose=1']) {
        for (const headers of [{}, { authorization: 'Bearer nonsense' }, { 'x-api-key': 'nonsense' }] as Record<string, string>[]) {
          const r = await anon.get(p, headers);
          assert.equal(r.status, 200, `${p}: ${r.status} ${JSON.stringify(r.body)}`);
        }
      }
      assert.deepEqual((await anon.get('/health')).body, { status: 'ok' });
      assert.deepEqual((await anon.get('/health/live')).body, { status: 'ok' });
      assert.deepEqual((await anon.get('/health/ready')).body, { status: 'ready', checks: { store: 'ok' } });
      // A probe does not tell the version.
      assert.ok(!JSON.stringify((await anon.get('/health')).body).includes('version'));
    });

    test('a credential in the query string is refused on the probes too', async () => {
      // The spec excepts only the real-time routes from this rule: a key in a URL ends up in access logs.
      for (const p of ['/health', '/health/live', '/health/ready']) {
        for (const q of [`api_key=${api.key}`, `token=${api.key}`]) assertError(await api.as('').get(`${p}?${q}`), 401, 'UNAUTHORIZED');
      }
    });

    test('/health/ready is 503 unavailable while the store fails; liveness is not', async () => {
      const store = n.node.store as { query: (...args: unknown[]) => Promise<unknown> };
      const original = store.query;
      store.query = async () => {
        throw new Error('connection refused');
      };
      try {
        const r = await api.as('').get('/health/ready');
        assertError(r, 503, 'UNAVAILABLE', ['checks']);
        assert.deepEqual(r.body.checks, { store: 'failed' });
        assert.equal((await api.as('').get('/health/live')).status, 200);
      } finally {
        store.query = original;
      }
      assert.equal((await api.as('').get('/health/ready')).status, 200);
    });
  });

  describe('routing', () => {
    test('unknown routes: 404 with a valid credential, 401 without one (routes are not enumerable anonymously)', async () => {
      const anon = api.as('');
      for (const [method, p] of [
        ['GET', '/nope'],
        ['GET', '/api/v1'],
        ['GET', '/api/v1/nope'],
        ['POST', '/api/v2/jobs'],
        ['GET', `/api/v1/jobs/${jobId}/extra/segment`],
        ['POST', `/api/v1/jobs/${jobId}/unknown-action`],
        ['GET', '/healthz'],
      ] as const) {
        assertError(await api.call(method, p), 404, 'NOT_FOUND');
        for (const who of [anon, api.as('svc_test_not-a-key'), api.as('eyJ.forged.token')]) assertError(await who.call(method, p), 401, 'UNAUTHORIZED');
        // A key in the query string is refused there as on every route.
        assertError(await api.call(method, `${p}?api_key=${api.key}`), 401, 'UNAUTHORIZED');
      }
      // The dashboard's static space is public: its unknown files are 404 for anyone. `/` redirects to the
      // dashboard (test/observability.test.ts).
      for (const who of [api, anon]) assertError(await who.get('/ui/nope'), 404, 'NOT_FOUND');
      // The public routes answer as before without a credential.
      assert.equal((await anon.get('/health')).status, 200);
      assert.equal((await anon.get('/api/v1/openapi.json')).status, 200);
    });

    test('405 with an Allow header for a known path and a wrong method', async () => {
      const cases: Array<[string, string, string[]]> = [
        ['PUT', JOBS, ['POST']],
        ['PATCH', `${JOBS}/${jobId}`, ['GET', 'DELETE']],
        ['PUT', `${JOBS}/${jobId}`, ['GET', 'DELETE']],
        ['GET', `${JOBS}/${jobId}/complete`, ['POST']],
        ['DELETE', `${JOBS}/${jobId}/fail`, ['POST']],
        ['PUT', `${JOBS}/${jobId}/heartbeat`, ['POST']],
        // A static segment decides over a parameter: this is the claim route, not a job id.
        ['GET', `${JOBS}/claim`, ['POST']],
        ['DELETE', `${JOBS}/claim`, ['POST']],
        ['POST', '/health', ['GET']],
        ['DELETE', '/health/live', ['GET']],
        ['POST', '/health/ready', ['GET']],
      ];
      for (const [method, p, allowed] of cases) {
        for (const who of [api, api.as('')]) {
          const r = await who.call(method, p, method === 'GET' ? undefined : {});
          assertError(r, 405, 'METHOD_NOT_ALLOWED');
          const allow = allowOf(r);
          for (const m of allowed) assert.ok(allow.includes(m), `${method} ${p}: Allow "${allow}" lacks ${m}`);
          assert.ok(!allow.includes(method), `${method} ${p}: Allow "${allow}" includes the refused method`);
        }
      }
      // The refused DELETE cancelled nothing.
      assert.equal((await api.get(`${JOBS}/${jobId}`)).body.status, 'pending');
    });
  });

  describe('organization isolation', () => {
    test("another organization's key cannot see, report on, cancel or claim this organization's job", async () => {
      const other = api.as((await insertKey(n)).key);
      const id = (await api.enqueue({ queue_name: 'isolated', payload: { secret: 1 } })).id;

      // The other organization is otherwise fully able to work.
      assert.equal((await other.post(JOBS, { queue_name: 'theirs', payload: {} })).status, 201);

      assertError(await other.get(`${JOBS}/${id}`), 404, 'NOT_FOUND');
      assertError(await other.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: randomUUID() }), 404, 'NOT_FOUND');
      assertError(await other.post(`${JOBS}/${id}/fail`, { worker_id: 'w1', lease_id: randomUUID(), error: 'x' }), 404, 'NOT_FOUND');
      assertError(await other.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w1' }), 404, 'NOT_FOUND');
      assertError(await other.delete(`${JOBS}/${id}`), 404, 'NOT_FOUND');
      const stolen = await other.post(`${JOBS}/claim`, { queue_name: 'isolated', worker_id: 'w1', limit: 100 });
      assert.equal(stolen.status, 200);
      assert.deepEqual(stolen.body, { jobs: [] });

      // Once the owner has claimed it, the other organization cannot report on it even with the real lease.
      const [mine] = await api.claim('isolated');
      assert.equal(mine.id, id);
      assertError(await other.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: mine.lease_id }), 404, 'NOT_FOUND');
      assertError(await other.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w1', lease_id: mine.lease_id }), 404, 'NOT_FOUND');
      assertError(await other.get(`${JOBS}/${id}`), 404, 'NOT_FOUND');
      const done = await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: mine.lease_id });
      assert.equal(done.status, 200);

      // The same queue name in each organization is two queues.
      const theirs = await other.post(`${JOBS}/claim`, { queue_name: 'theirs', worker_id: 'w1' });
      assert.equal(theirs.body.jobs.length, 1);
      assert.deepEqual(await api.claim('theirs'), []);
      assertError(await api.get(`${JOBS}/${theirs.body.jobs[0].id}`), 404, 'NOT_FOUND');
    });

    test('an idempotency key is per organization', async () => {
      const other = api.as((await insertKey(n)).key);
      const key = `shared-${randomUUID()}`;
      const a = await api.post(JOBS, { queue_name: 'idem-iso', payload: { who: 'a' }, idempotency_key: key });
      const b = await other.post(JOBS, { queue_name: 'idem-iso', payload: { who: 'b' }, idempotency_key: key });
      assert.equal(a.status, 201);
      assert.equal(b.status, 201);
      assert.notEqual(a.body.id, b.body.id);
      assert.deepEqual(b.body.payload, { who: 'b' });
    });
  });
});

describe('REST routes: an expired lease (manual clock)', () => {
  const clock = new ManualClock(Date.now());
  let n: TestNode;
  before(async () => {
    n = await startTestNode({ clock });
  });
  after(() => n.stop());

  test('complete, fail and heartbeat on an expired lease are 409 LEASE_EXPIRED; a new claim gets a new lease', async () => {
    const api = n.api;
    const id = (await api.enqueue({ queue_name: 'expiry', max_retries: 3 })).id;
    const [first] = await api.claim('expiry', { lease_duration_secs: 5 });
    assert.equal(first.id, id);
    await clock.advance(5_000);
    assertError(await api.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w1', lease_id: first.lease_id }), 409, 'LEASE_EXPIRED');
    assertError(await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: first.lease_id }), 409, 'LEASE_EXPIRED');
    assertError(await api.post(`${JOBS}/${id}/fail`, { worker_id: 'w1', lease_id: first.lease_id, error: 'x' }), 409, 'LEASE_EXPIRED');
    assertError(await api.post(`${JOBS}/${id}/heartbeat`, { worker_id: 'w1' }), 409, 'LEASE_EXPIRED');

    const [second] = await api.claim('expiry', { lease_duration_secs: 60 });
    assert.equal(second.id, id);
    assert.notEqual(second.lease_id, first.lease_id);
    // The same worker holding the new lease still cannot use the old one.
    assertError(await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: first.lease_id }), 409, 'LEASE_EXPIRED');
    assert.equal((await api.post(`${JOBS}/${id}/complete`, { worker_id: 'w1', lease_id: second.lease_id })).status, 200);
  });
});
