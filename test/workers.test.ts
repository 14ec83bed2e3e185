// Workers: register is an upsert on a given id (the organization's own id is refreshed and not charged, another
// organization's is 409), the 'workers' quota stops at exactly the limit (also with 50 concurrent
// registrations, and 50 concurrent registrations of one new id make one row and one charge), the stale-worker
// reaper frees a slot two minutes (manual clock) after the last heartbeat and not before, deregistration frees
// it at once, and another organization's workers are 404 everywhere.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import type { Store } from '../src/io/db/store.js';
import type { SluiceEvent } from '../src/app/events.js';
import { WorkerReaper } from '../src/app/worker-reaper.js';
import { loadConfig } from '../src/config.js';
import { startNode, type SluiceNode } from '../src/node.js';
import { Api, freshStore, startTestNode, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey, nextLink, QUOTA_EXTRAS } from './http-assert.js';

const clock = new ManualClock(Date.UTC(2030, 5, 1, 12, 0));
let n: TestNode;
before(async () => {
  n = await startTestNode({ clock });
});
after(() => n.stop());


/** A fresh organization on `plan` (not rate-limited), an Api for its key, and its events. */
async function org(plan = 'free', permissions?: string[]): Promise<{ api: Api; id: string; events: SluiceEvent[] }> {
  const { key, organizationId } = await insertKey(n, { plan, permissions });
  const events: SluiceEvent[] = [];
  n.node.events.subscribe(organizationId, (e) => events.push(e));
  return { api: n.api.as(key), id: organizationId, events };
}

const workerRows = async (organizationId: string): Promise<number> =>
  (await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM workers WHERE organization_id = $1', [organizationId]))[0]!.n;

const usedSlots = async (api: Api): Promise<number> => (await api.get('/api/v1/organizations/usage')).body.usage.workers.current;

describe('workers', () => {
  test('register with an id: 201 with the record, then re-registration refreshes it, not charged (Free, cap 1)', async () => {
    const { api, id, events } = await org('free');
    const r = await api.post('/api/v1/workers/register', {
      worker_id: 'host-1.worker_a',
      queue_name: 'emails',
      hostname: 'host-1',
      max_concurrency: 4,
      metadata: { version: '1.2.3' },
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const at = new Date(clock.now()).toISOString();
    assert.deepEqual(r.body, {
      id: 'host-1.worker_a',
      worker_id: 'host-1.worker_a',
      queue_name: 'emails',
      hostname: 'host-1',
      max_concurrency: 4,
      metadata: { version: '1.2.3' },
      version: null,
      registered_at: at,
      last_heartbeat_at: at,
      last_heartbeat: at,
      lease_duration_secs: 300,
      heartbeat_interval_secs: 30,
      status: 'active',
    });
    assert.deepEqual(
      events.map((e) => [e.event, e.data]),
      [['worker.registered', { worker_id: 'host-1.worker_a', queue_name: 'emails', hostname: 'host-1' }]],
    );

    await clock.advance(5_000);
    for (let i = 0; i < 5; i++) {
      const again = await api.post('/api/v1/workers/register', { worker_id: 'host-1.worker_a', hostname: `host-${i}` });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.equal(again.body.hostname, `host-${i}`, 'fields sent replace the stored ones');
      assert.equal(again.body.queue_name, 'emails', 'fields not sent are kept');
      assert.equal(again.body.registered_at, at);
      assert.equal(again.body.last_heartbeat_at, new Date(clock.now()).toISOString());
    }
    assert.equal(events.length, 1, 'a re-registration publishes no event');
    assert.equal(await workerRows(id), 1);
    assert.equal(await usedSlots(api), 1);
    // The one slot is taken: a new worker is refused with the figures.
    const over = await api.post('/api/v1/workers/register', { worker_id: 'host-2' });
    assertError(over, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.deepEqual([over.body.resource, over.body.current, over.body.limit, over.body.plan, over.body.upgrade_to], ['workers', 1, 1, 'free', 'starter']);
    assertError(await api.post('/api/v1/workers/register', {}), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(await workerRows(id), 1);
  });

  test('register without an id mints a UUID', async () => {
    const { api } = await org('starter');
    const a = await api.post('/api/v1/workers/register', { queue_name: 'q' });
    const b = await api.post('/api/v1/workers/register');
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.match(a.body.worker_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(a.body.worker_id, b.body.worker_id);
    assert.deepEqual([b.body.queue_name, b.body.hostname, b.body.max_concurrency, b.body.metadata], [null, null, null, {}]);
    assert.equal((await api.get(`/api/v1/workers/${a.body.worker_id}`)).body.queue_name, 'q');
  });

  test("another organization's id is 409, and its row is untouched", async () => {
    const a = await org('starter');
    const b = await org('starter');
    assert.equal((await a.api.post('/api/v1/workers/register', { worker_id: 'shared-name', hostname: 'a' })).status, 201);
    const r = await b.api.post('/api/v1/workers/register', { worker_id: 'shared-name', hostname: 'b' });
    assertError(r, 409, 'WORKER_ID_TAKEN');
    assert.equal((await a.api.get('/api/v1/workers/shared-name')).body.hostname, 'a');
    assert.equal(await workerRows(b.id), 0);
    assert.equal(await usedSlots(b.api), 0, 'the refusal charged nothing');
    // Even at its cap, another organization's id is a 409, not a 429.
    const f = await org('free');
    assert.equal((await f.api.post('/api/v1/workers/register', { worker_id: 'f-own' })).status, 201);
    assertError(await f.api.post('/api/v1/workers/register', { worker_id: 'shared-name' }), 409, 'WORKER_ID_TAKEN');
  });

  test('the cap holds at exactly the limit with 50 concurrent registrations', async () => {
    const { api, id } = await org('starter'); // 5 workers
    assert.equal((await api.post('/api/v1/workers/register', { worker_id: 'first' })).status, 201);
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, i) => api.post('/api/v1/workers/register', i % 2 === 0 ? { worker_id: `race-${i}` } : {})),
    );
    assert.equal(rs.filter((r) => r.status === 201).length, 4);
    const refused = rs.filter((r) => r.status !== 201);
    assert.equal(refused.length, 46);
    for (const r of refused) {
      assertError(r, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
      assert.equal(r.body.resource, 'workers');
      assert.equal(r.body.current, 5);
      assert.equal(r.body.limit, 5);
    }
    assert.equal(await workerRows(id), 5);
    assert.deepEqual((await api.get('/api/v1/organizations/usage')).body.usage.workers, { current: 5, limit: 5 });
  });

  test('50 concurrent registrations of one new id: one row, one charge', async () => {
    const { api, id, events } = await org('starter');
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => api.post('/api/v1/workers/register', { worker_id: 'same-new', hostname: `h${i}` })));
    assert.deepEqual(
      rs.map((r) => r.status).sort(),
      [...Array(49).fill(200), 201].sort(),
      JSON.stringify(rs.filter((r) => r.status >= 300).map((r) => r.body)),
    );
    assert.equal(await workerRows(id), 1);
    assert.equal(await usedSlots(api), 1);
    assert.equal(events.filter((e) => e.event === 'worker.registered').length, 1);

    // On Free (cap 1) none of them is refused for the slot the first one holds.
    const free = await org('free');
    const fs = await Promise.all(Array.from({ length: 50 }, () => free.api.post('/api/v1/workers/register', { worker_id: 'free-same' })));
    assert.equal(fs.filter((r) => r.status === 201).length, 1);
    assert.equal(fs.filter((r) => r.status === 200).length, 49);
    assert.equal(await workerRows(free.id), 1);
    assert.equal(await usedSlots(free.api), 1);
  });

  test('the reaper frees the slot two minutes after the last heartbeat, not before', async () => {
    const { api, id, events } = await org('free');
    const w = (await api.post('/api/v1/workers/register')).body.worker_id as string;
    assertError(await api.post('/api/v1/workers/register'), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    await clock.advance(119_000);
    assert.equal((await api.get(`/api/v1/workers/${w}`)).status, 200);
    assertError(await api.post('/api/v1/workers/register'), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    await clock.advance(1_000); // exactly 120 s: not older than the limit yet
    assert.equal((await api.get(`/api/v1/workers/${w}`)).status, 200);
    await clock.advance(1);
    assertError(await api.get(`/api/v1/workers/${w}`), 404, 'NOT_FOUND');
    assert.equal(await workerRows(id), 0);
    assert.deepEqual(
      events.filter((e) => e.event === 'worker.deregistered').map((e) => e.data),
      [{ worker_id: w, reason: 'stale' }],
    );
    assert.equal(await usedSlots(api), 0);
    assert.equal((await api.post('/api/v1/workers/register')).status, 201, 'the slot is free again');
    assertError(await api.post(`/api/v1/workers/${w}/heartbeat`), 404, 'NOT_FOUND');
  });

  test('the reaper deletes in bounded statements and releases each slot once', async () => {
    const { api, id, events } = await org('starter');
    for (let i = 0; i < 5; i++) assert.equal((await api.post('/api/v1/workers/register', { worker_id: `bulk-${i}` })).status, 201);
    assertError(await api.post('/api/v1/workers/register'), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    // Stale by the clock without advancing it (which would run the node's own reaper).
    await n.node.store.query(`UPDATE workers SET last_heartbeat_at = last_heartbeat_at - interval '1 hour' WHERE organization_id = $1`, [id]);
    const batches: number[] = [];
    const real = n.node.store;
    const counting: Store = {
      query: async (sql, params, name) => {
        const rows = await real.query(sql, params, name);
        if (/^\s*DELETE FROM workers WHERE id IN/.test(sql)) batches.push(rows.length);
        return rows as any[];
      },
      exec: (sql) => real.exec(sql),
      close: async () => {},
    };
    const released: string[] = [];
    const quotas = { release: (org: string, resource: string) => void released.push(`${org}/${resource}`) };
    const reaper = new WorkerReaper({ store: counting, clock, quotas, events: n.node.events, staleSeconds: 120, batchSize: 2 });
    try {
      assert.equal(await reaper.reapOnce(), 5);
    } finally {
      await reaper.stop();
    }
    assert.deepEqual(batches, [2, 2, 1]);
    assert.equal(await workerRows(id), 0);
    assert.deepEqual(released, Array(5).fill(`${id}/workers`));
    assert.equal(events.filter((e) => e.event === 'worker.deregistered' && e.data.reason === 'stale').length, 5);
  });

  test('heartbeats keep a worker alive', async () => {
    const { api } = await org('starter');
    assert.equal((await api.post('/api/v1/workers/register', { worker_id: 'beating' })).status, 201);
    for (let i = 0; i < 3; i++) {
      await clock.advance(100_000);
      const hb = await api.post('/api/v1/workers/beating/heartbeat', {});
      assert.equal(hb.status, 200, JSON.stringify(hb.body));
      assert.equal(hb.body.last_heartbeat_at, new Date(clock.now()).toISOString());
    }
    await clock.advance(100_000);
    // A re-registration counts as a heartbeat too.
    assert.equal((await api.post('/api/v1/workers/register', { worker_id: 'beating' })).status, 200);
    await clock.advance(100_000);
    assert.equal((await api.get('/api/v1/workers/beating')).status, 200, '300 s since registration, 100 s since the last beat');
    await clock.advance(20_001);
    assertError(await api.get('/api/v1/workers/beating'), 404, 'NOT_FOUND');
    assert.equal(await usedSlots(api), 0);
  });

  test('deregister deletes the row and frees the slot at once', async () => {
    const { api, id, events } = await org('free');
    assert.equal((await api.post('/api/v1/workers/register', { worker_id: 'gone-soon', hostname: 'h' })).status, 201);
    const r = await api.post('/api/v1/workers/gone-soon/deregister');
    assert.equal(r.status, 200);
    assert.equal(r.body.worker_id, 'gone-soon');
    assert.equal(r.body.status, 'deregistered');
    assert.equal(await workerRows(id), 0);
    assert.deepEqual(events.at(-1)?.data, { worker_id: 'gone-soon', reason: 'deregistered' });
    assert.equal(events.at(-1)?.event, 'worker.deregistered');
    assertError(await api.post('/api/v1/workers/gone-soon/deregister'), 404, 'NOT_FOUND');
    assertError(await api.post('/api/v1/workers/gone-soon/heartbeat'), 404, 'NOT_FOUND');
    assert.equal((await api.post('/api/v1/workers/register', { worker_id: 'next' })).status, 201, 'the slot is free');
  });

  test("another organization's workers are 404 everywhere and never listed", async () => {
    const a = await org('starter');
    const b = await org('starter');
    await a.api.post('/api/v1/workers/register', { worker_id: 'a-private', hostname: 'secret-host' });
    await b.api.post('/api/v1/workers/register', { worker_id: 'b-own' });
    const list = await b.api.get('/api/v1/workers');
    assert.deepEqual(list.body.map((w: { worker_id: string }) => w.worker_id), ['b-own']);
    assertError(await b.api.get('/api/v1/workers/a-private'), 404, 'NOT_FOUND');
    await clock.advance(1_000);
    assertError(await b.api.post('/api/v1/workers/a-private/heartbeat'), 404, 'NOT_FOUND');
    assertError(await b.api.post('/api/v1/workers/a-private/deregister'), 404, 'NOT_FOUND');
    const still = await a.api.get('/api/v1/workers/a-private');
    assert.equal(still.status, 200);
    assert.equal(still.body.last_heartbeat_at, still.body.registered_at, "B's heartbeat changed nothing");
    assert.equal(await usedSlots(a.api), 1);
  });

  test('bad input is 422 and changes nothing', async () => {
    const { api, id } = await org('starter');
    for (const worker_id of ['', 'x'.repeat(129), 'has space', 'ümlaut', 'a/b', 7, null]) {
      assertInvalid(await api.post('/api/v1/workers/register', { worker_id }), 'worker_id');
    }
    assert.equal((await api.post('/api/v1/workers/register', { worker_id: 'x'.repeat(128) })).status, 201, '128 characters is allowed');
    assertInvalid(await api.post('/api/v1/workers/register', { max_concurrency: 0 }), 'max_concurrency');
    assertInvalid(await api.post('/api/v1/workers/register', { queue_name: '.bad' }), 'queue_name');
    assertInvalid(await api.post('/api/v1/workers/register', { metadata: [1] }), 'metadata');
    assertInvalid(await api.post('/api/v1/workers/register', { metadata: { blob: 'x'.repeat(17 * 1024) } }), 'metadata');
    assertInvalid(await api.post('/api/v1/workers/register', '{"worker_id":'), '(body)');
    assertInvalid(await api.get('/api/v1/workers?limit=0'), 'limit');
    assertInvalid(await api.get('/api/v1/workers?cursor=nope'), 'cursor');
    assertError(await api.get('/api/v1/workers/has%20space'), 404, 'NOT_FOUND');
    assert.equal(await workerRows(id), 1);
    assert.equal(await usedSlots(api), 1);
  });

  test('list: by id, a page at a time', async () => {
    const { api } = await org('starter');
    for (const w of ['w-c', 'w-a', 'W-b', 'w-d']) assert.equal((await api.post('/api/v1/workers/register', { worker_id: w })).status, 201);
    const first = await api.get('/api/v1/workers?limit=3');
    assert.deepEqual(first.body.map((w: { worker_id: string }) => w.worker_id), ['W-b', 'w-a', 'w-c']);
    const next = nextLink(first);
    assert.ok(next);
    const second = await api.get(next);
    assert.deepEqual(second.body.map((w: { worker_id: string }) => w.worker_id), ['w-d']);
    assert.equal(nextLink(second), null);
    assert.equal(second.headers.get('x-next-cursor'), null);
  });

  test('permissions: reads need jobs:read, writes jobs:write', async () => {
    const { key, organizationId } = await insertKey(n, { plan: 'starter', permissions: ['jobs:read'] });
    const reader = n.api.as(key);
    const { key: wkey } = await insertKey(n, { organizationId, permissions: ['jobs:write'] });
    const writer = n.api.as(wkey);
    assertError(await reader.post('/api/v1/workers/register', { worker_id: 'p' }), 403, 'FORBIDDEN');
    assert.equal((await writer.post('/api/v1/workers/register', { worker_id: 'p' })).status, 201);
    assert.equal((await reader.get('/api/v1/workers')).status, 200);
    assert.equal((await reader.get('/api/v1/workers/p')).status, 200);
    assertError(await writer.get('/api/v1/workers/p'), 403, 'FORBIDDEN');
    assertError(await reader.post('/api/v1/workers/p/heartbeat'), 403, 'FORBIDDEN');
    assertError(await reader.post('/api/v1/workers/p/deregister'), 403, 'FORBIDDEN');
    assertError(await n.api.as('').get('/api/v1/workers'), 401, 'UNAUTHORIZED');
  });
});

test('after a restart the quota counts the worker rows', async () => {
  const store = await freshStore();
  const first = await startTestNode({ store });
  let second: SluiceNode | null = null;
  try {
    const { key } = await insertKey(first, { plan: 'free' });
    assert.equal((await first.api.as(key).post('/api/v1/workers/register', { worker_id: 'survivor' })).status, 201);
    await first.stop();
    // The same store again: its quota actors are rebuilt from rows.
    second = await startNode({ config: loadConfig(first.env) });
    const api = new Api(second.url, key);
    assert.equal((await api.get('/api/v1/organizations/usage')).body.usage.workers.current, 1);
    assertError(await api.post('/api/v1/workers/register', { worker_id: 'newcomer' }), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal((await api.post('/api/v1/workers/register', { worker_id: 'survivor' })).status, 200);
  } finally {
    await first.stop();
    await second?.stop();
    await store.dispose();
  }
});
