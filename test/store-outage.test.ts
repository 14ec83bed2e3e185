// PostgreSQL goes away under load: every request that needs the store answers 503 `unavailable` (never 500),
// including the rate limiter's plan lookup and the credential lookup when their caches expire mid-outage, and
// the node serves again once the store is back. The node reaches PostgreSQL through a TCP proxy that the test
// cuts (every connection reset, new ones refused) and restores.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { freshStore, sleep, startTestNode, STORE, type StoreLocation, type TestNode } from './helpers.js';

class CuttableProxy {
  private readonly sockets = new Set<net.Socket>();
  private server: net.Server | null = null;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async open(port = 0): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
  }

  /** Every connection reset at once, and nobody listening until `open` again. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    const closed = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    for (const s of this.sockets) s.resetAndDestroy();
    await closed;
  }
}

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
  n = await startTestNode({ clock, store: { env: { ...store.env, DATABASE_URL: url.toString() }, dispose: async () => {} } });
});
after(async () => {
  if (!enabled) return;
  await n.stop();
  await proxy.cut();
  await store.dispose();
});

test('a PostgreSQL outage under load answers 503, never 500, and the node recovers', { skip: !enabled && 'the embedded store has no connection to cut' }, async () => {
  const api = n.api;
  const warm = await api.enqueue({ queue_name: 'outage' });
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
  // Caches that refresh from the store (rate-limit plans, 30 s; credentials, 30 s) run out while it is down.
  await clock.advance(31_000);
  await sleep(3_000);
  await proxy.open(proxy.port);
  phase = 'after';
  for (let i = 0; i < 100 && okAfter.n < 20; i++) await sleep(100);
  running = false;
  await Promise.all(loops);

  assert.deepEqual(bad, [], `statuses: ${JSON.stringify([...statuses])}`);
  assert.ok((statuses.get(503) ?? 0) > 0, 'the outage was seen');
  assert.ok(okAfter.n >= 20, `the node serves again after the outage (statuses ${JSON.stringify([...statuses])})`);
});
