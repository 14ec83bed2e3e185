// Real-time streams over real HTTP: SSE of the organization's events, of one job and of a queue's stats, and
// the WebSocket; query-string credentials on these routes only; revocation, permissions, the per-organization
// cap (exact under a race), isolation between organizations, no bus listener left behind, clean shutdown.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { ManualClock } from '../src/clock.js';
import { Api, sleep, startTestNode, type ApiResponse, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey, orgOf } from './http-assert.js';

const CAP = 6;

interface Received {
  id: string;
  env: any;
}

/** An SSE client on fetch: parses `id:`/`data:` blocks and comments; close() aborts. */
class Sse {
  readonly events: Received[] = [];
  readonly comments: string[] = [];
  ended = false;
  private constructor(private readonly ac: AbortController) {}

  static async open(url: string, headers: Record<string, string> = {}): Promise<Sse | ApiResponse> {
    const ac = new AbortController();
    const res = await fetch(url, { headers, signal: ac.signal });
    if (res.status !== 200) {
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
    }
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const sse = new Sse(ac);
    void sse.pump(res.body!);
    return sse;
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of body) {
        buf += decoder.decode(chunk, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let id: string | null = null;
          let data: string | null = null;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data = line.slice(6);
            else assert.fail(`unexpected SSE line ${JSON.stringify(line)}`);
          }
          if (data !== null) {
            assert.ok(id !== null, 'every event has an id line');
            this.events.push({ id, env: JSON.parse(data) });
          }
        }
      }
    } catch {
      /* aborted by close() */
    }
    this.ended = true;
  }

  names(): string[] {
    return this.events.map((e) => e.env.event);
  }

  close(): void {
    this.ac.abort();
  }
}

async function sse(url: string, headers?: Record<string, string>): Promise<Sse> {
  const r = await Sse.open(url, headers);
  assert.ok(r instanceof Sse, `expected a stream, got ${(r as ApiResponse).status} ${JSON.stringify((r as ApiResponse).body)}`);
  return r;
}

async function refused(url: string, headers?: Record<string, string>): Promise<ApiResponse> {
  const r = await Sse.open(url, headers);
  if (r instanceof Sse) {
    r.close();
    assert.fail(`${url} opened a stream`);
  }
  return r;
}

/** Waits (generously) until `cond` holds. */
async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

class Ws {
  readonly messages: any[] = [];
  closed: { code: number } | null = null;
  constructor(readonly ws: WebSocket) {
    ws.on('message', (m) => this.messages.push(JSON.parse(m.toString())));
    ws.on('close', (code) => (this.closed = { code }));
  }
  names(): string[] {
    return this.messages.map((m) => m.event);
  }
}

/** Opens a WebSocket, or resolves to the status of the refused upgrade. */
function wsOpen(url: string, headers: Record<string, string> = {}): Promise<Ws | { status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), { headers });
    const w = new Ws(ws);
    ws.once('open', () => resolve(w));
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
    });
    ws.once('error', reject);
  });
}

async function ws(url: string, headers?: Record<string, string>): Promise<Ws> {
  const r = await wsOpen(url, headers);
  assert.ok(r instanceof Ws, `expected a WebSocket, got ${JSON.stringify(r)}`);
  return r;
}

describe('real-time streams', () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  let n: TestNode;
  let api: Api;
  let org: string;
  let base: string;

  before(async () => {
    n = await startTestNode({ clock, env: { STREAMS_PER_ORG: String(CAP) } });
    api = n.api;
    base = n.node.url;
    org = await orgOf(n, api.key);
  });
  after(() => n.stop());

  const auth = (key: string) => ({ authorization: `Bearer ${key}` });
  const noStreamsLeft = (o: string) => until(`no stream of ${o} left`, () => n.node.streams.count(o) === 0 && n.node.events.listeners(o) === 0);

  async function completeOne(queue: string): Promise<string> {
    const job = await api.enqueue({ queue_name: queue });
    const [claimed] = await api.claim(queue);
    assert.equal(claimed.id, job.id);
    const r = await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id, result: { ok: 1 } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return job.id;
  }

  test('/events: job.created, job.started, job.completed in the envelope, with id lines; the opening comment is no event', async () => {
    const s = await sse(`${base}/api/v1/events`, auth(api.key));
    const id = await completeOne('e-basic');
    await until('three events', () => s.events.length >= 3);
    assert.deepEqual(s.names(), ['job.created', 'job.started', 'job.completed']);
    for (const { id: line, env } of s.events) {
      assert.deepEqual(Object.keys(env).sort(), ['created_at', 'data', 'event', 'id']);
      assert.equal(line, env.id);
      assert.equal(env.data.job_id, id);
      assert.equal(env.data.queue_name, 'e-basic');
      assert.equal(new Date(env.created_at).toISOString(), env.created_at);
    }
    assert.deepEqual(s.events.map((e) => e.env.data.status), ['pending', 'processing', 'completed']);
    assert.equal(new Set(s.events.map((e) => e.id)).size, 3);
    assert.deepEqual(s.comments, ['open']);
    s.close();
    await noStreamsLeft(org);
  });

  test('a job with a completion callback: its events carry nothing of the callback', async () => {
    const s = await sse(`${base}/api/v1/events?queue=e-callback`, auth(api.key));
    const job = await api.enqueue({ queue_name: 'e-callback', completion_webhook: 'http://127.0.0.1:9/cb', completion_webhook_secret: 'cb-secret' });
    const [claimed] = await api.claim('e-callback');
    assert.equal((await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id })).status, 200);
    await until('three events', () => s.events.length >= 3);
    for (const { env } of s.events) {
      assert.ok(!('callback' in env.data), `${env.event} carries ${JSON.stringify(env.data)}`);
      assert.ok(!JSON.stringify(env).includes('cb-secret'));
    }
    s.close();
    await noStreamsLeft(org);
  });

  test('/events filters: queue (alias queue_name), events by name and by family; 422 on bad filters', async () => {
    const byQueue = await sse(`${base}/api/v1/events?queue=f-a`, auth(api.key));
    const byAlias = await sse(`${base}/api/v1/events?queue_name=f-b`, auth(api.key));
    const byName = await sse(`${base}/api/v1/events?events=job.completed,job.failed`, auth(api.key));
    const byFamily = await sse(`${base}/api/v1/events?events=queue.*&queue=f-a`, auth(api.key));
    await completeOne('f-a');
    await completeOne('f-b');
    assert.equal((await api.post('/api/v1/queues/f-a/pause', {})).status, 200);
    await until('filtered events', () => byQueue.events.length >= 4 && byAlias.events.length >= 3 && byName.events.length >= 2 && byFamily.events.length >= 1);
    await sleep(100);
    assert.deepEqual(byQueue.names(), ['job.created', 'job.started', 'job.completed', 'queue.paused']);
    assert.ok(byQueue.events.every((e) => e.env.data.queue_name === 'f-a'));
    assert.deepEqual(byAlias.names(), ['job.created', 'job.started', 'job.completed']);
    assert.ok(byAlias.events.every((e) => e.env.data.queue_name === 'f-b'));
    assert.deepEqual(byName.names(), ['job.completed', 'job.completed']);
    assert.deepEqual(byFamily.names(), ['queue.paused']);
    for (const s of [byQueue, byAlias, byName, byFamily]) s.close();
    await noStreamsLeft(org);

    assertInvalid(await refused(`${base}/api/v1/events?queue=-bad`, auth(api.key)), 'queue');
    assertInvalid(await refused(`${base}/api/v1/events?events=job.completed,DROP`, auth(api.key)), 'events');
    assertInvalid(await refused(`${base}/api/v1/events?events=`, auth(api.key)), 'events');
    assertInvalid(await refused(`${base}/api/v1/events?queue=a&queue_name=b`, auth(api.key)), 'queue');
    assert.equal(n.node.streams.count(org), 0);
  });

  test('/events/jobs/:id: the current status first, then that job only, ending after its terminal event', async () => {
    const job = await api.enqueue({ queue_name: 'j-one', payload: { n: 1 } });
    const s = await sse(`${base}/api/v1/events/jobs/${job.id}`, auth(api.key));
    await until('job.status', () => s.events.length >= 1);
    const first = s.events[0]!.env;
    assert.equal(first.event, 'job.status');
    assert.equal(s.events[0]!.id, first.id);
    assert.deepEqual({ job_id: first.data.job_id, queue_name: first.data.queue_name, status: first.data.status }, { job_id: job.id, queue_name: 'j-one', status: 'pending' });
    assert.deepEqual(first.data.job.payload, { n: 1 });

    await api.enqueue({ queue_name: 'j-one' }); // another job of the same queue: not on this stream
    const [claimed] = await api.claim('j-one');
    assert.equal(claimed.id, job.id);
    assert.equal((await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id })).status, 200);
    await until('the stream ends after job.completed', () => s.ended);
    assert.deepEqual(s.names(), ['job.status', 'job.started', 'job.completed']);
    assert.ok(s.events.every((e) => e.env.data.job_id === job.id));
    await noStreamsLeft(org);

    // A finished job: its status, and the end.
    const done = await sse(`${base}/api/v1/events/jobs/${job.id}`, auth(api.key));
    await until('ended', () => done.ended);
    assert.deepEqual(done.names(), ['job.status']);
    assert.equal(done.events[0]!.env.data.status, 'completed');

    assertError(await refused(`${base}/api/v1/events/jobs/00000000-0000-4000-8000-000000000000`, auth(api.key)), 404, 'NOT_FOUND');
    assertError(await refused(`${base}/api/v1/events/jobs/not-a-uuid`, auth(api.key)), 404, 'NOT_FOUND');
    await noStreamsLeft(org);
  });

  test('/events/queues/:name: a snapshot, then counts coalesced to one read per second shared by every subscriber', async () => {
    await api.enqueue({ queue_name: 'q-stats' });
    const subs = await Promise.all([0, 1, 2].map(() => sse(`${base}/api/v1/events/queues/q-stats`, auth(api.key))));
    await until('snapshots', () => subs.every((s) => s.events.length === 1));
    for (const s of subs) {
      const e = s.events[0]!.env;
      assert.equal(e.event, 'queue.stats');
      assert.deepEqual(e.data, { queue_name: 'q-stats', pending: 1, scheduled: 0, processing: 0, completed: 0, deadletter: 0, cancelled: 0 });
    }
    // Ten enqueues within the same second: nothing until the clock moves a second on, then one update.
    for (let i = 0; i < 10; i++) await api.enqueue({ queue_name: 'q-stats' });
    await api.claim('q-stats', { limit: 2 });
    await sleep(300);
    assert.ok(subs.every((s) => s.events.length === 1), 'no update inside the second');
    await clock.advance(1000);
    await until('one update each', () => subs.every((s) => s.events.length === 2));
    await sleep(200);
    const ids = new Set<string>();
    for (const s of subs) {
      assert.equal(s.events.length, 2);
      const e = s.events[1]!.env;
      ids.add(e.id);
      assert.deepEqual(e.data, { queue_name: 'q-stats', pending: 9, scheduled: 0, processing: 2, completed: 0, deadletter: 0, cancelled: 0 });
    }
    assert.equal(ids.size, 1, 'one read served every subscriber');
    // No activity, no update.
    await clock.advance(5000);
    await sleep(200);
    assert.ok(subs.every((s) => s.events.length === 2));
    // Activity on another queue is not this queue's.
    await api.enqueue({ queue_name: 'q-other' });
    await clock.advance(1000);
    await sleep(200);
    assert.ok(subs.every((s) => s.events.length === 2));
    for (const s of subs) s.close();
    await noStreamsLeft(org);

    assertError(await refused(`${base}/api/v1/events/queues/never-made`, auth(api.key)), 404, 'NOT_FOUND');
    assertError(await refused(`${base}/api/v1/events/queues/.bad`, auth(api.key)), 404, 'NOT_FOUND');
  });

  test('WebSocket: with a JWT access token, with api_key, with the header; filtered by queue; plain GET is 426', async () => {
    const login = await api.as('').post('/api/v1/auth/login', { api_key: api.key });
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const token = login.body.access_token as string;
    const byToken = await ws(`${base}/api/v1/ws?token=${token}&queue=w-a`);
    const byKey = await ws(`${base}/api/v1/ws?api_key=${api.key}`);
    const byHeader = await ws(`${base}/api/v1/ws?events=job.completed`, auth(api.key));
    await completeOne('w-a');
    await completeOne('w-b');
    await until('ws messages', () => byToken.messages.length >= 3 && byKey.messages.length >= 6 && byHeader.messages.length >= 2);
    await sleep(100);
    assert.deepEqual(byToken.names(), ['job.created', 'job.started', 'job.completed']);
    assert.ok(byToken.messages.every((m) => m.data.queue_name === 'w-a'));
    assert.deepEqual(byKey.names(), ['job.created', 'job.started', 'job.completed', 'job.created', 'job.started', 'job.completed']);
    assert.deepEqual(byHeader.names(), ['job.completed', 'job.completed']);
    for (const m of byKey.messages) assert.deepEqual(Object.keys(m).sort(), ['created_at', 'data', 'event', 'id']);
    for (const w of [byToken, byKey, byHeader]) w.ws.close();
    await noStreamsLeft(org);

    assertError(await api.get('/api/v1/ws'), 426, 'UPGRADE_REQUIRED');
    const bad = await wsOpen(`${base}/api/v1/ws?api_key=${api.key}&queue=-x`);
    assert.ok(!(bad instanceof Ws));
    assert.equal(bad.status, 422);
  });

  test('query-string credentials: taken by the four real-time routes, still 401 everywhere else', async () => {
    const job = await api.enqueue({ queue_name: 'qc' });
    const login = await api.as('').post('/api/v1/auth/login', { api_key: api.key });
    const token = login.body.access_token as string;
    for (const cred of [`api_key=${api.key}`, `token=${token}`]) {
      for (const path of ['/api/v1/events', `/api/v1/events/jobs/${job.id}`, '/api/v1/events/queues/qc']) {
        const s = await sse(`${base}${path}?${cred}`);
        s.close();
      }
      (await ws(`${base}/api/v1/ws?${cred}`)).ws.close();
    }
    const none = api.as('');
    assertError(await none.get(`/api/v1/jobs?api_key=${api.key}`), 401, 'UNAUTHORIZED');
    assertError(await none.get(`/api/v1/jobs/${job.id}?token=${token}`), 401, 'UNAUTHORIZED');
    assertError(await api.get(`/api/v1/queues?api_key=${api.key}`), 401, 'UNAUTHORIZED');
    assertError(await refused(`${base}/api/v1/events?api_key=${api.key}&token=${token}`), 401, 'UNAUTHORIZED');
    await noStreamsLeft(org);
  });

  test('bad or revoked credentials: 401 and no stream; revoking a key or logging out ends its open streams', async () => {
    const revoked = await insertKey(n, { organizationId: org, revoked: true });
    for (const url of [`${base}/api/v1/events`, `${base}/api/v1/events?api_key=svc_test_nope`, `${base}/api/v1/events?api_key=${revoked.key}`, `${base}/api/v1/events?token=eyJhbGciOiJIUzI1NiJ9.e30.x`]) {
      assertError(await refused(url), 401, 'UNAUTHORIZED');
    }
    for (const q of ['', '?api_key=svc_test_nope', `?api_key=${revoked.key}`, '?token=eyJhbGciOiJIUzI1NiJ9.e30.x']) {
      const r = await wsOpen(`${base}/api/v1/ws${q}`);
      assert.ok(!(r instanceof Ws), `ws${q} opened`);
      assert.equal(r.status, 401);
      assert.equal(r.body.code, 'UNAUTHORIZED');
    }
    assert.equal(n.node.streams.count(org), 0);

    // A key revoked while its streams are open: SSE ends, the WebSocket closes, JWT streams of that key too.
    const made = await api.post('/api/v1/api-keys', { name: 'watcher', permissions: ['jobs:read'] });
    const key = made.body.key as string;
    const token = (await api.as('').post('/api/v1/auth/login', { api_key: key })).body.access_token as string;
    const s = await sse(`${base}/api/v1/events?api_key=${key}`);
    const w = await ws(`${base}/api/v1/ws?api_key=${key}`);
    const wt = await ws(`${base}/api/v1/ws?token=${token}`);
    const other = await sse(`${base}/api/v1/events`, auth(api.key));
    assert.equal((await api.delete(`/api/v1/api-keys/${made.body.id}`)).status, 200);
    await until('revoked streams end', () => s.ended && w.closed !== null && wt.closed !== null);
    assert.equal(w.closed!.code, 1008);
    await api.enqueue({ queue_name: 'still' });
    await until('the other stream lives on', () => other.events.length >= 1);
    other.close();

    // Logout ends the streams of that token only.
    const session = (await api.as('').post('/api/v1/auth/login', { api_key: api.key })).body.access_token as string;
    const mine = await sse(`${base}/api/v1/events?token=${session}`);
    const keyStream = await sse(`${base}/api/v1/events`, auth(api.key));
    assert.equal((await api.as(session).post('/api/v1/auth/logout', {})).status < 300, true);
    await until('logged-out stream ends', () => mine.ended);
    await api.enqueue({ queue_name: 'still' });
    await until('the key stream lives on', () => keyStream.events.length >= 1);
    assert.equal(keyStream.ended, false);
    keyStream.close();
    await noStreamsLeft(org);
  });

  test('permissions: /events and WS need jobs:read, /events/queues needs queues:read (403, no stream)', async () => {
    const queuesOnly = await insertKey(n, { organizationId: org, permissions: ['queues:read'] });
    const jobsOnly = await insertKey(n, { organizationId: org, permissions: ['jobs:read'] });
    await api.enqueue({ queue_name: 'perm' });
    assertError(await refused(`${base}/api/v1/events`, auth(queuesOnly.key)), 403, 'FORBIDDEN');
    const job = await api.enqueue({ queue_name: 'perm' });
    assertError(await refused(`${base}/api/v1/events/jobs/${job.id}?api_key=${queuesOnly.key}`), 403, 'FORBIDDEN');
    assertError(await refused(`${base}/api/v1/events/queues/perm`, auth(jobsOnly.key)), 403, 'FORBIDDEN');
    const r = await wsOpen(`${base}/api/v1/ws?api_key=${queuesOnly.key}`);
    assert.ok(!(r instanceof Ws));
    assert.equal(r.status, 403);
    (await sse(`${base}/api/v1/events/queues/perm`, auth(queuesOnly.key))).close();
    (await sse(`${base}/api/v1/events`, auth(jobsOnly.key))).close();
    await noStreamsLeft(org);
  });

  test('isolation: another organization sees none of these events, 404 for their job, its own counts for the same queue name', async () => {
    const b = await insertKey(n);
    const apiB = api.as(b.key);
    await api.enqueue({ queue_name: 'shared' });
    await apiB.enqueue({ queue_name: 'shared' });
    await apiB.enqueue({ queue_name: 'shared' });
    const bAll = await sse(`${base}/api/v1/events`, auth(b.key));
    const bWs = await ws(`${base}/api/v1/ws?api_key=${b.key}`);
    const bQueue = await sse(`${base}/api/v1/events/queues/shared`, auth(b.key));
    const aJob = await api.enqueue({ queue_name: 'shared' });
    assertError(await refused(`${base}/api/v1/events/jobs/${aJob.id}`, auth(b.key)), 404, 'NOT_FOUND');
    await completeOne('solo-a');
    await until('B snapshot', () => bQueue.events.length === 1);
    assert.equal(bQueue.events[0]!.env.data.pending, 2);
    await clock.advance(2000);
    await sleep(300);
    assert.equal(bAll.events.length, 0);
    assert.equal(bWs.messages.length, 0);
    assert.equal(bQueue.events.length, 1, 'activity of A on its queue "shared" is not B\'s');
    // And A does not see B's.
    const aAll = await sse(`${base}/api/v1/events`, auth(api.key));
    await apiB.enqueue({ queue_name: 'shared' });
    await until('B sees its own', () => bAll.events.length === 1 && bWs.messages.length === 1);
    await sleep(100);
    assert.equal(aAll.events.length, 0);
    for (const s of [bAll, bQueue, aAll]) s.close();
    bWs.ws.close();
    await noStreamsLeft(org);
    await noStreamsLeft(b.organizationId);
  });

  test(`the cap: ${CAP} open streams per organization, exact with 50 racing for the last slot; closing frees slots`, async () => {
    const c = await insertKey(n);
    const open: Array<Sse | Ws> = [];
    for (let i = 0; i < CAP - 2; i++) open.push(await sse(`${base}/api/v1/events`, auth(c.key)));
    open.push(await ws(`${base}/api/v1/ws?api_key=${c.key}`));
    const race = await Promise.all(Array.from({ length: 50 }, () => Sse.open(`${base}/api/v1/events`, auth(c.key))));
    const won = race.filter((r): r is Sse => r instanceof Sse);
    assert.equal(won.length, 1);
    for (const r of race) if (!(r instanceof Sse)) assertError(r, 429, 'TOO_MANY_STREAMS', ['limit']);
    assert.equal((race.find((r) => !(r instanceof Sse)) as ApiResponse).body.limit, CAP);
    const overWs = await wsOpen(`${base}/api/v1/ws?api_key=${c.key}`);
    assert.ok(!(overWs instanceof Ws));
    assert.equal(overWs.status, 429);
    assert.equal(n.node.streams.count(c.organizationId), CAP);
    // Other organizations are not held back by this one.
    (await sse(`${base}/api/v1/events`, auth(api.key))).close();

    won[0]!.close();
    await until('a slot frees', () => n.node.streams.count(c.organizationId) === CAP - 1);
    const again = await sse(`${base}/api/v1/events`, auth(c.key));
    again.close();
    for (const s of open) s instanceof Sse ? s.close() : s.ws.close();
    await noStreamsLeft(c.organizationId);
    await noStreamsLeft(org);
  });
});

test('node stop with open SSE streams and WebSockets completes, and ends them', async () => {
  const n = await startTestNode();
  const base = n.node.url;
  const key = n.api.key;
  await n.api.enqueue({ queue_name: 'bye' });
  const streams = [
    await sse(`${base}/api/v1/events`, { authorization: `Bearer ${key}` }),
    await sse(`${base}/api/v1/events/queues/bye?api_key=${key}`),
  ];
  const socket = await ws(`${base}/api/v1/ws?api_key=${key}`);
  await n.stop();
  await until('streams end', () => streams.every((s) => s.ended) && socket.closed !== null);
  assert.equal(socket.closed!.code, 1001);
});
