// API keys over real HTTP: create (shown once, prefixes, stored as a digest), list with cursors, get, revoke
// (effective at once), permissions enforced, the coarse last_used_at, and isolation between organizations.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { digestKey } from '../src/actors/org/api-key.js';
import { ManualClock } from '../src/clock.js';
import { Api, sleep, startTestNode, type ApiResponse, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey, nextLink, orgOf } from './http-assert.js';

const KEYS = '/api/v1/api-keys';
const ALL = ['*', 'jobs:read', 'jobs:write', 'queues:read', 'queues:write', 'dlq:read', 'dlq:write'];

describe('API keys', () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  let n: TestNode;
  let api: Api;
  let org: string;

  before(async () => {
    n = await startTestNode({ clock });
    api = n.api;
    org = await orgOf(n, api.key);
  });
  after(() => n.stop());

  test('create: 201 with the key once, default permissions ["*"], svc_test_ outside production, stored as a digest', async () => {
    const r = await api.post(KEYS, { name: 'deploy' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(Object.keys(r.body).sort(), ['created_at', 'id', 'is_active', 'key', 'key_prefix', 'name', 'permissions']);
    assert.equal(r.body.is_active, true);
    assert.equal(r.body.name, 'deploy');
    assert.deepEqual(r.body.permissions, ['*']);
    assert.match(r.body.key, /^svc_test_[A-Za-z0-9_-]{43}$/);
    assert.equal(r.body.key_prefix, r.body.key.slice(0, 16));
    assert.equal(r.body.created_at, new Date(clock.now()).toISOString());

    const rows = await n.node.store.query('SELECT key_digest, key_prefix FROM api_keys WHERE id = $1', [r.body.id]);
    assert.equal(rows[0]!.key_digest, digestKey(r.body.key));
    const anywhere = await n.node.store.query("SELECT count(*)::int AS n FROM api_keys WHERE key_digest = $1 OR name = $1", [r.body.key]);
    assert.equal(anywhere[0]!.n, 0);

    // The new key works, and is never shown again.
    const own = api.as(r.body.key);
    const got = await own.get(`${KEYS}/${r.body.id}`);
    assert.equal(got.status, 200);
    assert.ok(!('key' in got.body) && !('key_digest' in got.body));
    const listed = await own.get(`${KEYS}?limit=100`);
    assert.ok(!JSON.stringify(listed.body).includes(r.body.key));
    assert.ok(!JSON.stringify(listed.body).includes('key_digest'));
    assert.ok(!JSON.stringify(listed.body).includes(rows[0]!.key_digest));
  });

  test('create with permissions: the key gets exactly those; a list holding "*" is "*"', async () => {
    const r = await api.post(KEYS, { name: 'reader', permissions: ['jobs:read', 'queues:read'] });
    assert.equal(r.status, 201);
    assert.deepEqual(r.body.permissions, ['jobs:read', 'queues:read']);
    const reader = api.as(r.body.key);
    assert.equal((await reader.get('/api/v1/jobs')).status, 200);
    assert.equal((await reader.get('/api/v1/queues')).status, 200);
    assertError(await reader.post('/api/v1/jobs', { queue_name: 'q', payload: {} }), 403, 'FORBIDDEN');
    assertError(await reader.get('/api/v1/jobs/dlq'), 403, 'FORBIDDEN');

    const every = await api.post(KEYS, { name: 'every', permissions: ALL });
    assert.equal(every.status, 201);
    assert.deepEqual(every.body.permissions, ['*']);
    const star = await api.post(KEYS, { name: 'star', permissions: ['jobs:read', '*'] });
    assert.deepEqual(star.body.permissions, ['*']);
  });

  test('create: 422 for a missing or empty name, unknown or repeated permissions, an empty list, a wrong type', async () => {
    assertInvalid(await api.post(KEYS, {}), 'name');
    assertInvalid(await api.post(KEYS), 'name');
    assertInvalid(await api.post(KEYS, { name: '' }), 'name');
    assertInvalid(await api.post(KEYS, { name: '   ' }), 'name');
    assertInvalid(await api.post(KEYS, { name: 'x'.repeat(101) }), 'name');
    assertInvalid(await api.post(KEYS, { name: 42 }), 'name');
    assertInvalid(await api.post(KEYS, { name: 'k', permissions: ['jobs:delete'] }), 'permissions.0');
    assertInvalid(await api.post(KEYS, { name: 'k', permissions: ['jobs:read', 'admin'] }), 'permissions.1');
    assertInvalid(await api.post(KEYS, { name: 'k', permissions: ['jobs:read', 'jobs:read'] }), 'permissions');
    assertInvalid(await api.post(KEYS, { name: 'k', permissions: [] }), 'permissions');
    assertInvalid(await api.post(KEYS, { name: 'k', permissions: 'jobs:read' }), 'permissions');
    assertInvalid(await api.post(KEYS, '{"name":'), '(body)');
    assertInvalid(await api.post(KEYS, ['name']), '(body)');
  });

  test('list: newest first, paged by cursor without gaps or repeats, revoked keys included', async () => {
    // Enterprise: no api_keys quota and no rate limit to get in the way of this walk under a frozen clock.
    const { key, organizationId } = await insertKey(n, { plan: 'enterprise' });
    const other = api.as(key);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      await clock.advance(1); // distinct created_at; ties are ordered by id anyway
      made.push((await other.post(KEYS, { name: `k${i}` })).body.id);
    }
    await other.delete(`${KEYS}/${made[1]}`);
    const seen: any[] = [];
    let path: string | null = `${KEYS}?limit=2`;
    let pages = 0;
    while (path) {
      const r: ApiResponse = await other.get(path);
      assert.equal(r.status, 200);
      assert.ok(r.body.length <= 2);
      seen.push(...r.body);
      path = nextLink(r);
      if (path) assert.equal(r.headers.get('x-next-cursor'), new URL(path, n.node.url).searchParams.get('cursor'));
      pages++;
    }
    assert.equal(pages, 3);
    // The inserted fixture key first (oldest), then the five, newest first.
    assert.deepEqual(
      seen.map((k) => k.id),
      [...made].reverse().concat(seen[5].id),
    );
    assert.equal(seen.length, 6);
    const rows = await n.node.store.query('SELECT id FROM api_keys WHERE organization_id = $1', [organizationId]);
    assert.equal(rows.length, 6);
    const revoked = seen.find((k) => k.id === made[1]);
    assert.equal(revoked.status, 'revoked');
    assert.equal(revoked.is_active, false);
    assert.ok(revoked.revoked_at);
    for (const k of seen) {
      assert.deepEqual(Object.keys(k).sort(), ['created_at', 'id', 'is_active', 'key_prefix', 'last_used_at', 'name', 'permissions', 'revoked_at', 'status']);
      assert.equal(k.is_active, k.status === 'active');
    }
  });

  test('list: 422 for a bad limit or cursor, or a cursor of another list', async () => {
    assertInvalid(await api.get(`${KEYS}?limit=0`), 'limit');
    assertInvalid(await api.get(`${KEYS}?limit=101`), 'limit');
    assertInvalid(await api.get(`${KEYS}?cursor=nope`), 'cursor');
    await api.post('/api/v1/queues', { name: 'cursor-a' }).catch(() => {});
    await api.post('/api/v1/queues', { name: 'cursor-b' }).catch(() => {});
    const queues = await api.get('/api/v1/queues?limit=1');
    const foreign = queues.headers.get('x-next-cursor');
    if (foreign) assertInvalid(await api.get(`${KEYS}?cursor=${foreign}`), 'cursor');
    const jobsCursor = Buffer.from(JSON.stringify({ l: 'jobs', k: ['2030-01-01T00:00:00.000000Z', randomUUID()] })).toString('base64url');
    assertInvalid(await api.get(`${KEYS}?cursor=${jobsCursor}`), 'cursor');
  });

  test('get: the key without its secret; 404 for an unknown id, a non-UUID, or a key of another organization', async () => {
    const made = await api.post(KEYS, { name: 'get-me', permissions: ['dlq:read'] });
    const r = await api.get(`${KEYS}/${made.body.id}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.id, made.body.id);
    assert.equal(r.body.name, 'get-me');
    assert.equal(r.body.key_prefix, made.body.key_prefix);
    assert.deepEqual(r.body.permissions, ['dlq:read']);
    assert.equal(r.body.status, 'active');
    assert.equal(r.body.revoked_at, null);
    assert.equal((await api.get(`${KEYS}/${made.body.id.toUpperCase()}`)).body.id, made.body.id);

    assertError(await api.get(`${KEYS}/${randomUUID()}`), 404, 'NOT_FOUND');
    assertError(await api.get(`${KEYS}/not-a-uuid`), 404, 'NOT_FOUND');
    const stranger = api.as((await insertKey(n)).key);
    assertError(await stranger.get(`${KEYS}/${made.body.id}`), 404, 'NOT_FOUND');
    const mine = await stranger.get(KEYS);
    assert.ok(!mine.body.some((k: any) => k.id === made.body.id));
  });

  test('revoke: 401 for the key at once, the record says revoked, a second revoke keeps the first time', async () => {
    const made = await api.post(KEYS, { name: 'to-revoke' });
    const doomed = api.as(made.body.key);
    // Used first, so the authenticator holds it in its cache.
    assert.equal((await doomed.get('/api/v1/jobs')).status, 200);
    const r = await api.delete(`${KEYS}/${made.body.id}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'revoked');
    assert.equal(r.body.revoked_at, new Date(clock.now()).toISOString());
    assertError(await doomed.get('/api/v1/jobs'), 401, 'UNAUTHORIZED');
    assertError(await doomed.post('/api/v1/jobs', { queue_name: 'q', payload: {} }), 401, 'UNAUTHORIZED');
    assert.equal((await api.get(`${KEYS}/${made.body.id}`)).body.status, 'revoked');

    await clock.advance(60_000);
    const again = await api.delete(`${KEYS}/${made.body.id}`);
    assert.equal(again.status, 200);
    assert.equal(again.body.revoked_at, r.body.revoked_at);
  });

  test('revoke: a key can revoke itself; 404 for unknown ids and for keys of another organization', async () => {
    const self = await api.post(KEYS, { name: 'self' });
    const me = api.as(self.body.key);
    assert.equal((await me.delete(`${KEYS}/${self.body.id}`)).status, 200);
    assertError(await me.get(KEYS), 401, 'UNAUTHORIZED');

    assertError(await api.delete(`${KEYS}/${randomUUID()}`), 404, 'NOT_FOUND');
    assertError(await api.delete(`${KEYS}/nope`), 404, 'NOT_FOUND');
    const victim = await api.post(KEYS, { name: 'victim' });
    const stranger = api.as((await insertKey(n)).key);
    assertError(await stranger.delete(`${KEYS}/${victim.body.id}`), 404, 'NOT_FOUND');
    assert.equal((await api.as(victim.body.key).get('/api/v1/jobs')).status, 200);
  });

  test('every API key route needs "*": 403 for keys with any other permissions, 401 without a credential', async () => {
    const made = await api.post(KEYS, { name: 'target' });
    const partial = api.as((await insertKey(n, { organizationId: org, permissions: ALL.slice(1) })).key);
    const routes: Array<[string, string, unknown?]> = [
      ['POST', KEYS, { name: 'x' }],
      ['GET', KEYS],
      ['GET', `${KEYS}/${made.body.id}`],
      ['DELETE', `${KEYS}/${made.body.id}`],
    ];
    for (const [method, path, body] of routes) {
      assertError(await partial.call(method, path, body), 403, 'FORBIDDEN');
      assertError(await api.as('').call(method, path, body), 401, 'UNAUTHORIZED');
      assertError(await api.as('').call(method, path, body, { 'x-api-key': api.key }), 401, 'UNAUTHORIZED');
    }
    // The refused DELETE changed nothing.
    assert.equal((await api.get(`${KEYS}/${made.body.id}`)).body.status, 'active');
  });

  test('last_used_at is written on use, then at most once every 5 minutes', async () => {
    const made = await api.post(KEYS, { name: 'usage' });
    const key = api.as(made.body.key);
    const lastUsed = async () => (await api.get(`${KEYS}/${made.body.id}`)).body.last_used_at as string | null;
    const eventually = async (want: string) => {
      for (let i = 0; i < 100 && (await lastUsed()) !== want; i++) await sleep(20);
      assert.equal(await lastUsed(), want);
    };
    assert.equal(await lastUsed(), null);
    const t0 = new Date(clock.now()).toISOString();
    assert.equal((await key.get('/api/v1/jobs')).status, 200);
    await eventually(t0);

    await clock.advance(4 * 60_000 + 59_000);
    assert.equal((await key.get('/api/v1/jobs')).status, 200);
    await sleep(200);
    assert.equal(await lastUsed(), t0);

    await clock.advance(1_000);
    const t1 = new Date(clock.now()).toISOString();
    assert.equal((await key.get('/api/v1/jobs')).status, 200);
    await eventually(t1);
  });
});

test('keys are svc_live_ in production', async () => {
  const n = await startTestNode({ env: { NODE_ENV: 'production', JWT_SECRET: 'p'.repeat(40) } });
  try {
    assert.match(n.api.key, /^svc_live_/);
    const r = await n.api.post(KEYS, { name: 'live' });
    assert.equal(r.status, 201);
    assert.match(r.body.key, /^svc_live_[A-Za-z0-9_-]{43}$/);
    assert.equal((await n.api.as(r.body.key).get('/api/v1/jobs')).status, 200);
  } finally {
    await n.stop();
  }
});
