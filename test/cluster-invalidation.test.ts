// Two nodes on one PostgreSQL database: a revocation or plan change made through one node holds on the other
// at once (LISTEN/NOTIFY), not when the other node's 30-second cache runs out. The embedded store is
// single-node, so this runs on PostgreSQL only.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { startNode, type SluiceNode } from '../src/node.js';
import { Api, CLUSTER_ENV, freshStore, sleep, startTestNode, STORE, type StoreLocation, type TestNode } from './helpers.js';
import { insertKey } from './http-assert.js';

const skip = STORE !== 'pg' ? 'cluster invalidation needs PostgreSQL' : false;
const ADMIN = 'admin-secret-for-cluster-tests';

let store: StoreLocation;
let a: TestNode;
let b: SluiceNode;
let onA: Api;
let onB: Api;

before(async () => {
  if (skip) return;
  store = await freshStore();
  a = await startTestNode({ store, env: { ADMIN_API_KEY: ADMIN, ...CLUSTER_ENV } });
  b = await startNode({ config: loadConfig(a.env) });
  onA = a.api;
  onB = new Api(b.url, a.api.key);
});

after(async () => {
  if (skip) return;
  await b?.stop();
  await a?.stop();
  await store?.dispose();
});

/** Polls until `check` holds, for at most 3 s: far below the 30 s a cache entry lives. */
async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + 3_000;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`${what} did not hold within 3 s`);
    await sleep(20);
  }
}

test('a key revoked through one node is refused by the other at once', { skip }, async () => {
  const created = await onA.post('/api/v1/api-keys', { name: 'short-lived', permissions: ['jobs:read'] });
  assert.equal(created.status, 201);
  const key = created.body.key as string;
  // Node B has the key cached now.
  assert.equal((await onB.as(key).get('/api/v1/jobs')).status, 200);
  assert.equal((await onA.delete(`/api/v1/api-keys/${created.body.id}`)).status, 200);
  await eventually('node B refusing the revoked key', async () => (await onB.as(key).get('/api/v1/jobs')).status === 401);
});

test('a JWT ended by logout on one node is refused by the other at once', { skip }, async () => {
  const login = await onA.post('/api/v1/auth/login', { api_key: onA.key });
  assert.equal(login.status, 200);
  const token = login.body.access_token as string;
  assert.equal((await onB.as(token).get('/api/v1/auth/me')).status, 200);
  assert.equal((await onA.as(token).post('/api/v1/auth/logout', {})).status, 200);
  await eventually('node B refusing the logged-out token', async () => (await onB.as(token).get('/api/v1/auth/me')).status === 401);
});

test('a plan change through one node lifts the rate limit on the other at once', { skip }, async () => {
  const { key, organizationId } = await insertKey(a, { plan: 'free', limited: true });
  const other = onB.as(key);
  // Free: a burst of 10 in any second. Node B caches the plan on the first request.
  let refused = false;
  for (let i = 0; i < 30 && !refused; i++) refused = (await other.get('/api/v1/jobs')).status === 429;
  assert.ok(refused, 'the free plan burst should be reached on node B');
  const changed = await onA.call('PUT', `/api/v1/admin/organizations/${organizationId}/plan`, { plan: 'enterprise' }, { 'x-admin-key': ADMIN });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  // 30 requests in a row pass only under the new limits (the free plan refuses the 11th within a second).
  await eventually('node B applying the enterprise limits', async () => {
    for (let i = 0; i < 30; i++) if ((await other.get('/api/v1/jobs')).status !== 200) return false;
    return true;
  });
});

test('after its listening connection is cut, a node re-reads cached keys: a revocation sent meanwhile still holds', { skip }, async () => {
  const created = await onA.post('/api/v1/api-keys', { name: 'cut-off', permissions: ['jobs:read'] });
  const key = created.body.key as string;
  assert.equal((await onB.as(key).get('/api/v1/jobs')).status, 200);
  // Both nodes listen; cutting every listener makes the revocation's NOTIFY reach nobody.
  const cut = await a.node.store.query<{ n: number }>(
    `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`,
  );
  assert.ok(cut[0]!.n >= 2, `expected both nodes' listeners, cut ${cut[0]!.n}`);
  assert.equal((await onA.delete(`/api/v1/api-keys/${created.body.id}`)).status, 200);
  await eventually('node B refusing the key after reconnecting', async () => (await onB.as(key).get('/api/v1/jobs')).status === 401);
});

test("a key revoked through one node ends the key's open streams on the other", { skip }, async () => {
  const created = await onA.post('/api/v1/api-keys', { name: 'streaming', permissions: ['jobs:read'] });
  const key = created.body.key as string;
  const res = await fetch(`${b.url}/api/v1/events`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200);
  let ended = false;
  void (async () => {
    for await (const _chunk of res.body!) {
      /* keep reading until the server ends the stream */
    }
    ended = true;
  })().catch(() => (ended = true));
  assert.equal((await onA.delete(`/api/v1/api-keys/${created.body.id}`)).status, 200);
  await eventually("node B ending the revoked key's stream", async () => ended);
});

test('an outgoing webhook created through one node is used by the other at once', { skip }, async () => {
  const got: string[] = [];
  const receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      got.push(JSON.parse(raw).data.queue_name);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  try {
    const { key } = await insertKey(a, { plan: 'pro' });
    const tenantA = onA.as(key);
    const tenantB = onB.as(key);
    // Node B learns that this organization has no endpoint (and caches it).
    assert.equal((await tenantB.post('/api/v1/jobs', { queue_name: 'before-hook', payload: {} })).status, 201);
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    assert.equal((await tenantA.post('/api/v1/outgoing-webhooks', { name: 'x', url, events: ['job.created'] })).status, 201);
    await eventually('node B delivering to the new endpoint', async () => {
      assert.equal((await tenantB.post('/api/v1/jobs', { queue_name: 'after-hook', payload: {} })).status, 201);
      await sleep(100);
      return got.includes('after-hook');
    });
    assert.ok(!got.includes('before-hook'));
  } finally {
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  }
});
