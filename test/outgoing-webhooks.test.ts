// Outgoing webhooks and completion callbacks over real HTTP, with real receivers (node:http on 127.0.0.1):
// CRUD and validation, delivery envelope and headers, signatures and the secret's three states, retries,
// failure counting and auto-disable, the quota (charged on re-enable, exact under 50 racing creates), the
// test delivery and the delivery history, SSRF rules in production, completion callbacks signed and unsigned,
// resume at boot, history pruning, and isolation between organizations.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { blockedAddress, guardedLookup, urlProblem } from '../src/io/webhooks/ssrf.js';
import { loadConfig } from '../src/config.js';
import { startNode } from '../src/node.js';
import { Api, freshStore, sleep, startTestNode, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey, nextLink, QUOTA_EXTRAS } from './http-assert.js';

const HOOKS = '/api/v1/outgoing-webhooks';
const FAST = { WEBHOOK_RETRY_UNIT_MS: '5', WEBHOOK_TIMEOUT_MS: '3000' };

interface Received {
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
}

/** A receiver on 127.0.0.1 that records every POST and answers the next status of `plan` (then `fallback`). */
class Receiver {
  readonly got: Received[] = [];
  plan: number[] = [];
  fallback = 200;
  private server!: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let raw = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (raw += c));
      req.on('end', () => {
        this.got.push({ headers: req.headers, raw, body: JSON.parse(raw) });
        res.statusCode = this.plan.shift() ?? this.fallback;
        res.end('ok');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  events(name: string): Received[] {
    return this.got.filter((g) => g.headers['x-queue-event'] === name);
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const verify = (secret: string, r: Received) =>
  `sha256=${createHmac('sha256', secret).update(`${r.headers['x-queue-timestamp']}.${r.raw}`).digest('hex')}`;

describe('outgoing webhooks', () => {
  let n: TestNode;
  const receivers: Receiver[] = [];
  const receiver = async (): Promise<Receiver> => {
    const r = await new Receiver().start();
    receivers.push(r);
    return r;
  };
  /** An organization of its own (plan pro unless said), neither rate- nor job-limited. */
  const org = async (plan = 'pro'): Promise<Api> => n.api.as((await insertKey(n, { plan })).key);

  before(async () => {
    n = await startTestNode({ env: FAST });
  });
  after(async () => {
    await n.stop();
    for (const r of receivers) await r.stop();
  });

  test('create, get, list (paged), has_secret instead of the secret; 422 on bad input changes nothing', async () => {
    const api = await org();
    const r = await api.post(HOOKS, { name: 'ops', url: 'http://127.0.0.1:9/x', events: ['job.created'], secret: 's3cret-value' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(Object.keys(r.body).sort(), [
      'created_at', 'enabled', 'events', 'failure_count', 'has_secret', 'id', 'last_status', 'name', 'updated_at', 'url',
    ]);
    assert.equal(r.body.has_secret, true);
    assert.equal(r.body.enabled, true);
    assert.equal(r.body.failure_count, 0);
    assert.equal(r.body.last_status, null);
    assert.deepEqual(r.body.events, ['job.created']);
    const got = await api.get(`${HOOKS}/${r.body.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, r.body);
    assert.ok(!JSON.stringify(got.body).includes('s3cret-value'));
    const unsigned = await api.post(HOOKS, { name: 'plain', url: 'https://example.com/h', events: ['job.failed', 'queue.paused'] });
    assert.equal(unsigned.body.has_secret, false);
    await api.post(HOOKS, { name: 'third', url: 'https://example.com/3', events: ['job.created'], enabled: false });

    const bad: Array<[unknown, string]> = [
      [{ url: 'https://example.com', events: ['job.created'] }, 'name'],
      [{ name: ' ', url: 'https://example.com', events: ['job.created'] }, 'name'],
      [{ name: 'x', events: ['job.created'] }, 'url'],
      [{ name: 'x', url: 'not a url', events: ['job.created'] }, 'url'],
      [{ name: 'x', url: 'ftp://example.com/x', events: ['job.created'] }, 'url'],
      [{ name: 'x', url: 'https://example.com' }, 'events'],
      [{ name: 'x', url: 'https://example.com', events: [] }, 'events'],
      [{ name: 'x', url: 'https://example.com', events: ['job.exploded'] }, 'events.0'],
      [{ name: 'x', url: 'https://example.com', events: ['job.created', 'job.created'] }, 'events'],
      [{ name: 'x', url: 'https://example.com', events: ['job.created'], secret: '' }, 'secret'],
      [{ name: 'x', url: 'https://example.com', events: ['job.created'], enabled: 'yes' }, 'enabled'],
    ];
    for (const [body, field] of bad) assertInvalid(await api.post(HOOKS, body), field);
    assertInvalid(await api.post(HOOKS, '{"name":'), '(body)');

    const page1 = await api.get(`${HOOKS}?limit=2`);
    assert.equal(page1.status, 200);
    assert.equal(page1.body.length, 2);
    const page2 = await api.get(nextLink(page1)!);
    assert.equal(page2.body.length, 1);
    assert.equal(nextLink(page2), null);
    assert.deepEqual([...page1.body, ...page2.body].map((w: any) => w.name), ['third', 'plain', 'ops']);
    assertInvalid(await api.get(`${HOOKS}?limit=101`), 'limit');
    assertInvalid(await api.get(`${HOOKS}?cursor=nope`), 'cursor');
    assertError(await api.get(`${HOOKS}/${randomUUID()}`), 404, 'NOT_FOUND');
    assertError(await api.get(`${HOOKS}/not-a-uuid`), 404, 'NOT_FOUND');

    // PUT: partial updates, 422 changes nothing, 404 for unknown ids.
    const put = await api.put(`${HOOKS}/${r.body.id}`, { name: 'ops2', events: ['job.completed', 'job.failed'] });
    assert.equal(put.status, 200);
    assert.equal(put.body.name, 'ops2');
    assert.equal(put.body.url, 'http://127.0.0.1:9/x');
    assert.equal(put.body.has_secret, true);
    assertInvalid(await api.put(`${HOOKS}/${r.body.id}`, { events: ['nope'], name: 'changed' }), 'events.0');
    assertInvalid(await api.put(`${HOOKS}/${r.body.id}`, { url: 'gopher://x' }), 'url');
    assertInvalid(await api.put(`${HOOKS}/${r.body.id}`, { secret: 42 }), 'secret');
    assert.deepEqual((await api.get(`${HOOKS}/${r.body.id}`)).body, put.body);
    assertError(await api.put(`${HOOKS}/${randomUUID()}`, { name: 'x' }), 404, 'NOT_FOUND');

    const del = await api.delete(`${HOOKS}/${unsigned.body.id}`);
    assert.equal(del.status, 200);
    assert.deepEqual(del.body, { id: unsigned.body.id, deleted: true });
    assertError(await api.get(`${HOOKS}/${unsigned.body.id}`), 404, 'NOT_FOUND');
    assertError(await api.delete(`${HOOKS}/${unsigned.body.id}`), 404, 'NOT_FOUND');
  });

  test('the routes need "*"', async () => {
    const { key } = await insertKey(n, { plan: 'pro', permissions: ['jobs:read', 'jobs:write', 'queues:read', 'queues:write'] });
    const limited = n.api.as(key);
    assertError(await limited.get(HOOKS), 403, 'FORBIDDEN');
    assertError(await limited.post(HOOKS, { name: 'x', url: 'https://example.com', events: ['job.created'] }), 403, 'FORBIDDEN');
  });

  test('a subscribed event arrives once with the envelope and headers, signed; other events are not sent', async () => {
    const api = await org();
    const rx = await receiver();
    const sentinel = await receiver();
    const secret = 'whsec-one';
    const hook = (await api.post(HOOKS, { name: 'created', url: rx.url, events: ['job.created'], secret })).body;
    await api.post(HOOKS, { name: 'sentinel', url: sentinel.url, events: ['job.completed'] });
    const job = await api.enqueue({ queue_name: 'wh', payload: { a: 1 } });
    await until('job.created delivery', () => rx.got.length === 1);
    const [d] = rx.got;
    assert.deepEqual(Object.keys(d!.body).sort(), ['created_at', 'data', 'event', 'id']);
    assert.equal(d!.body.event, 'job.created');
    assert.equal(d!.body.data.job_id, job.id);
    assert.equal(d!.body.data.queue_name, 'wh');
    assert.equal(d!.body.data.status, 'pending');
    assert.ok(!('organization_id' in d!.body.data) && !('organization_id' in d!.body));
    assert.equal(d!.headers['content-type'], 'application/json');
    assert.equal(d!.headers['x-queue-event'], 'job.created');
    assert.equal(d!.headers['x-queue-delivery-attempt'], '1');
    assert.match(d!.headers['x-queue-timestamp'] as string, /^\d{10}$/);
    assert.ok(Math.abs(Number(d!.headers['x-queue-timestamp']) - Date.now() / 1000) < 60);
    assert.equal(d!.headers['x-queue-signature'], verify(secret, d!));

    // Completing the job: the sentinel hears job.completed; the job.created endpoint hears nothing more.
    const [claimed] = await api.claim('wh');
    await api.post(`/api/v1/jobs/${claimed.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id, result: { ok: true } });
    await until('sentinel', () => sentinel.got.length === 1);
    assert.equal(sentinel.got[0]!.body.data.result.ok, true);
    assert.equal(sentinel.got[0]!.headers['x-queue-signature'], undefined);
    await sleep(100);
    assert.equal(rx.got.length, 1);

    const history = await api.get(`${HOOKS}/${hook.id}/deliveries`);
    assert.equal(history.status, 200);
    assert.equal(history.body.length, 1);
    assert.equal(history.body[0].status, 'success');
    assert.equal(history.body[0].attempts, 1);
    assert.equal(history.body[0].response_status, 200);
    assert.equal(history.body[0].event_id, d!.body.id);
    const after = (await api.get(`${HOOKS}/${hook.id}`)).body;
    assert.equal(after.last_status, 'success');
    assert.equal(after.failure_count, 0);
  });

  test('every selectable event reaches an endpoint subscribed to it: job, queue, worker and schedule events', async () => {
    const api = await org();
    const rx = await receiver();
    const names = [
      'job.created', 'job.started', 'job.completed', 'job.failed', 'job.cancelled', 'queue.paused', 'queue.resumed',
      'worker.registered', 'worker.deregistered', 'schedule.triggered',
    ];
    assert.equal((await api.post(HOOKS, { name: 'all', url: rx.url, events: names })).status, 201);
    const done = await api.enqueue({ queue_name: 'every', payload: {} });
    const failing = await api.enqueue({ queue_name: 'every', payload: {}, max_retries: 0 });
    const [c1, c2] = await api.claim('every', { limit: 2 });
    assert.equal((await api.post(`/api/v1/jobs/${c1.id}/complete`, { worker_id: 'w1', lease_id: c1.lease_id })).status, 200);
    assert.equal((await api.post(`/api/v1/jobs/${c2.id}/fail`, { worker_id: 'w1', lease_id: c2.lease_id, error: 'boom' })).status, 200);
    const cancelled = await api.enqueue({ queue_name: 'every', payload: {} });
    assert.equal((await api.delete(`/api/v1/jobs/${cancelled.id}`)).status, 200);
    assert.equal((await api.post('/api/v1/queues/every/pause', {})).status, 200);
    assert.equal((await api.post('/api/v1/queues/every/resume')).status, 200);
    assert.equal((await api.post('/api/v1/workers/register', { worker_id: `hooked-${randomUUID()}` })).status, 201);
    const worker = (await api.get('/api/v1/workers')).body[0].worker_id as string;
    assert.equal((await api.post(`/api/v1/workers/${worker}/deregister`)).status, 200);
    const schedule = await api.post('/api/v1/schedules', { name: 'hooked', queue_name: 'every', cron_expression: '0 0 0 1 1 *', timezone: 'UTC' });
    assert.equal(schedule.status, 201, JSON.stringify(schedule.body));
    assert.equal((await api.post(`/api/v1/schedules/${schedule.body.id}/trigger`)).status, 201);
    await until('one delivery of every event', () => names.every((name) => rx.events(name).length > 0));
    assert.equal(rx.events('job.completed')[0]!.body.data.job_id, done.id);
    assert.equal(rx.events('job.failed')[0]!.body.data.job_id, failing.id);
    assert.equal(rx.events('job.cancelled')[0]!.body.data.job_id, cancelled.id);
    assert.equal(rx.events('worker.registered')[0]!.body.data.worker_id, worker);
    assert.equal(rx.events('schedule.triggered')[0]!.body.data.schedule_id, schedule.body.id);
  });

  test('secret: omitted keeps it, a string replaces it, null clears it (no signature header at all)', async () => {
    const api = await org();
    const rx = await receiver();
    const hook = (await api.post(HOOKS, { name: 's', url: rx.url, events: ['job.created'], secret: 'first' })).body;
    const send = async (count: number) => {
      await api.enqueue({ queue_name: 'sec', payload: {} });
      await until(`delivery ${count}`, () => rx.got.length === count);
      return rx.got[count - 1]!;
    };
    assert.equal((await api.put(`${HOOKS}/${hook.id}`, { name: 'renamed' })).body.has_secret, true);
    assert.equal((await send(1)).headers['x-queue-signature'], verify('first', rx.got[0]!));
    assert.equal((await api.put(`${HOOKS}/${hook.id}`, { secret: 'second' })).body.has_secret, true);
    const second = await send(2);
    assert.equal(second.headers['x-queue-signature'], verify('second', second));
    assert.notEqual(second.headers['x-queue-signature'], verify('first', second));
    assert.equal((await api.put(`${HOOKS}/${hook.id}`, { secret: null })).body.has_secret, false);
    const third = await send(3);
    assert.ok(!('x-queue-signature' in third.headers));
    const rows = await n.node.store.query('SELECT secret FROM outgoing_webhooks WHERE id = $1', [hook.id]);
    assert.equal(rows[0]!.secret, null);
  });

  test('500 twice then 200: one delivery, 3 attempts, success; always 500: failure_count counts deliveries', async () => {
    const api = await org();
    const flaky = await receiver();
    flaky.plan = [500, 500];
    const hook = (await api.post(HOOKS, { name: 'flaky', url: flaky.url, events: ['job.created'] })).body;
    await api.enqueue({ queue_name: 'retry', payload: {} });
    await until('three attempts', () => flaky.got.length === 3);
    assert.deepEqual(flaky.got.map((g) => g.headers['x-queue-delivery-attempt']), ['1', '2', '3']);
    assert.equal(new Set(flaky.got.map((g) => g.body.id)).size, 1, 'every attempt carries the same event');
    assert.equal(new Set(flaky.got.map((g) => g.raw)).size, 1, 'and the same bytes');
    await until('success recorded', async () => (await api.get(`${HOOKS}/${hook.id}`)).body.last_status === 'success');
    const [d] = (await api.get(`${HOOKS}/${hook.id}/deliveries`)).body;
    assert.equal(d.status, 'success');
    assert.equal(d.attempts, 3);

    const down = await receiver();
    down.fallback = 500;
    const dead = (await api.post(HOOKS, { name: 'down', url: down.url, events: ['job.cancelled'] })).body;
    const job = await api.enqueue({ queue_name: 'retry2', payload: {} });
    await api.delete(`/api/v1/jobs/${job.id}`);
    await until('first failure', async () => (await api.get(`${HOOKS}/${dead.id}`)).body.failure_count === 1);
    const job2 = await api.enqueue({ queue_name: 'retry2', payload: {} });
    await api.delete(`/api/v1/jobs/${job2.id}`);
    await until('second failure', async () => (await api.get(`${HOOKS}/${dead.id}`)).body.failure_count === 2);
    const w = (await api.get(`${HOOKS}/${dead.id}`)).body;
    assert.equal(w.last_status, 'failed');
    assert.equal(w.enabled, true);
    assert.equal(down.got.length, 10);
    const ds = (await api.get(`${HOOKS}/${dead.id}/deliveries`)).body;
    assert.deepEqual(ds.map((x: any) => [x.status, x.attempts, x.response_status]), [['failed', 5, 500], ['failed', 5, 500]]);

    // A success resets the count.
    down.fallback = 200;
    const job3 = await api.enqueue({ queue_name: 'retry2', payload: {} });
    await api.delete(`/api/v1/jobs/${job3.id}`);
    await until('reset', async () => (await api.get(`${HOOKS}/${dead.id}`)).body.last_status === 'success');
    assert.equal((await api.get(`${HOOKS}/${dead.id}`)).body.failure_count, 0);
  });

  test('20 consecutive failed deliveries: auto_disabled, no further deliveries, slot freed; re-enabling is charged', async () => {
    const api = await org('free'); // 1 webhook
    const down = await receiver();
    down.fallback = 503;
    const hook = (await api.post(HOOKS, { name: 'down', url: down.url, events: ['job.created'] })).body;
    assertError(await api.post(HOOKS, { name: 'over', url: down.url, events: ['job.created'] }), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    for (let i = 0; i < 20; i++) await api.enqueue({ queue_name: 'ad', payload: { i } });
    await until('auto-disable', async () => (await api.get(`${HOOKS}/${hook.id}`)).body.enabled === false, 20_000);
    const w = (await api.get(`${HOOKS}/${hook.id}`)).body;
    assert.equal(w.last_status, 'auto_disabled');
    assert.equal(w.failure_count, 20);
    assert.equal(down.got.length, 100);

    // The slot is free: a second endpoint fits, and it hears the next events while the disabled one does not.
    const ok = await receiver();
    const second = await api.post(HOOKS, { name: 'ok', url: ok.url, events: ['job.created'] });
    assert.equal(second.status, 201, JSON.stringify(second.body));
    for (let i = 0; i < 3; i++) await api.enqueue({ queue_name: 'ad', payload: { later: i } });
    await until('the live endpoint', () => ok.got.length === 3);
    await sleep(100);
    assert.equal(down.got.length, 100);
    assert.equal((await api.get(`${HOOKS}/${hook.id}/deliveries`)).body.length, 20);

    // At the cap, PUT enabled: true is a 429 and changes nothing.
    const refused = await api.put(`${HOOKS}/${hook.id}`, { enabled: true, name: 'again' });
    assertError(refused, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(refused.body.resource, 'webhooks');
    assert.equal(refused.body.limit, 1);
    const still = (await api.get(`${HOOKS}/${hook.id}`)).body;
    assert.equal(still.enabled, false);
    assert.equal(still.name, 'down');
    // Disabling the other one frees the slot; enabling this one takes it and starts the count over.
    assert.equal((await api.put(`${HOOKS}/${second.body.id}`, { enabled: false })).body.enabled, false);
    const back = await api.put(`${HOOKS}/${hook.id}`, { enabled: true });
    assert.equal(back.status, 200, JSON.stringify(back.body));
    assert.equal(back.body.enabled, true);
    assert.equal(back.body.failure_count, 0);
    assert.equal(back.body.last_status, null);
    // Enabling an enabled endpoint is not charged twice.
    assert.equal((await api.put(`${HOOKS}/${hook.id}`, { enabled: true })).status, 200);
    assertError(await api.put(`${HOOKS}/${second.body.id}`, { enabled: true }), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
  });

  test('quota: exact at the limit with 50 racing creates; disabled endpoints and deletes free slots', async () => {
    const api = await org('starter'); // 5 webhooks
    const body = (i: number) => ({ name: `h${i}`, url: 'https://example.com/x', events: ['job.created'] });
    for (let i = 0; i < 4; i++) assert.equal((await api.post(HOOKS, body(i))).status, 201);
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => api.post(HOOKS, body(100 + i))));
    assert.equal(rs.filter((r) => r.status === 201).length, 1);
    const over = rs.filter((r) => r.status === 429);
    assert.equal(over.length, 49);
    for (const r of over) {
      assertError(r, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
      assert.equal(r.body.resource, 'webhooks');
      assert.equal(r.body.current, 5);
      assert.equal(r.body.limit, 5);
      assert.equal(r.body.plan, 'starter');
    }
    const all = (await api.get(`${HOOKS}?limit=100`)).body;
    assert.equal(all.length, 5);
    // A disabled endpoint takes no slot.
    assert.equal((await api.post(HOOKS, { ...body(200), enabled: false })).status, 201);
    assertError(await api.post(HOOKS, body(201)), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal((await api.delete(`${HOOKS}/${all[0].id}`)).status, 200);
    assert.equal((await api.post(HOOKS, body(202))).status, 201);
    assertError(await api.post(HOOKS, body(203)), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
  });

  test('test delivery: webhook.test sent now, outcome answered, kept in the history; history shows at most 100', async () => {
    const api = await org();
    const rx = await receiver();
    const hook = (await api.post(HOOKS, { name: 't', url: rx.url, events: ['job.created'], secret: 'tsec' })).body;
    const r = await api.post(`${HOOKS}/${hook.id}/test`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, 'success');
    assert.equal(r.body.event, 'webhook.test');
    assert.equal(r.body.attempts, 1);
    assert.equal(r.body.response_status, 200);
    assert.equal(rx.got.length, 1);
    assert.equal(rx.got[0]!.headers['x-queue-event'], 'webhook.test');
    assert.equal(rx.got[0]!.body.event, 'webhook.test');
    assert.equal(rx.got[0]!.body.data.webhook_id, hook.id);
    assert.equal(rx.got[0]!.headers['x-queue-signature'], verify('tsec', rx.got[0]!));
    rx.fallback = 418;
    const failed = await api.post(`${HOOKS}/${hook.id}/test`);
    assert.equal(failed.body.status, 'failed');
    assert.equal(failed.body.attempts, 1);
    assert.equal(failed.body.response_status, 418);
    // A failed manual test is no failed delivery.
    assert.equal((await api.get(`${HOOKS}/${hook.id}`)).body.failure_count, 0);
    const hist = (await api.get(`${HOOKS}/${hook.id}/deliveries`)).body;
    assert.deepEqual(hist.map((d: any) => [d.id, d.status]), [[failed.body.id, 'failed'], [r.body.id, 'success']]);
    assertError(await api.post(`${HOOKS}/${randomUUID()}/test`), 404, 'NOT_FOUND');

    rx.fallback = 200;
    await Promise.all(Array.from({ length: 104 }, (_, i) => api.enqueue({ queue_name: 'many', payload: { i } })));
    await until('104 deliveries', async () => {
      const rows = await n.node.store.query(
        "SELECT count(*)::int AS c FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'success'",
        [hook.id],
      );
      return rows[0]!.c === 105;
    });
    const newest = await api.get(`${HOOKS}/${hook.id}/deliveries`);
    assert.equal(newest.body.length, 100);
    assert.ok(newest.body.every((d: any) => d.event === 'job.created'), 'the oldest (the tests) fall outside the newest 100');
    assert.equal((await api.get(`${HOOKS}/${hook.id}/deliveries?limit=5`)).body.length, 5);
    assertInvalid(await api.get(`${HOOKS}/${hook.id}/deliveries?limit=101`), 'limit');
  });

  test('completion callbacks: flat body, signed with the job secret or unsigned; error on a terminal failure', async () => {
    const api = await org();
    const rx = await receiver();
    const watcher = await receiver();
    await api.post(HOOKS, { name: 'all', url: watcher.url, events: ['job.completed', 'job.failed', 'job.created'] });
    const secret = 'job-callback-secret';
    const signed = await api.enqueue({ queue_name: 'cb', payload: {}, completion_webhook: rx.url, completion_webhook_secret: secret });
    assert.ok(!JSON.stringify(signed).includes(secret));
    const got = await api.get(`/api/v1/jobs/${signed.id}`);
    assert.equal(got.body.completion_webhook, rx.url);
    assert.ok(!('completion_webhook_secret' in got.body) && !JSON.stringify(got.body).includes(secret));
    let [c] = await api.claim('cb');
    assert.ok(!JSON.stringify(c).includes(secret));
    await api.post(`/api/v1/jobs/${c.id}/complete`, { worker_id: 'w1', lease_id: c.lease_id, result: { total: 42 } });
    await until('signed callback', () => rx.got.length === 1);
    const s = rx.got[0]!;
    assert.deepEqual(Object.keys(s.body).sort(), ['created_at', 'event', 'id', 'job_id', 'queue_name', 'result', 'status']);
    assert.equal(s.body.event, 'job.completed');
    assert.equal(s.body.job_id, signed.id);
    assert.equal(s.body.queue_name, 'cb');
    assert.equal(s.body.status, 'completed');
    assert.deepEqual(s.body.result, { total: 42 });
    assert.equal(s.headers['x-queue-event'], 'job.completed');
    assert.equal(s.headers['x-queue-signature'], verify(secret, s));

    const plain = await api.enqueue({ queue_name: 'cb', payload: {}, completion_webhook: rx.url });
    [c] = await api.claim('cb');
    assert.equal(c.id, plain.id);
    await api.post(`/api/v1/jobs/${c.id}/complete`, { worker_id: 'w1', lease_id: c.lease_id });
    await until('unsigned callback', () => rx.got.length === 2);
    assert.ok(!('x-queue-signature' in rx.got[1]!.headers));
    assert.equal(rx.got[1]!.body.result, null);

    // A failure with retries left is not terminal: no callback. The last one is, with `error`.
    const failing = await api.enqueue({ queue_name: 'cb', payload: {}, completion_webhook: rx.url, max_retries: 1 });
    [c] = await api.claim('cb');
    await api.post(`/api/v1/jobs/${c.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: 'first' });
    await n.node.store.query('UPDATE jobs SET scheduled_at = now() WHERE id = $1', [failing.id]);
    const none = await api.enqueue({ queue_name: 'cb', payload: {} });
    await api.delete(`/api/v1/jobs/${none.id}`);
    const dead = await api.enqueue({ queue_name: 'cb2', payload: {}, completion_webhook: rx.url, max_retries: 0 });
    [c] = await api.claim('cb2');
    await api.post(`/api/v1/jobs/${c.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: 'broken' });
    await until('failure callback', () => rx.got.length === 3);
    const f = rx.got[2]!;
    assert.deepEqual(Object.keys(f.body).sort(), ['created_at', 'error', 'event', 'id', 'job_id', 'queue_name', 'status']);
    assert.equal(f.body.job_id, dead.id);
    assert.equal(f.body.event, 'job.failed');
    assert.equal(f.body.status, 'deadletter');
    assert.equal(f.body.error, 'broken');
    await sleep(100);
    assert.equal(rx.got.length, 3);
    // The organization's endpoint never sees the callback secret or the internal flag.
    await until('watcher', () => watcher.events('job.completed').length === 2);
    for (const g of watcher.got) {
      assert.ok(!g.raw.includes(secret));
      assert.ok(!('callback' in g.body.data));
    }
  });

  test('a dead-lettered job retried from the DLQ keeps its completion callback', async () => {
    const api = await org();
    const rx = await receiver();
    const job = await api.enqueue({ queue_name: 'revive', payload: {}, completion_webhook: rx.url, max_retries: 0 });
    let [c] = await api.claim('revive');
    await api.post(`/api/v1/jobs/${c.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: 'once' });
    await until('deadletter callback', () => rx.got.length === 1);
    assert.equal(rx.got[0]!.body.status, 'deadletter');
    assert.equal((await api.post(`/api/v1/jobs/${job.id}/retry`)).status, 200);
    [c] = await api.claim('revive');
    assert.equal(c.id, job.id);
    await api.post(`/api/v1/jobs/${c.id}/complete`, { worker_id: 'w1', lease_id: c.lease_id, result: 7 });
    await until('completion callback', () => rx.got.length === 2);
    assert.equal(rx.got[1]!.body.status, 'completed');
    assert.equal(rx.got[1]!.body.result, 7);
  });

  test('isolation: another organization can neither see nor touch an endpoint, nor hear its events', async () => {
    const a = await org();
    const b = await org();
    const rxA = await receiver();
    const rxB = await receiver();
    const hook = (await a.post(HOOKS, { name: 'a', url: rxA.url, events: ['job.created'] })).body;
    const hookB = (await b.post(HOOKS, { name: 'b', url: rxB.url, events: ['job.created'] })).body;
    const id = hook.id;
    assertError(await b.get(`${HOOKS}/${id}`), 404, 'NOT_FOUND');
    assertError(await b.put(`${HOOKS}/${id}`, { name: 'stolen', enabled: false }), 404, 'NOT_FOUND');
    assertError(await b.delete(`${HOOKS}/${id}`), 404, 'NOT_FOUND');
    assertError(await b.post(`${HOOKS}/${id}/test`), 404, 'NOT_FOUND');
    assertError(await b.get(`${HOOKS}/${id}/deliveries`), 404, 'NOT_FOUND');
    assert.deepEqual((await b.get(HOOKS)).body.map((w: any) => w.id), [hookB.id]);
    assert.equal(rxA.got.length, 0, 'a 404 test sends nothing');
    assert.equal((await a.get(`${HOOKS}/${id}`)).body.name, 'a');

    await a.enqueue({ queue_name: 'iso', payload: {} });
    await until('a hears its event', () => rxA.got.length === 1);
    await sleep(100);
    assert.equal(rxB.got.length, 0);
    await b.enqueue({ queue_name: 'iso', payload: {} });
    await until('b hears its own', () => rxB.got.length === 1);
    assert.equal(rxA.got.length, 1);
  });

  test('history older than the plan keeps is pruned; pending deliveries are kept', async () => {
    const { key, organizationId } = await insertKey(n, { plan: 'free' }); // 1 day
    const api = n.api.as(key);
    const hook = (await api.post(HOOKS, { name: 'p', url: 'https://example.com/p', events: ['job.created'] })).body;
    const insert = (status: string, ageMs: number) =>
      n.node.store.query(
        `INSERT INTO webhook_deliveries (id, organization_id, kind, webhook_id, event_id, event, body, status, created_at)
         VALUES ($1, $2, 'webhook', $3, 'e', 'job.created', '{}', $4, $5)`,
        [randomUUID(), organizationId, hook.id, status, new Date(Date.now() - ageMs)],
      );
    await insert('success', 2 * 86_400_000);
    await insert('failed', 2 * 86_400_000);
    await insert('success', 3_600_000);
    const { deliveries } = await n.node.retention.sweepOnce();
    assert.ok(deliveries >= 2);
    const left = await n.node.store.query('SELECT status FROM webhook_deliveries WHERE webhook_id = $1', [hook.id]);
    assert.equal(left.length, 1);
  });
});

describe('outgoing webhooks across a restart', () => {
  test('a pending delivery is resumed at boot from its next attempt; the quota counts enabled endpoints', async () => {
    const store = await freshStore();
    const rx = await new Receiver().start();
    const cb = await new Receiver().start();
    try {
      const first = await startTestNode({ store, env: FAST });
      const { key, organizationId } = await insertKey(first, { plan: 'free' });
      let api = first.api.as(key);
      const hook = (await api.post(HOOKS, { name: 'r', url: rx.url, events: ['job.created'], secret: 'rs' })).body;
      const body = JSON.stringify({ id: 'evt-1', event: 'job.created', created_at: new Date().toISOString(), data: { job_id: 'x' } });
      await first.node.store.query(
        `INSERT INTO webhook_deliveries (id, organization_id, kind, webhook_id, event_id, event, body, status, attempts, created_at)
         VALUES ($1, $2, 'webhook', $3, 'evt-1', 'job.created', $4, 'pending', 2, now())`,
        [randomUUID(), organizationId, hook.id, body],
      );
      // A live job with a callback: its actor is rebuilt from rows after the restart and still knows it.
      const live = await api.as(key).enqueue({ queue_name: 'restart', payload: {}, completion_webhook: cb.url });
      await first.stop();
      assert.equal(rx.got.filter((g) => g.body.id === 'evt-1').length, 0);
      // The store has its organization already: no bootstrap key this time.
      const env = { ...first.env };
      const n = await startNode({ config: loadConfig(env) });
      try {
        api = new Api(n.url, key);
        await until('resumed delivery', () => rx.got.some((g) => g.body.id === 'evt-1'));
        const resumed = rx.got.filter((g) => g.body.id === 'evt-1');
        assert.equal(resumed.length, 1);
        assert.equal(resumed[0]!.raw, body);
        assert.equal(resumed[0]!.headers['x-queue-delivery-attempt'], '3');
        assert.equal(resumed[0]!.headers['x-queue-signature'], verify('rs', resumed[0]!));
        const evt1 = async () => (await api.get(`${HOOKS}/${hook.id}/deliveries`)).body.find((d: any) => d.event_id === 'evt-1');
        await until('closed', async () => (await evt1())?.status === 'success');
        assert.equal((await evt1()).attempts, 3);
        const [c] = await api.claim('restart');
        assert.equal(c.id, live.id);
        await api.post(`/api/v1/jobs/${c.id}/complete`, { worker_id: 'w1', lease_id: c.lease_id });
        await until('callback after restart', () => cb.got.some((g) => g.body.job_id === live.id));
        // Rebuilt from rows: the one enabled endpoint fills the free plan.
        assertError(await api.post(HOOKS, { name: 'r2', url: rx.url, events: ['job.created'] }), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
      } finally {
        await n.stop();
      }
    } finally {
      await rx.stop();
      await cb.stop();
      await store.dispose();
    }
  });
});

describe('SSRF rules', () => {
  test('the literal checks: production refuses http and private, loopback, link-local and metadata hosts', () => {
    const prod = { httpsOnly: true, blockPrivate: true };
    const local = { httpsOnly: false, blockPrivate: false };
    assert.equal(urlProblem('http://127.0.0.1:8080/x', local), null);
    assert.equal(urlProblem('https://example.com/x', prod), null);
    assert.equal(urlProblem('http://example.com/x', prod), 'must use https');
    for (const host of ['127.0.0.1', 'localhost', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '[::1]', '[fc00::1]', '[fe80::1]', '[::ffff:10.0.0.1]', '0.0.0.0']) {
      assert.match(urlProblem(`https://${host}/x`, prod) ?? '', /private/, host);
    }
    for (const ip of ['8.8.8.8', '172.32.0.1', '2606:4700::1111']) assert.equal(blockedAddress(ip), false, ip);
  });

  test('the resolved addresses are checked when a delivery connects', async () => {
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => guardedLookup('localhost', {}, (e) => resolve(e)));
    assert.equal(err?.code, 'EBLOCKEDADDRESS');
  });

  test('a production node refuses http:// and private addresses with 422; the test node accepts http://127.0.0.1', async () => {
    const n = await startTestNode({ env: { NODE_ENV: 'production', JWT_SECRET: 'p'.repeat(32) } });
    try {
      const api = n.api;
      const mk = (url: string) => api.post(HOOKS, { name: 'x', url, events: ['job.created'] });
      for (const url of ['http://example.com/h', 'https://127.0.0.1/h', 'https://localhost:8443/h', 'https://10.0.0.8/h', 'https://192.168.0.2/h', 'https://172.20.1.1/h', 'https://169.254.169.254/latest', 'https://[::1]/h']) {
        assertInvalid(await mk(url), 'url');
      }
      assert.equal((await api.get(HOOKS)).body.length, 0);
      const ok = await mk('https://example.com/h');
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assertInvalid(await api.put(`${HOOKS}/${ok.body.id}`, { url: 'https://192.168.1.1/x' }), 'url');
      assertInvalid(await api.put(`${HOOKS}/${ok.body.id}`, { url: 'http://example.com/x' }), 'url');
      assert.equal((await api.get(`${HOOKS}/${ok.body.id}`)).body.url, 'https://example.com/h');
      // Completion callbacks follow the same rules.
      assertInvalid(await api.post('/api/v1/jobs', { queue_name: 'q', payload: {}, completion_webhook: 'http://example.com/cb' }), 'completion_webhook');
      assertInvalid(await api.post('/api/v1/jobs', { queue_name: 'q', payload: {}, completion_webhook: 'https://10.0.0.1/cb' }), 'completion_webhook');
      assert.equal((await api.post('/api/v1/jobs', { queue_name: 'q', payload: {}, completion_webhook: 'https://example.com/cb' })).status, 201);
    } finally {
      await n.stop();
    }
  });
});
