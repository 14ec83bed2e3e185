// The TypeScript SDK (clients/typescript) against a real node: every route family once (flow control's fields
// included), cursor pagination over
// 250 jobs, a 429 retried after its Retry-After (and a claim that is not), errors typed by catalog code, the
// SSE helper, signature verification of a real delivery, and two drift checks (the error catalog, the
// proto copy, the routes of the OpenAPI document).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  ConflictError,
  ConnectionError,
  ERROR_CLASSES,
  ForbiddenError,
  LeaseExpiredError,
  NotFoundError,
  PayloadTooLargeError,
  QuotaExceededError,
  RateLimitedError,
  SluiceClient,
  SluiceError,
  SseParser,
  UnauthorizedError,
  UnavailableError,
  ShardMovedError,
  ValidationError,
  verifySignature,
  type EventEnvelope,
  type RetryEvent,
} from '../clients/typescript/src/index.js';
import { CATALOG } from '../src/errors.js';
import { freePort, ROOT, startTestNode, type TestNode } from './helpers.js';

const ADMIN = 'admin-key-for-the-sdk-tests-0123456789';
let n: TestNode;
let client: SluiceClient;

before(async () => {
  n = await startTestNode({ env: { ADMIN_API_KEY: ADMIN, RETRY_UNIT_MS: '1' } });
  client = new SluiceClient({ url: n.node.url, apiKey: n.node.bootstrapKey!, adminKey: ADMIN });
});
after(() => n.stop());

/** A fresh organization through POST /api/v1/organizations (Free plan), and a client with its key. */
async function freeOrg(slug: string, opts: ConstructorParameters<typeof SluiceClient>[0] = {}): Promise<{ c: SluiceClient; id: string }> {
  const created = await client.organizations.register({ name: slug, slug });
  assert.equal(created.organization.plan, 'free');
  return { c: new SluiceClient({ url: n.node.url, apiKey: created.api_key.key, ...opts }), id: created.organization.id };
}

async function rejectsWith<E extends SluiceError>(p: Promise<unknown>, Cls: new (...a: never[]) => E, code: string): Promise<E> {
  let caught: unknown;
  await assert.rejects(p, (err) => {
    caught = err;
    return true;
  });
  assert.ok(caught instanceof Cls, `expected ${Cls.name}, got ${String(caught)}`);
  assert.ok(caught instanceof SluiceError);
  assert.equal((caught as SluiceError).code, code);
  return caught as E;
}

describe('SDK: every route family', () => {
  test('jobs: enqueue (idempotent), bulk, get, list with filters, claim, heartbeat, complete, fail, retry, priority, cancel, stats, status', async () => {
    const a = await client.jobs.enqueue({ queue_name: 'sdk-jobs', payload: { n: 1 }, idempotency_key: 'sdk-a', tags: { kind: 'a' } });
    assert.equal(a.created, true);
    const again = await client.jobs.enqueue({ queue_name: 'sdk-jobs', payload: { n: 1 }, idempotency_key: 'sdk-a' });
    assert.equal(again.created, false);
    assert.equal(again.id, a.id);

    const bulk = await client.jobs.enqueueBulk(
      [{ payload: { n: 2 }, tags: ['bulk'] }, { payload: { n: 3 }, scheduled_at: new Date(Date.now() + 3_600_000) }, { payload: { n: 4 }, priority: 1000 }],
      { queue_name: 'sdk-jobs' },
    );
    assert.equal(bulk.success_count, 2);
    assert.equal(bulk.failed[0]!.index, 2);
    assert.equal(bulk.failed[0]!.error.code, 'VALIDATION_ERROR');

    const got = await client.jobs.get(a.id);
    assert.deepEqual(got.payload, { n: 1 });
    assert.deepEqual(got.tags, { kind: 'a' });

    const tagged = await client.jobs.list({ queue_name: 'sdk-jobs', tag: 'bulk' }).toArray();
    assert.deepEqual(tagged.map((j) => j.id), [bulk.succeeded[0]!.id]);
    const scheduled = await client.jobs.list({ queue_name: 'sdk-jobs', status: 'scheduled' }).toArray();
    assert.deepEqual(scheduled.map((j) => j.id), [bulk.succeeded[1]!.id]);
    const since = await client.jobs.list({ queue_name: 'sdk-jobs', created_after: new Date(Date.parse(a.created_at) - 1) }).toArray();
    assert.equal(since.length, 3);

    // Priority moves the bulk job ahead of a.
    await client.jobs.setPriority(bulk.succeeded[0]!.id, 50);
    const [first, second] = await client.jobs.claim({ queue_name: 'sdk-jobs', worker_id: 'sdk-w', limit: 2 });
    assert.equal(first!.id, bulk.succeeded[0]!.id);
    assert.equal(second!.id, a.id);
    assert.ok(first!.lease_id);
    const hb = await client.jobs.heartbeat(first!.id, { worker_id: 'sdk-w', lease_id: first!.lease_id!, lease_duration_secs: 60 });
    assert.equal(hb.lease_id, first!.lease_id);
    const done = await client.jobs.complete(first!.id, { worker_id: 'sdk-w', lease_id: first!.lease_id!, result: { ok: true } });
    assert.equal(done.status, 'completed');
    const failed = await client.jobs.fail(second!.id, { worker_id: 'sdk-w', lease_id: second!.lease_id!, error: 'boom', retryable: false });
    assert.equal(failed.status, 'deadletter');
    const revived = await client.jobs.retry(second!.id);
    assert.equal(revived.status, 'pending');
    const cancelled = await client.jobs.cancel(bulk.succeeded[1]!.id);
    assert.equal(cancelled.status, 'cancelled');

    const stats = await client.jobs.stats({ queue_name: 'sdk-jobs' });
    assert.deepEqual(
      { pending: stats.counts.pending, completed: stats.counts.completed, cancelled: stats.counts.cancelled, total: stats.total },
      { pending: 1, completed: 1, cancelled: 1, total: 3 },
    );
    const lines = await client.jobs.status([a.id, bulk.succeeded[1]!.id, '00000000-0000-7000-8000-000000000000']);
    assert.deepEqual(lines.map((l) => [l.id, l.status]), [[a.id, 'pending'], [bulk.succeeded[1]!.id, 'cancelled']]);
  });

  test('jobs: a batch acknowledgement, one item stale', async () => {
    await client.jobs.enqueueBulk([{ payload: { n: 1 } }, { payload: { n: 2 } }], { queue_name: 'sdk-ack' });
    const [x, y] = await client.jobs.claim({ queue_name: 'sdk-ack', worker_id: 'sdk-w', limit: 2 });
    const acked = await client.jobs.completeMany([{ id: x!.id, lease_id: x!.lease_id!, result: 1 }, { id: y!.id, lease_id: 'stale' }], { worker_id: 'sdk-w' });
    assert.deepEqual(acked.succeeded.map((s) => [s.index, s.id, s.status]), [[0, x!.id, 'completed']]);
    assert.deepEqual(acked.failed.map((f) => [f.index, f.id, f.error.code]), [[1, y!.id, 'LEASE_EXPIRED']]);
    assert.equal(acked.jobs, undefined);
  });

  test('jobs: a batch acknowledgement that claims the next jobs', async () => {
    await client.jobs.enqueueBulk([{ payload: { n: 1 } }, { payload: { n: 2 } }, { payload: { n: 3 } }], { queue_name: 'sdk-ack-claim' });
    const [x] = await client.jobs.claim({ queue_name: 'sdk-ack-claim', worker_id: 'sdk-w' });
    const acked = await client.jobs.completeMany([{ id: x!.id, lease_id: x!.lease_id! }], { worker_id: 'sdk-w', claim: { queue_name: 'sdk-ack-claim', limit: 5 } });
    assert.equal(acked.success_count, 1);
    assert.deepEqual(acked.jobs!.map((j) => j.payload), [{ n: 2 }, { n: 3 }]);
    assert.ok(acked.jobs!.every((j) => j.status === 'processing' && j.lease_id));
    const more = await client.jobs.completeMany(acked.jobs!.map((j) => ({ id: j.id, lease_id: j.lease_id! })), { worker_id: 'sdk-w', claim: { queue_name: 'sdk-ack-claim' } });
    assert.equal(more.success_count, 2);
    assert.deepEqual(more.jobs, []);
  });

  test('pagination: 250 jobs walked in pages of 100 through X-Next-Cursor', async () => {
    for (let i = 0; i < 250; i += 100) {
      const items = Array.from({ length: Math.min(100, 250 - i) }, (_, k) => ({ payload: { i: i + k } }));
      assert.equal((await client.jobs.enqueueBulk(items, { queue_name: 'sdk-pages' })).failure_count, 0);
    }
    const pages = [];
    for await (const page of client.jobs.list({ queue_name: 'sdk-pages', limit: 100 }).pages()) pages.push(page);
    assert.deepEqual(pages.map((p) => p.items.length), [100, 100, 50]);
    assert.equal(pages[2]!.nextCursor, null);
    const ids = new Set<string>();
    for await (const job of client.jobs.list({ queue_name: 'sdk-pages', limit: 100 })) ids.add(job.id);
    assert.equal(ids.size, 250);
    // A page can be fetched on its own, and a walk resumed from its cursor.
    const one = await client.jobs.list({ queue_name: 'sdk-pages', limit: 100 }).page();
    const rest = await client.jobs.list({ queue_name: 'sdk-pages', limit: 100, cursor: one.nextCursor! }).toArray();
    assert.equal(one.items.length + rest.length, 250);
    assert.equal((await client.jobs.list({ queue_name: 'sdk-pages' }).toArray(30)).length, 30);
  });

  test('dead-letter queue: list, retry, purge', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await client.jobs.enqueue({ queue_name: 'sdk-dlq', payload: { i }, max_retries: 0 })).id);
    for (const job of await client.jobs.claim({ queue_name: 'sdk-dlq', worker_id: 'sdk-w', limit: 3 })) {
      await client.jobs.fail(job.id, { worker_id: 'sdk-w', lease_id: job.lease_id!, error: 'nope' });
    }
    const dead = await client.dlq.list({ queue_name: 'sdk-dlq' }).toArray();
    assert.deepEqual(dead.map((j) => j.id).sort(), [...ids].sort());
    assert.equal(dead[0]!.errors[0]!.error, 'nope');
    const retried = await client.dlq.retry({ job_ids: [ids[0]!] });
    assert.deepEqual(retried.job_ids, [ids[0]]);
    assert.throws(() => client.dlq.purge({ queue_name: 'sdk-dlq' } as never), /confirm/);
    assert.equal((await client.dlq.purge({ queue_name: 'sdk-dlq', confirm: true })).purged, 2);
    assert.deepEqual(await client.dlq.list({ queue_name: 'sdk-dlq' }).toArray(), []);
  });

  test('queues: create, list, get, stats, pause, resume, configure, delete', async () => {
    const q = await client.queues.create('sdk-q', { max_retries: 5 });
    assert.equal(q.config.max_retries, 5);
    assert.ok((await client.queues.list().toArray()).some((x) => x.name === 'sdk-q'));
    assert.equal((await client.queues.get('sdk-q')).name, 'sdk-q');
    assert.equal((await client.queues.pause('sdk-q', 'maintenance')).paused_reason, 'maintenance');
    assert.equal((await client.queues.stats('sdk-q')).paused, true);
    assert.equal((await client.queues.resume('sdk-q')).paused, false);
    assert.equal((await client.queues.configure('sdk-q', { max_retries: null, lease_duration_secs: 30 })).config.lease_duration_secs, 30);
    assert.deepEqual(await client.queues.delete('sdk-q'), { name: 'sdk-q', deleted: true });
    await rejectsWith(client.queues.get('sdk-q'), NotFoundError, 'NOT_FOUND');
  });

  test('flow control: concurrency_key, debounce and idempotency_ttl_secs on enqueue, queue limits on create and configure, busiest keys and explain', async () => {
    const limits = { concurrency_per_key: 1, max_concurrency: 10, rate_limit: { jobs: 100, per_seconds: 60 } };
    const q = await client.queues.create('sdk-flow', limits);
    assert.deepEqual(q.config, { max_retries: null, lease_duration_secs: null, ...limits });
    assert.deepEqual((await client.queues.get('sdk-flow')).config, q.config);

    const a = await client.jobs.enqueue({ queue_name: 'sdk-flow', payload: { n: 1 }, concurrency_key: 'tenant-a' });
    const b = await client.jobs.enqueue({ queue_name: 'sdk-flow', payload: { n: 2 }, concurrency_key: 'tenant-a' });
    assert.equal(a.concurrency_key, 'tenant-a');
    assert.equal((await client.jobs.get(b.id)).concurrency_key, 'tenant-a');
    // One of the key at a time: a claim of two takes one.
    const claimed = await client.jobs.claim({ queue_name: 'sdk-flow', worker_id: 'fw', limit: 2 });
    assert.deepEqual(claimed.map((j) => [j.id, j.concurrency_key]), [[a.id, 'tenant-a']]);
    assert.deepEqual((await client.queues.stats('sdk-flow')).busiest_keys, [{ key: 'tenant-a', processing: 1, waiting: 1 }]);
    const why = await client.jobs.explain(b.id);
    const atLimit = why.reasons.find((r) => r.reason === 'key_at_concurrency_limit');
    assert.deepEqual(atLimit && { key: atLimit.concurrency_key, limit: atLimit.limit, holders: atLimit.holders }, { key: 'tenant-a', limit: 1, holders: [a.id] });
    const cleared = await client.queues.configure('sdk-flow', { concurrency_per_key: null, max_concurrency: 5, rate_limit: null });
    assert.deepEqual(cleared.config, { max_retries: null, lease_duration_secs: null, concurrency_per_key: null, max_concurrency: 5, rate_limit: null });
    assert.deepEqual((await client.jobs.claim({ queue_name: 'sdk-flow', worker_id: 'fw', limit: 2 })).map((j) => j.id), [b.id], 'the key limit is gone');

    const debounce = { key: 'user-1', delay_ms: 60_000, max_delay_ms: 120_000 };
    const d1 = await client.jobs.enqueue({ queue_name: 'sdk-deb', payload: { v: 1 }, debounce });
    assert.equal(d1.created, true);
    assert.equal(d1.status, 'scheduled');
    assert.equal(d1.debounce_key, 'user-1');
    assert.equal(Date.parse(d1.scheduled_at!) - Date.parse(d1.created_at), 60_000);
    const d2 = await client.jobs.enqueue({ queue_name: 'sdk-deb', payload: { v: 2 }, debounce });
    assert.equal(d2.created, false);
    assert.equal(d2.id, d1.id);
    assert.deepEqual((await client.jobs.get(d1.id)).payload, { v: 2 }, 'the waiting job took the new payload');

    const i1 = await client.jobs.enqueue({ queue_name: 'sdk-idem', payload: {}, idempotency_key: 'sdk-ttl', idempotency_ttl_secs: 3_600 });
    assert.equal(i1.created, true);
    assert.equal(Date.parse(i1.idempotency_expires_at!) - Date.parse(i1.created_at), 3_600_000);
    const i2 = await client.jobs.enqueue({ queue_name: 'sdk-idem', payload: {}, idempotency_key: 'sdk-ttl', idempotency_ttl_secs: 3_600 });
    assert.equal(i2.created, false);
    assert.equal(i2.id, i1.id);

    const bad = await rejectsWith(client.jobs.enqueue({ queue_name: 'sdk-idem', payload: {}, idempotency_ttl_secs: 5 }), ValidationError, 'VALIDATION_ERROR');
    assert.deepEqual([...new Set(bad.details.map((d) => d.field))], ['idempotency_ttl_secs']);
    const zero = await rejectsWith(client.queues.configure('sdk-flow', { concurrency_per_key: 0 }), ValidationError, 'VALIDATION_ERROR');
    assert.deepEqual([...new Set(zero.details.map((d) => d.field))], ['concurrency_per_key']);
  });

  test('workers: register (id as id and worker_id), list, get, heartbeat, deregister', async () => {
    const w = await client.workers.register({ worker_id: 'sdk-worker-1', queue_name: 'sdk-jobs', max_concurrency: 4 });
    assert.equal(w.id, 'sdk-worker-1');
    assert.equal(w.worker_id, 'sdk-worker-1');
    const minted = await client.workers.register({});
    assert.match(minted.id, /^[0-9a-f-]{36}$/);
    assert.ok((await client.workers.list().toArray()).some((x) => x.id === 'sdk-worker-1'));
    assert.equal((await client.workers.get('sdk-worker-1')).max_concurrency, 4);
    assert.equal((await client.workers.heartbeat('sdk-worker-1')).id, 'sdk-worker-1');
    assert.equal((await client.workers.deregister('sdk-worker-1')).status, 'deregistered');
    await client.workers.deregister(minted.id);
    await rejectsWith(client.workers.heartbeat('sdk-worker-1'), NotFoundError, 'NOT_FOUND');
  });

  test('schedules: create, list, get, update, pause, resume, trigger, runs, delete', async () => {
    const s = await client.schedules.create({ name: 'nightly', cron_expression: '0 0 3 * * *', timezone: 'Europe/Paris', queue_name: 'sdk-cron', payload_template: { report: true } });
    assert.ok(s.next_run_at);
    assert.ok((await client.schedules.list().toArray()).some((x) => x.id === s.id));
    assert.equal((await client.schedules.get(s.id)).timezone, 'Europe/Paris');
    assert.equal((await client.schedules.update(s.id, { name: 'nightly-report' })).name, 'nightly-report');
    assert.equal((await client.schedules.pause(s.id)).next_run_at, null);
    assert.ok((await client.schedules.resume(s.id)).next_run_at);
    const run = await client.schedules.trigger(s.id);
    assert.equal(run.manual, true);
    assert.deepEqual(run.job.payload, { report: true });
    const runs = await client.schedules.history(s.id).toArray();
    assert.deepEqual(runs.map((r) => r.job_id), [run.job.id]);
    assert.deepEqual(await client.schedules.delete(s.id), { id: s.id, deleted: true });
  });

  test('workflows: create, list, get, cancel, retry', async () => {
    const wf = await client.workflows.create({
      name: 'etl',
      jobs: [
        { name: 'extract', queue_name: 'sdk-wf', payload: {} },
        { name: 'load', queue_name: 'sdk-wf', payload: {}, depends_on: ['extract'] },
      ],
    });
    assert.equal(wf.status, 'running');
    assert.equal(wf.jobs.find((j) => j.name === 'load')!.dependencies_met, false);
    assert.ok((await client.workflows.list({ status: 'running' }).toArray()).some((w) => w.id === wf.id));
    assert.equal((await client.workflows.get(wf.id)).job_count, 2);
    assert.equal((await client.workflows.cancel(wf.id)).status, 'cancelled');
    assert.equal((await client.workflows.retry(wf.id)).status, 'running');
    await client.workflows.cancel(wf.id);
  });

  test('outgoing webhooks: create, list, get, update, test (signature verified), deliveries, delete', async () => {
    const received: Array<{ headers: http.IncomingHttpHeaders; raw: string }> = [];
    const server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        received.push({ headers: req.headers, raw });
        res.end('ok');
      });
    });
    const port = await freePort();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    try {
      const hook = await client.webhooks.create({ name: 'sink', url: `http://127.0.0.1:${port}/hook`, events: ['job.completed'], secret: 's3cret' });
      assert.equal(hook.has_secret, true);
      assert.ok((await client.webhooks.list().toArray()).some((h) => h.id === hook.id));
      assert.equal((await client.webhooks.get(hook.id)).url, `http://127.0.0.1:${port}/hook`);
      assert.deepEqual((await client.webhooks.update(hook.id, { events: ['job.completed', 'job.failed'] })).events, ['job.completed', 'job.failed']);
      const delivery = await client.webhooks.test(hook.id);
      assert.equal(delivery.status, 'success');
      const got = received.at(-1)!;
      assert.equal(got.headers['x-queue-event'], 'webhook.test');
      const sig = { signature: got.headers['x-queue-signature'] as string, timestamp: got.headers['x-queue-timestamp'] as string, rawBody: got.raw };
      assert.equal(verifySignature({ secret: 's3cret', ...sig }), true);
      assert.equal(verifySignature({ secret: 'wrong', ...sig }), false);
      assert.equal(verifySignature({ secret: 's3cret', ...sig, rawBody: got.raw + ' ' }), false);
      assert.equal(verifySignature({ secret: 's3cret', ...sig, now: (Number(sig.timestamp) + 3600) * 1000 }), false, 'a replay an hour later');
      assert.equal((await client.webhooks.deliveries(hook.id))[0]!.event, 'webhook.test');
      assert.deepEqual(await client.webhooks.delete(hook.id), { id: hook.id, deleted: true });
    } finally {
      server.close();
    }
  });

  test('API keys and auth: create, list, get, login, me, refresh, logout, revoke', async () => {
    const key = await client.apiKeys.create('sdk-reader', ['jobs:read']);
    assert.match(key.key, /^svc_test_/);
    assert.ok((await client.apiKeys.list().toArray()).some((k) => k.id === key.id));
    assert.equal((await client.apiKeys.get(key.id)).status, 'active');

    const reader = new SluiceClient({ url: n.node.url, apiKey: key.key });
    const tokens = await reader.auth.login();
    assert.equal(tokens.token_type, 'Bearer');
    const session = new SluiceClient({ url: n.node.url, apiKey: tokens.access_token });
    const me = await session.auth.me();
    assert.equal(me.via, 'jwt');
    assert.deepEqual(me.permissions, ['jobs:read']);
    await rejectsWith(session.jobs.enqueue({ queue_name: 'sdk-jobs', payload: {} }), ForbiddenError, 'FORBIDDEN');
    const refreshed = await session.auth.refresh(tokens.refresh_token);
    assert.ok(refreshed.access_token);
    assert.ok((await session.auth.logout()).revoked >= 1);
    await rejectsWith(session.auth.me(), UnauthorizedError, 'UNAUTHORIZED');

    assert.equal((await client.apiKeys.revoke(key.id)).status, 'revoked');
    await rejectsWith(reader.auth.me(), UnauthorizedError, 'UNAUTHORIZED');
  });

  test('organizations: usage, webhook token (and an incoming job with it), register; admin: list, create, plan, limits, usage reset', async () => {
    const usage = await client.organizations.usage();
    assert.equal(usage.plan.tier, 'enterprise');
    assert.ok(usage.usage.jobs_today!.current > 0);
    const token = await client.organizations.webhookToken();
    const rotated = await client.organizations.regenerateWebhookToken();
    assert.notEqual(rotated.token, token.token);
    const me = await client.auth.me();
    const incoming = await client.organizations.sendIncoming(me.organization_id, rotated.token, { queue_name: 'sdk-in', payload: { from: 'adapter' }, idempotency_key: 'evt-1' });
    assert.equal(incoming.created, true);

    const { id } = await freeOrg('sdk-registered');
    assert.ok((await client.admin.organizations.list().toArray()).some((o) => o.id === id));
    const made = await client.admin.organizations.create({ name: 'Pro Co', slug: 'sdk-pro', plan: 'pro' });
    assert.equal(made.organization.plan, 'pro');
    assert.equal((await client.admin.organizations.setPlan(id, 'starter')).plan, 'starter');
    assert.deepEqual((await client.admin.organizations.setLimits(id, { queues: 3 })).limit_overrides, { queues: 3 });
    assert.equal((await client.admin.organizations.resetUsage(id)).jobs_today, 0);
    await rejectsWith(new SluiceClient({ url: n.node.url, adminKey: 'wrong-admin-key-0123456789' }).admin.organizations.list().page(), UnauthorizedError, 'UNAUTHORIZED');
  });

  test('events: the organization stream filtered by queue, a job stream that ends, queue stats', async () => {
    const ctl = new AbortController();
    const seen: EventEnvelope[] = [];
    let opened!: () => void;
    const isOpen = new Promise<void>((r) => (opened = r));
    const stream = client.events.stream({ queue: 'sdk-events', events: ['job.created', 'job.completed'], signal: ctl.signal, onOpen: () => opened() });
    const reading = (async () => {
      for await (const e of stream) {
        seen.push(e);
        if (e.event === 'job.completed') break;
      }
    })();
    await isOpen;
    await client.jobs.enqueue({ queue_name: 'other-queue', payload: {} });
    const job = await client.jobs.enqueue({ queue_name: 'sdk-events', payload: { hello: 'sse' } });
    // Open before the claim: a job stream opened after the job finished is only its `job.status` (docs/streams.md).
    let jobOpened!: () => void;
    const jobIsOpen = new Promise<void>((r) => (jobOpened = r));
    const jobEvents = (async () => {
      const out: string[] = [];
      for await (const e of client.events.job(job.id, { onOpen: () => jobOpened() })) out.push(`${e.event}:${String(e.data.status)}`);
      return out;
    })();
    await jobIsOpen;
    const [claimed] = await client.jobs.claim({ queue_name: 'sdk-events', worker_id: 'sdk-w' });
    await client.jobs.complete(claimed!.id, { worker_id: 'sdk-w', lease_id: claimed!.lease_id!, result: 1 });
    await reading;
    assert.deepEqual(seen.map((e) => [e.event, e.data.job_id]), [['job.created', job.id], ['job.completed', job.id]]);
    assert.ok(seen.every((e) => typeof e.id === 'string' && typeof e.created_at === 'string'));
    assert.equal(stream.lastEventId, seen[1]!.id);
    const jobStream = await jobEvents;
    assert.equal(jobStream.at(-1), 'job.completed:completed');

    for await (const e of client.events.queue('sdk-events')) {
      assert.equal(e.event, 'queue.stats');
      assert.equal(e.data.completed, 1);
      break;
    }
    await rejectsWith((async () => {
      for await (const _ of client.events.stream({ queue: '-bad' })) break;
    })(), ValidationError, 'VALIDATION_ERROR');
  });

  test('health', async () => {
    assert.ok(await client.health.ready());
  });
});

describe('SDK: retries and errors', () => {
  test('a 429 is retried after Retry-After; a claim (not idempotent) is not', async () => {
    const retries: RetryEvent[] = [];
    const { c } = await freeOrg('sdk-limited', { onRetry: (e) => retries.push(e) });
    const started = Date.now();
    // Free plan: a burst of 10 requests per second. Of 25 at once, those refused come back after Retry-After.
    const all = await Promise.all(Array.from({ length: 25 }, () => c.jobs.stats()));
    assert.equal(all.length, 25);
    // How many are refused depends on how fast they arrive; with 25 at once some always are.
    assert.ok(retries.length >= 1, 'some requests were refused and retried');
    for (const r of retries) {
      assert.ok(r.error instanceof RateLimitedError);
      assert.ok(r.error.retryAfter! >= 1);
      assert.ok(r.delayMs >= r.error.retryAfter! * 1000, `waited ${r.delayMs} ms for Retry-After ${r.error.retryAfter}`);
    }
    assert.ok(Date.now() - started >= 1000);

    retries.length = 0;
    await new Promise((r) => setTimeout(r, 1100));
    const claims = await Promise.allSettled(Array.from({ length: 15 }, () => c.jobs.claim({ queue_name: 'q', worker_id: 'w' })));
    const refused = claims.filter((s) => s.status === 'rejected').map((s) => (s as PromiseRejectedResult).reason);
    assert.ok(refused.length >= 1, 'some claims were refused');
    for (const e of refused) {
      assert.ok(e instanceof RateLimitedError);
      assert.equal(e.retryable, true);
      assert.ok(e.retryAfter! >= 1);
    }
    assert.equal(retries.filter((r) => r.path === '/api/v1/jobs/claim').length, 0);
  });

  test('errors are typed by catalog code', async () => {
    await rejectsWith(client.jobs.get('01a0f000-0000-7000-8000-000000000000'), NotFoundError, 'NOT_FOUND');
    const invalid = await rejectsWith(client.jobs.enqueue({ payload: {} } as never), ValidationError, 'VALIDATION_ERROR');
    assert.equal(invalid.status, 422);
    assert.ok(invalid.details.some((d) => d.field === 'queue_name'));
    assert.equal(invalid.retryable, false);

    const job = await client.jobs.enqueue({ queue_name: 'sdk-errors', payload: {} });
    const [claimed] = await client.jobs.claim({ queue_name: 'sdk-errors', worker_id: 'sdk-w' });
    await rejectsWith(client.jobs.complete(job.id, { worker_id: 'sdk-w', lease_id: 'not-the-lease' }), LeaseExpiredError, 'LEASE_EXPIRED');
    await client.jobs.complete(job.id, { worker_id: 'sdk-w', lease_id: claimed!.lease_id! });
    const conflict = await rejectsWith(client.jobs.cancel(job.id), ConflictError, 'JOB_NOT_LIVE');
    assert.equal(conflict.status, 409);
    assert.equal(conflict.jobStatus, 'completed');

    await rejectsWith(new SluiceClient({ url: n.node.url, apiKey: 'svc_test_nope' }).jobs.stats(), UnauthorizedError, 'UNAUTHORIZED');

    const { c } = await freeOrg('sdk-quota');
    const quota = await rejectsWith(c.workflows.create({ name: 'x', jobs: [{ name: 'a', queue_name: 'q', payload: {} }] }), QuotaExceededError, 'QUOTA_EXCEEDED');
    assert.equal(quota.resource, 'workflows');
    assert.equal(quota.plan, 'free');
    assert.equal(quota.retryable, false);
    const big = await rejectsWith(c.jobs.enqueue({ queue_name: 'q', payload: { blob: 'x'.repeat(70_000) } }), PayloadTooLargeError, 'PAYLOAD_TOO_LARGE');
    assert.equal(big.limit, 65_536);

    const down = new SluiceClient({ url: `http://127.0.0.1:${await freePort()}`, apiKey: 'k', retry: { retries: 0 } });
    const conn = await rejectsWith(down.jobs.stats(), ConnectionError, 'CONNECTION_FAILED');
    assert.equal(conn.retryable, true);
    assert.throws(() => new SluiceClient({ url: 'localhost:8080' }), /absolute http\(s\) URL/);
  });

  test("one error class per code of the service's catalog", () => {
    assert.deepEqual(Object.keys(ERROR_CLASSES).sort(), Object.keys(CATALOG).sort());
    for (const [code, Cls] of Object.entries(ERROR_CLASSES)) {
      const e = new Cls({ status: CATALOG[code as keyof typeof CATALOG].status, code, message: 'm' });
      assert.ok(e instanceof SluiceError);
      assert.equal(e.name, Cls.name);
    }
  });
});

describe('SDK: retry policy and SSE against a scripted server', () => {
  type Script = (req: http.IncomingMessage, res: http.ServerResponse, hit: number) => void;
  let server: http.Server;
  let url: string;
  const scripts = new Map<string, Script>();
  const hits = new Map<string, number>();
  before(async () => {
    server = http.createServer((req, res) => {
      const key = `${req.method} ${new URL(req.url!, 'http://x').pathname}`;
      const hit = (hits.get(key) ?? 0) + 1;
      hits.set(key, hit);
      req.resume();
      req.on('end', () => scripts.get(key)!(req, res, hit));
    });
    const port = await freePort();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    url = `http://127.0.0.1:${port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const answer = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };
  const unavailable = { error: 'unavailable', code: 'UNAVAILABLE', message: 'store down', status: 503 };

  test('503 and dropped connections are retried for idempotent requests only; a quota never', async () => {
    const c = new SluiceClient({ url, apiKey: 'k', retry: { baseDelayMs: 5 } });
    scripts.set('GET /api/v1/jobs/stats', (_q, res, hit) => (hit < 3 ? answer(res, 503, unavailable) : answer(res, 200, { total: 1 })));
    assert.deepEqual(await c.jobs.stats(), { total: 1 });
    assert.equal(hits.get('GET /api/v1/jobs/stats'), 3);
    // A queue moving between nodes is a 503 of its own code, retried the same way.
    const moved = { error: 'unavailable', code: 'SHARD_MOVED', message: 'moving', status: 503 };
    scripts.set('GET /api/v1/queues/moving', (_q, res, hit) => (hit < 3 ? answer(res, 503, moved) : answer(res, 200, { name: 'moving' })));
    assert.equal((await c.queues.get('moving')).name, 'moving');
    assert.equal(hits.get('GET /api/v1/queues/moving'), 3);
    scripts.set('GET /api/v1/queues/gone', (_q, res) => answer(res, 503, moved));
    const err = await c.queues.get('gone').then(() => null, (e: unknown) => e);
    assert.ok(err instanceof ShardMovedError && err instanceof UnavailableError && err.retryable, String(err));

    scripts.set('POST /api/v1/jobs', (_q, res, hit) => (hit < 3 ? answer(res, 503, unavailable) : answer(res, 201, { id: 'j', created: true })));
    await assert.rejects(c.jobs.enqueue({ queue_name: 'q', payload: {} }), UnavailableError);
    assert.equal(hits.get('POST /api/v1/jobs'), 1, 'no key: not retried');
    assert.equal((await c.jobs.enqueue({ queue_name: 'q', payload: {}, idempotency_key: 'k1' })).id, 'j');
    assert.equal(hits.get('POST /api/v1/jobs'), 3, 'with a key: 503, then retried');

    scripts.set('POST /api/v1/jobs/claim', (req) => req.socket.destroy());
    await assert.rejects(c.jobs.claim({ queue_name: 'q', worker_id: 'w' }), ConnectionError);
    assert.equal(hits.get('POST /api/v1/jobs/claim'), 1);
    scripts.set('POST /api/v1/jobs/j/complete', (req, res, hit) => (hit === 1 ? req.socket.destroy() : answer(res, 200, { id: 'j', status: 'completed' })));
    assert.equal((await c.jobs.complete('j', { worker_id: 'w', lease_id: 'l' })).status, 'completed');
    assert.equal(hits.get('POST /api/v1/jobs/j/complete'), 2, 'a lease-fenced report is retried');

    const quota = { error: 'limit_exceeded', code: 'QUOTA_EXCEEDED', message: 'no', status: 429, resource: 'queues', current: 2, limit: 2, plan: 'free', upgrade_to: 'starter' };
    scripts.set('GET /api/v1/queues', (_q, res) => answer(res, 429, quota));
    await assert.rejects(c.queues.list().page(), QuotaExceededError);
    assert.equal(hits.get('GET /api/v1/queues'), 1);

    scripts.set('GET /api/v1/workers', () => {});
    const slow = new SluiceClient({ url, apiKey: 'k', timeoutMs: 200, retry: { retries: 1, baseDelayMs: 5 } });
    const timeout = await rejectsWith(slow.workers.list().page(), ConnectionError, 'TIMEOUT');
    assert.match(timeout.message, /timed out after 200 ms/);
    assert.equal(hits.get('GET /api/v1/workers'), 2);

    scripts.set('GET /api/v1/schedules', (_q, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>'));
    const proxy = await rejectsWith(new SluiceClient({ url, apiKey: 'k', retry: { retries: 0 } }).schedules.list().page(), SluiceError, 'HTTP_502');
    assert.equal(proxy.retryable, true);
    assert.match(proxy.message, /Bad gateway/);
  });

  test('an answer cut mid-body is a dropped connection; a base path prefixes every route; a caller abort ends the request with its reason', async () => {
    const c = new SluiceClient({ url, apiKey: 'k', retry: { baseDelayMs: 5 } });
    // Headers promise 1,000 bytes, 20 come, then the connection closes.
    const cut = (res: http.ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"total": 1, "more":');
      setTimeout(() => res.socket?.destroy(), 10);
    };
    scripts.set('GET /api/v1/jobs/dlq', (_q, res, hit) => (hit === 1 ? cut(res) : answer(res, 200, [], { 'x-next-cursor': 'c2' })));
    const page = await c.dlq.list().page();
    assert.deepEqual(page.items, []);
    assert.equal(page.nextCursor, 'c2', 'headers reach the caller');
    assert.equal(hits.get('GET /api/v1/jobs/dlq'), 2, 'an idempotent request is sent again');
    scripts.set('POST /api/v1/jobs/claim', (_q, res) => cut(res));
    const before = hits.get('POST /api/v1/jobs/claim') ?? 0;
    await rejectsWith(c.jobs.claim({ queue_name: 'q', worker_id: 'w' }), ConnectionError, 'CONNECTION_FAILED');
    assert.equal(hits.get('POST /api/v1/jobs/claim'), before + 1, 'a claim is not');

    scripts.set('GET /prefix/api/v1/jobs/stats', (_q, res) => answer(res, 200, { total: 7 }));
    assert.deepEqual(await new SluiceClient({ url: `${url}/prefix/`, apiKey: 'k' }).jobs.stats(), { total: 7 });

    scripts.set('GET /api/v1/queues/slow', () => {});
    const ctl = new AbortController();
    const reason = new Error('caller gave up');
    setTimeout(() => ctl.abort(reason), 50);
    await assert.rejects(c.queues.get('slow', { signal: ctl.signal }), (e) => e === reason);
    assert.equal(hits.get('GET /api/v1/queues/slow'), 1, 'an aborted request is not retried');
  });

  test('the SSE helper reconnects after a dropped or silent connection and sends Last-Event-ID', async () => {
    const seenIds: Array<string | undefined> = [];
    const frame = (id: string, n: number) => `id: ${id}\ndata: ${JSON.stringify({ id, event: 'job.created', created_at: 't', data: { n } })}\n\n`;
    scripts.set('GET /api/v1/events', (req, res, hit) => {
      seenIds.push(req.headers['last-event-id'] as string | undefined);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
      if (hit === 1) res.end(frame('e1', 1)); // then the connection drops
      else if (hit === 3) res.write(frame('e2', 2)); // hit 2 stays silent: the client must give up on it
    });
    const c = new SluiceClient({ url, apiKey: 'k' });
    const reconnects: number[] = [];
    const got = [];
    for await (const e of c.events.stream({ idleTimeoutMs: 300, maxReconnectDelayMs: 50, onReconnect: (r) => reconnects.push(r.attempt) })) {
      got.push(e.data.n);
      if (got.length === 2) break;
    }
    assert.deepEqual(got, [1, 2]);
    assert.deepEqual(seenIds, [undefined, 'e1', 'e1']);
    assert.equal(reconnects.length, 2);

    // close() ends an iteration that is waiting on a silent connection.
    const quiet = c.events.stream({ idleTimeoutMs: 60_000 });
    setTimeout(() => quiet.close(), 100);
    const t0 = Date.now();
    for await (const _ of quiet) assert.fail('the server sends nothing');
    assert.ok(Date.now() - t0 < 2_000);
  });

  test('SSE frames: multi-line data, CRLF, comments, retry, ids that carry over', () => {
    const p = new SseParser();
    const frames = [...p.push(': hi\r\nretry: 1500\r\nid: 7\r\ndata: {"a":\r\ndata: 1}\r\n\r\nevent: x\ndata: 2'), ...p.push('\n\n')];
    assert.deepEqual(frames, [
      { id: '7', event: null, data: '{"a":\n1}' },
      { id: '7', event: 'x', data: '2' },
    ]);
    assert.equal(p.retryMs, 1500);
  });
});

describe('SDK: drift', () => {
  test('the package ships the same proto as the service', () => {
    const copy = fs.readFileSync(path.join(ROOT, 'clients/typescript/proto/queue/v1/queue.proto'), 'utf8');
    assert.equal(copy, fs.readFileSync(path.join(ROOT, 'proto/queue/v1/queue.proto'), 'utf8'), 'cp proto/queue/v1/queue.proto clients/typescript/proto/queue/v1/');
  });

  test('every route of the OpenAPI document has a method in the SDK', async () => {
    // The routes each SDK method calls (client.ts). A route added to the service fails this test until the SDK
    // has a method for it (or it is listed as deliberately left out).
    const covered = new Set(
      `POST /api/v1/jobs, GET /api/v1/jobs, GET /api/v1/jobs/{id}, DELETE /api/v1/jobs/{id}, POST /api/v1/jobs/bulk,
      POST /api/v1/jobs/claim, POST /api/v1/jobs/{id}/complete, POST /api/v1/jobs/complete, POST /api/v1/jobs/{id}/fail, POST /api/v1/jobs/{id}/heartbeat, POST /api/v1/jobs/{id}/progress, GET /api/v1/jobs/{id}/explain, GET /api/v1/jobs/{id}/dependencies,
      POST /api/v1/jobs/{id}/retry, PUT /api/v1/jobs/{id}/priority, GET /api/v1/jobs/stats, GET /api/v1/jobs/status,
      GET /api/v1/jobs/dlq, POST /api/v1/jobs/dlq/retry, POST /api/v1/jobs/dlq/purge,
      GET /api/v1/queues, POST /api/v1/queues, GET /api/v1/queues/{name}, DELETE /api/v1/queues/{name}, GET /api/v1/queues/{name}/stats,
      POST /api/v1/queues/{name}/pause, POST /api/v1/queues/{name}/resume, PUT /api/v1/queues/{name}/config,
      POST /api/v1/workers/register, GET /api/v1/workers, GET /api/v1/workers/{id}, POST /api/v1/workers/{id}/heartbeat, POST /api/v1/workers/{id}/deregister,
      POST /api/v1/schedules, GET /api/v1/schedules, GET /api/v1/schedules/{id}, PUT /api/v1/schedules/{id}, DELETE /api/v1/schedules/{id},
      POST /api/v1/schedules/{id}/pause, POST /api/v1/schedules/{id}/resume, POST /api/v1/schedules/{id}/trigger, GET /api/v1/schedules/{id}/runs, GET /api/v1/schedules/{id}/history,
      POST /api/v1/workflows, GET /api/v1/workflows, GET /api/v1/workflows/{id}, POST /api/v1/workflows/{id}/cancel, POST /api/v1/workflows/{id}/retry,
      POST /api/v1/outgoing-webhooks, GET /api/v1/outgoing-webhooks, GET /api/v1/outgoing-webhooks/{id}, PUT /api/v1/outgoing-webhooks/{id},
      DELETE /api/v1/outgoing-webhooks/{id}, POST /api/v1/outgoing-webhooks/{id}/test, GET /api/v1/outgoing-webhooks/{id}/deliveries,
      POST /api/v1/api-keys, GET /api/v1/api-keys, GET /api/v1/api-keys/{id}, PUT /api/v1/api-keys/{id}, DELETE /api/v1/api-keys/{id},
      POST /api/v1/auth/login, POST /api/v1/auth/refresh, GET /api/v1/auth/me, POST /api/v1/auth/logout, POST /api/v1/auth/email/start, POST /api/v1/auth/email/verify,
      GET /api/v1/organizations/usage, GET /api/v1/organizations/webhook-token, POST /api/v1/organizations/webhook-token/regenerate,
      POST /api/v1/organizations, POST /api/v1/webhooks/{org_id}/custom,
      GET /api/v1/admin/organizations, POST /api/v1/admin/organizations, PUT /api/v1/admin/organizations/{id}/plan,
      PUT /api/v1/admin/organizations/{id}/limits, POST /api/v1/admin/organizations/{id}/usage/reset,
      GET /api/v1/events, GET /api/v1/events/jobs/{id}, GET /api/v1/events/queues/{name}, GET /health/ready, GET /api/v1/dashboard`
        .split(',')
        .map((s) => s.trim()),
    );
    // Left out on purpose: the WebSocket (the SDK streams over SSE), the document itself, probes and metrics (both
    // the operator's and an organization's are Prometheus text, for a Prometheus server), and the dashboard's pages.
    const outOfScope = new Set(['GET /api/v1/ws', 'GET /api/v1/openapi.json', 'GET /health', 'GET /health/live', 'GET /metrics', 'GET /api/v1/metrics', 'POST /api/v1/schedules/trigger', 'GET /', 'GET /ui', 'GET /ui/assets/{file}']);
    const doc = (await client.http.request<{ paths: Record<string, Record<string, unknown>> }>({ method: 'GET', path: '/api/v1/openapi.json' })).body;
    const routes = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    const missing = routes.filter((r) => !covered.has(r) && !outOfScope.has(r));
    assert.deepEqual(missing, [], 'routes of the service without an SDK method');
    const gone = [...covered].filter((r) => !routes.includes(r));
    assert.deepEqual(gone, [], 'SDK methods for routes the service no longer has');
  });
});
