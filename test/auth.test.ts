// Credentials and JWT sessions over real HTTP: login, refresh, logout, me; the credential rules (Bearer only,
// query string 401, X-API-Key 401), revocation of keys and of tokens (at once, and across a restart), expiry
// under a ManualClock, token types, and the permissions a JWT carries.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { startNode } from '../src/node.js';
import { Api, freshStore, startTestNode, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey, orgOf } from './http-assert.js';

const LOGIN = '/api/v1/auth/login';
const REFRESH = '/api/v1/auth/refresh';
const LOGOUT = '/api/v1/auth/logout';
const ME = '/api/v1/auth/me';
const HOUR = 3_600_000;

interface Tokens {
  access_token: string;
  refresh_token: string;
  token_type: string;
  expires_in: number;
  refresh_expires_in: number;
}

describe('JWT sessions', () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  let n: TestNode;
  let api: Api;
  let anon: Api;
  let org: string;

  const login = async (key: string): Promise<Tokens> => {
    const r = await anon.post(LOGIN, { api_key: key });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };

  before(async () => {
    n = await startTestNode({ clock });
    api = n.api;
    anon = api.as('');
    org = await orgOf(n, api.key);
  });
  after(() => n.stop());

  test('login: the token pair; the access token works on every route the key may use', async () => {
    const t = await login(api.key);
    assert.deepEqual(Object.keys(t).sort(), ['access_token', 'expires_in', 'refresh_expires_in', 'refresh_token', 'token_type']);
    assert.equal(t.token_type, 'Bearer');
    assert.equal(t.expires_in, 3600);
    assert.equal(t.refresh_expires_in, 30 * 86_400);
    assert.match(t.access_token, /^eyJ/);
    assert.match(t.refresh_token, /^eyJ/);
    assert.notEqual(t.access_token, t.refresh_token);

    const jwt = api.as(t.access_token);
    const job = await jwt.enqueue({ queue_name: 'jwt', payload: { via: 'jwt' } });
    assert.equal((await jwt.get(`/api/v1/jobs/${job.id}`)).status, 200);
    assert.equal((await jwt.post('/api/v1/api-keys', { name: 'from-jwt' })).status, 201);
  });

  test('me: organization, key, permissions, via and lifetime, for a JWT and for an API key', async () => {
    const t = await login(api.key);
    const keyId = (await n.node.store.query('SELECT id FROM api_keys WHERE organization_id = $1 AND name = $2', [org, 'bootstrap']))[0]!.id;
    const r = await api.as(t.access_token).get(ME);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {
      organization_id: org,
      api_key_id: keyId,
      permissions: ['*'],
      via: 'jwt',
      issued_at: new Date(clock.now()).toISOString(),
      expires_at: new Date(clock.now() + HOUR).toISOString(),
    });
    const k = await api.get(ME);
    assert.deepEqual(k.body, { organization_id: org, api_key_id: keyId, permissions: ['*'], via: 'api_key', issued_at: null, expires_at: null });
  });

  test('login: 401 for an unknown or revoked key, or a token instead of a key; 422 without api_key', async () => {
    assertError(await anon.post(LOGIN, { api_key: 'svc_test_nope' }), 401, 'UNAUTHORIZED');
    const { key } = await insertKey(n, { organizationId: org, revoked: true });
    assertError(await anon.post(LOGIN, { api_key: key }), 401, 'UNAUTHORIZED');
    const t = await login(api.key);
    assertError(await anon.post(LOGIN, { api_key: t.access_token }), 401, 'UNAUTHORIZED');
    assertInvalid(await anon.post(LOGIN, {}), 'api_key');
    assertInvalid(await anon.post(LOGIN), 'api_key');
    assertInvalid(await anon.post(LOGIN, { api_key: '' }), 'api_key');
    assertInvalid(await anon.post(LOGIN, { api_key: 7 }), 'api_key');
  });

  test('refresh: a new access token, the same refresh token; the old access token keeps working', async () => {
    const t = await login(api.key);
    await clock.advance(10 * 60_000);
    const r = await anon.post(REFRESH, { refresh_token: t.refresh_token });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.token_type, 'Bearer');
    assert.equal(r.body.refresh_token, t.refresh_token);
    assert.notEqual(r.body.access_token, t.access_token);
    assert.equal(r.body.expires_in, 3600);
    assert.equal(r.body.refresh_expires_in, 30 * 86_400 - 600);
    assert.equal((await api.as(r.body.access_token).get(ME)).body.issued_at, new Date(clock.now()).toISOString());
    assert.equal((await api.as(t.access_token).get(ME)).status, 200);
    assertInvalid(await anon.post(REFRESH, {}), 'refresh_token');
    assertError(await anon.post(REFRESH, { refresh_token: 'eyJnope' }), 401, 'UNAUTHORIZED');
  });

  test('token types: a refresh token is not an access token, and an access token does not refresh', async () => {
    const t = await login(api.key);
    assertError(await api.as(t.refresh_token).get(ME), 401, 'UNAUTHORIZED');
    assertError(await api.as(t.refresh_token).get('/api/v1/jobs'), 401, 'UNAUTHORIZED');
    assertError(await anon.post(REFRESH, { refresh_token: t.access_token }), 401, 'UNAUTHORIZED');
  });

  test('forged tokens are 401: altered claims, another secret, alg none, garbage', async () => {
    const t = await login(api.key);
    const [h, p, sig] = t.access_token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    const altered = Buffer.from(JSON.stringify({ ...claims, sub: randomUUID() })).toString('base64url');
    assertError(await api.as(`${h}.${altered}.${sig}`).get(ME), 401, 'UNAUTHORIZED');
    const foreign = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(new TextEncoder().encode('x'.repeat(48)));
    assertError(await api.as(foreign).get(ME), 401, 'UNAUTHORIZED');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${p}.`;
    assertError(await api.as(none).get(ME), 401, 'UNAUTHORIZED');
    assertError(await api.as('eyJ.garbage').get(ME), 401, 'UNAUTHORIZED');
    assertError(await api.as(`${t.access_token}x`).get(ME), 401, 'UNAUTHORIZED');
  });

  test('credentials: only the Bearer header; the query string and X-API-Key are 401, JWTs included', async () => {
    const t = await login(api.key);
    for (const path of [ME, '/api/v1/jobs', '/api/v1/api-keys']) {
      assertError(await anon.get(`${path}?token=${t.access_token}`), 401, 'UNAUTHORIZED');
      assertError(await anon.get(`${path}?api_key=${api.key}`), 401, 'UNAUTHORIZED');
      // Refused even beside a valid header.
      assertError(await api.get(`${path}?token=${t.access_token}`), 401, 'UNAUTHORIZED');
      assertError(await anon.get(path, { 'x-api-key': api.key }), 401, 'UNAUTHORIZED');
      assertError(await anon.get(path, { 'x-api-key': t.access_token }), 401, 'UNAUTHORIZED');
      assertError(await anon.get(path, { authorization: t.access_token }), 401, 'UNAUTHORIZED');
      assertError(await anon.get(path, { authorization: `Basic ${t.access_token}` }), 401, 'UNAUTHORIZED');
      assertError(await anon.get(path), 401, 'UNAUTHORIZED');
    }
    // The public auth routes refuse a credential in the query string too.
    assertError(await anon.post(`${LOGIN}?api_key=${api.key}`, { api_key: api.key }), 401, 'UNAUTHORIZED');
    assertError(await anon.post(`${REFRESH}?token=${t.refresh_token}`, { refresh_token: t.refresh_token }), 401, 'UNAUTHORIZED');
  });

  test('a JWT carries its key\'s permissions: 403 beyond them, me and logout allowed with any', async () => {
    const { key } = await insertKey(n, { organizationId: org, permissions: ['jobs:read'] });
    const t = await login(key);
    const jwt = api.as(t.access_token);
    assert.equal((await jwt.get('/api/v1/jobs')).status, 200);
    assertError(await jwt.post('/api/v1/jobs', { queue_name: 'q', payload: {} }), 403, 'FORBIDDEN');
    assertError(await jwt.post('/api/v1/api-keys', { name: 'escalate' }), 403, 'FORBIDDEN');
    assertError(await jwt.get('/api/v1/api-keys'), 403, 'FORBIDDEN');
    assertError(await jwt.get(`/api/v1/api-keys/${randomUUID()}`), 403, 'FORBIDDEN');
    assertError(await jwt.delete(`/api/v1/api-keys/${randomUUID()}`), 403, 'FORBIDDEN');
    assertError(await jwt.get('/api/v1/queues'), 403, 'FORBIDDEN');
    const me = await jwt.get(ME);
    assert.equal(me.status, 200);
    assert.deepEqual(me.body.permissions, ['jobs:read']);
    assert.equal((await api.as(key).get(ME)).status, 200);
    const out = await jwt.post(LOGOUT);
    assert.equal(out.status, 200);
    assert.equal(out.body.revoked, 2);
  });

  test('a revoked key is 401 at once, and so is every JWT issued from it, access and refresh', async () => {
    const made = await api.post('/api/v1/api-keys', { name: 'short-lived' });
    const t = await login(made.body.key);
    const jwt = api.as(t.access_token);
    assert.equal((await jwt.get('/api/v1/jobs')).status, 200);
    assert.equal((await api.as(made.body.key).get('/api/v1/jobs')).status, 200);
    assert.equal((await api.delete(`/api/v1/api-keys/${made.body.id}`)).status, 200);
    assertError(await api.as(made.body.key).get('/api/v1/jobs'), 401, 'UNAUTHORIZED');
    assertError(await jwt.get('/api/v1/jobs'), 401, 'UNAUTHORIZED');
    assertError(await jwt.get(ME), 401, 'UNAUTHORIZED');
    assertError(await anon.post(REFRESH, { refresh_token: t.refresh_token }), 401, 'UNAUTHORIZED');
    assertError(await anon.post(LOGIN, { api_key: made.body.key }), 401, 'UNAUTHORIZED');
  });

  test('logout: the access token, its refresh token and its session\'s other access tokens are 401; other sessions live', async () => {
    const a = await login(api.key);
    const b = await login(api.key);
    const refreshed = await anon.post(REFRESH, { refresh_token: a.refresh_token });
    const out = await api.as(a.access_token).post(LOGOUT);
    assert.equal(out.status, 200);
    assert.deepEqual(out.body, { revoked: 2 });
    assertError(await api.as(a.access_token).get(ME), 401, 'UNAUTHORIZED');
    assertError(await api.as(a.access_token).get('/api/v1/jobs'), 401, 'UNAUTHORIZED');
    assertError(await api.as(refreshed.body.access_token).get(ME), 401, 'UNAUTHORIZED');
    assertError(await anon.post(REFRESH, { refresh_token: a.refresh_token }), 401, 'UNAUTHORIZED');
    assertError(await api.as(a.access_token).post(LOGOUT), 401, 'UNAUTHORIZED');
    assert.equal((await api.as(b.access_token).get(ME)).status, 200);
    assert.equal((await anon.post(REFRESH, { refresh_token: b.refresh_token })).status, 200);
    assert.equal((await api.get(ME)).status, 200);
  });

  test('logout with a refresh token in the body ends that session too; one of another organization is 422', async () => {
    const a = await login(api.key);
    const b = await login(api.key);
    const r = await api.as(a.access_token).post(LOGOUT, { refresh_token: b.refresh_token });
    assert.deepEqual(r.body, { revoked: 3 });
    assertError(await api.as(b.access_token).get(ME), 401, 'UNAUTHORIZED');
    assertError(await anon.post(REFRESH, { refresh_token: b.refresh_token }), 401, 'UNAUTHORIZED');

    // With an API key as the credential, only the session named in the body ends.
    const c = await login(api.key);
    assert.deepEqual((await api.post(LOGOUT, { refresh_token: c.refresh_token })).body, { revoked: 1 });
    assertError(await api.as(c.access_token).get(ME), 401, 'UNAUTHORIZED');
    assert.deepEqual((await api.post(LOGOUT)).body, { revoked: 0 });

    const stranger = await insertKey(n, { plan: 'enterprise' });
    const s = await login(stranger.key);
    const d = await login(api.key);
    assertInvalid(await api.as(d.access_token).post(LOGOUT, { refresh_token: s.refresh_token }), 'refresh_token');
    assertInvalid(await api.as(d.access_token).post(LOGOUT, { refresh_token: d.access_token }), 'refresh_token');
    assertInvalid(await api.as(d.access_token).post(LOGOUT, { refresh_token: 'eyJx' }), 'refresh_token');
    // Nothing was revoked by the refused calls.
    assert.equal((await api.as(s.access_token).get(ME)).status, 200);
    assert.equal((await api.as(d.access_token).get(ME)).status, 200);
    assertError(await anon.post(LOGOUT), 401, 'UNAUTHORIZED');
  });

  test('expiry by the node clock: the access token after its hour, the refresh token after its 30 days', async () => {
    const t = await login(api.key);
    await clock.advance(HOUR - 1_000);
    assert.equal((await api.as(t.access_token).get(ME)).status, 200);
    await clock.advance(1_000);
    const expired = await api.as(t.access_token).get(ME);
    assertError(expired, 401, 'UNAUTHORIZED');
    assert.match(expired.body.message, /expired/);
    const fresh = await anon.post(REFRESH, { refresh_token: t.refresh_token });
    assert.equal(fresh.status, 200);
    assert.equal((await api.as(fresh.body.access_token).get(ME)).status, 200);
    await clock.advance(30 * 86_400_000);
    assertError(await anon.post(REFRESH, { refresh_token: t.refresh_token }), 401, 'UNAUTHORIZED');
    assertError(await api.as(fresh.body.access_token).get(ME), 401, 'UNAUTHORIZED');
    // An expired refresh token in a logout body has nothing left to revoke.
    const live = await login(api.key);
    assert.deepEqual((await api.as(live.access_token).post(LOGOUT, { refresh_token: t.refresh_token })).body, { revoked: 2 });
  });

  test('logout and me need a credential; login and refresh need none', async () => {
    assertError(await anon.get(ME), 401, 'UNAUTHORIZED');
    assertError(await anon.post(LOGOUT), 401, 'UNAUTHORIZED');
    const t = await login(api.key);
    assert.equal((await api.as('svc_test_wrong').post(REFRESH, { refresh_token: t.refresh_token })).status, 200);
  });
});

test('revoked tokens and the generated JWT secret survive a restart', async () => {
  const store = await freshStore();
  const first = await startTestNode({ store });
  let second: Awaited<ReturnType<typeof startNode>> | null = null;
  try {
    const anon = first.api.as('');
    const out = (await anon.post(LOGIN, { api_key: first.api.key })).body as Tokens;
    const kept = (await anon.post(LOGIN, { api_key: first.api.key })).body as Tokens;
    assert.equal((await first.api.as(out.access_token).post(LOGOUT)).status, 200);
    await first.stop();

    second = await startNode({ config: loadConfig(first.env) });
    const again = new Api(second.url, '');
    assertError(await again.as(out.access_token).get(ME), 401, 'UNAUTHORIZED');
    assertError(await again.post(REFRESH, { refresh_token: out.refresh_token }), 401, 'UNAUTHORIZED');
    assert.equal((await again.as(kept.access_token).get(ME)).status, 200);
    assert.equal((await again.post(REFRESH, { refresh_token: kept.refresh_token })).status, 200);
  } finally {
    await first.stop();
    await second?.stop();
    await store.dispose();
  }
});

test('JWT_SECRET signs the tokens when set: a node with another secret refuses them', async () => {
  const store = await freshStore();
  const a = await startTestNode({ store, env: { JWT_SECRET: 'a'.repeat(40) } });
  let b: Awaited<ReturnType<typeof startNode>> | null = null;
  try {
    const t = (await a.api.as('').post(LOGIN, { api_key: a.api.key })).body as Tokens;
    assert.equal((await a.api.as(t.access_token).get(ME)).status, 200);
    await a.stop();
    b = await startNode({ config: loadConfig({ ...a.env, JWT_SECRET: 'b'.repeat(40) }) });
    assertError(await new Api(b.url, t.access_token).get(ME), 401, 'UNAUTHORIZED');
    assert.equal((await new Api(b.url, a.api.key).get(ME)).status, 200);
  } finally {
    await a.stop();
    await b?.stop();
    await store.dispose();
  }
});

test('unknown API keys: each read once for a while, many in a statement, one statement at a time; a live key is answered meanwhile', async () => {
  const n = await startTestNode();
  try {
    // The store the node reads keys from, watched: how many digests each read of keys asks for, and how many run at once.
    const store = n.node.store;
    const query = store.query.bind(store);
    const reads: number[] = [];
    let running = 0;
    let most = 0;
    store.query = (async (sql: string, params?: unknown[], name?: string) => {
      if (name !== 'findApiKeys') return query(sql, params, name);
      reads.push((params![0] as string[]).length);
      most = Math.max(most, ++running);
      try {
        return await query(sql, params, name);
      } finally {
        running--;
      }
    }) as typeof store.query;
    const keys = Array.from({ length: 100 }, () => `svc_test_${randomUUID().replaceAll('-', '')}`);
    const answers = await Promise.all([...keys, ...keys, ...keys].map((k) => n.api.as(k).get(ME)));
    for (const r of answers) assertError(r, 401, 'UNAUTHORIZED');
    assert.equal(most, 1, 'one read of keys at a time');
    assert.equal(reads.reduce((a, b) => a + b, 0), keys.length, 'each unknown key read once');
    assert.ok(reads.some((k) => k > 1), `keys asked for during a read go together in the next: ${reads}`);

    // Asked again within the half minute: refused without a read, while a live key is still answered.
    const again = await Promise.all([...keys.map((k) => n.api.as(k).get(ME)), n.api.get(ME)]);
    for (const r of again.slice(0, -1)) assertError(r, 401, 'UNAUTHORIZED');
    assert.equal(again.at(-1)!.status, 200);
    assert.ok(reads.reduce((a, b) => a + b, 0) <= keys.length + 1, `no unknown key read again: ${reads}`);
  } finally {
    await n.stop();
  }
});
