// PostgreSQL goes away under load: every request that needs the store answers 503 `unavailable` (never 500),
// and the node serves again once the store is back. Besides writes and reads under load: an organization whose
// quota actor is first loaded during the outage (the rate limiter asks that actor, which must read its plan from
// the down store), an API key this node has never looked up, every list, /auth/me, the readiness probe and the
// opening of an event stream. The node reaches PostgreSQL through a TCP proxy that the test cuts (every
// connection reset, new ones refused) and restores.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { CuttableProxy } from './proxy.js';
import { freshStore, sleep, startTestNode, STORE, type StoreLocation, type TestNode } from './helpers.js';

const enabled = STORE === 'pg';
let n: TestNode;
let store: StoreLocation;
let proxy: CuttableProxy;
const clock = new ManualClock(Date.UTC(2030, 0, 1));

before(async () => {
  if (!enabled) return;
  store = await freshStore();
  const url = new URL(store.env.DATABASE_URL!);
  proxy = new CuttableProxy({ host: url.hostname, port: Number(url.port || 5432) });
  await proxy.open();
  url.host = `127.0.0.1:${proxy.port}`;
  n = await startTestNode({ clock, env: { REGISTRATION_MODE: 'open' }, store: { env: { ...store.env, DATABASE_URL: url.toString() }, dispose: async () => {} } });
});
after(async () => {
  if (!enabled) return;
  await n.stop();
  await proxy.cut();
  await store.dispose();
});

/** Status and JSON body of an event stream's opening: an accepted stream stays open, so only its head is read. */
async function openStream(url: string, key: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(15_000) });
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    await res.body?.cancel();
    return { status: res.status, body: null };
  }
  return { status: res.status, body: await res.json() };
}

test('a PostgreSQL outage under load answers 503, never 500, and the node recovers', { skip: !enabled && 'the embedded store has no connection to cut' }, async (t) => {
  const api = n.api;
  const warm = await api.enqueue({ queue_name: 'outage' });
  // Two free organizations made before the outage. The first logs in (its key is then in this node's credential
  // cache) but sends nothing that reaches its quota actor, which is first loaded during the outage; the second's
  // key is never looked up before it.
  const register = async (slug: string) => {
    const r = await api.as('').post('/api/v1/organizations', { name: slug, slug });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.api_key.key as string;
  };
  const coldActor = await register('outage-cold-actor');
  assert.equal((await api.as('').post('/api/v1/auth/login', { api_key: coldActor })).status, 200);
  const unseenKey = await register('outage-unseen-key');
  const statuses = new Map<number, number>();
  const bad: string[] = [];
  let phase: 'before' | 'down' | 'after' = 'before';
  const okAfter = { n: 0 };
  let running = true;
  const ops = [
    () => api.post('/api/v1/jobs', { queue_name: 'outage', payload: { at: phase } }),
    () => api.get(`/api/v1/jobs/${warm.id}`),
    () => api.get('/api/v1/jobs?queue_name=outage&limit=5'),
    () => api.post('/api/v1/jobs/claim', { queue_name: 'outage', worker_id: 'w1', limit: 2 }),
    () => api.get('/api/v1/organizations/usage'),
    () => api.get('/api/v1/queues/outage/stats'),
    () => api.get('/api/v1/jobs/stats'),
    () => api.post('/api/v1/workers/register', { worker_id: 'w-outage' }),
  ];
  const loops = Array.from({ length: 6 }, async (_, i) => {
    for (let k = i; running; k++) {
      const r = await ops[k % ops.length]!();
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status >= 500 && r.status !== 503) bad.push(`${phase}: ${r.status} ${JSON.stringify(r.body)}`);
      if (r.status === 503) assert.equal(r.body.error, 'unavailable');
      if (phase === 'after' && r.status < 300) okAfter.n++;
      await sleep(5);
    }
  });

  await sleep(500);
  phase = 'down';
  await proxy.cut();
  // Time that runs on the node's clock (token lifetimes, usage windows, the rate limiter's hold of an organization
  // without a rate, 30 s) passes while the store is down. Cached credentials expire on real time and are not
  // expired by this; the key never seen above is the credential read from the down store.
  await clock.advance(31_000);
  const once: Array<[string, () => Promise<{ status: number; body: any }>]> = [
    // /auth/me reads nothing from the store (the default organization gets its 200 below): the 503 is the quota
    // actor's load.
    ['a quota actor loaded during the outage', () => api.as(coldActor).get('/api/v1/auth/me')],
    ['an API key never looked up', () => api.as(unseenKey).get('/api/v1/queues')],
    ['the queue list', () => api.get('/api/v1/queues')],
    ['the DLQ list', () => api.get('/api/v1/jobs/dlq')],
    ['the schedule list', () => api.get('/api/v1/schedules')],
    ['the outgoing webhook list', () => api.get('/api/v1/outgoing-webhooks')],
    ['the workflow list', () => api.get('/api/v1/workflows')],
    ['/auth/me', () => api.get('/api/v1/auth/me')],
    ['an event stream', () => openStream(`${api.url}/api/v1/events?queue=outage`, api.key)],
  ];
  const answers: string[] = [];
  for (const [what, call] of once) {
    const r = await call();
    answers.push(`${what}: ${r.status}`);
    // Reads that need the store answer 503; what a node can answer from memory (its own identity, a stream
    // fed by events) may still succeed, but nothing answers 500.
    if (r.status >= 500) {
      assert.equal(r.status, 503, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error, 'unavailable', what);
    }
  }
  for (const what of ['a quota actor loaded during the outage', 'an API key never looked up', 'the queue list', 'the DLQ list', 'the schedule list', 'the outgoing webhook list', 'the workflow list']) {
    assert.ok(answers.includes(`${what}: 503`), `${what} answers 503 while the store is down: ${answers.join('; ')}`);
  }
  t.diagnostic(`during the outage: ${answers.join('; ')}`);
  const ready = await api.as('').get('/health/ready');
  assert.equal(ready.status, 503, JSON.stringify(ready.body));
  assert.equal(ready.body.error, 'unavailable');
  assert.equal(ready.body.checks.store, 'failed');
  await sleep(3_000);
  await proxy.open(proxy.port);
  phase = 'after';
  for (let i = 0; i < 100 && okAfter.n < 20; i++) await sleep(100);
  running = false;
  await Promise.all(loops);

  assert.deepEqual(bad, [], `statuses: ${JSON.stringify([...statuses])}`);
  // Once the store is back, the organization whose actor could not load is served.
  assert.equal((await api.as(coldActor).get('/api/v1/auth/me')).status, 200);
  assert.equal((await api.as(unseenKey).get('/api/v1/queues')).status, 200);
  assert.equal((await api.as('').get('/health/ready')).status, 200);
  assert.ok((statuses.get(503) ?? 0) > 0, 'the outage was seen');
  assert.ok(okAfter.n >= 20, `the node serves again after the outage (statuses ${JSON.stringify([...statuses])})`);
});
