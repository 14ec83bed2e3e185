// Flow control end to end, over real HTTP on the store chosen by SLUICE_TEST_STORE: fairness and per-key limits
// under racing claimers, the rate limit over 20 s, debounce and idempotency windows with a manual clock, progress
// on an SSE stream, cancelling running work, explain (one test per reason, each from a real state), and a restart
// that keeps keys, limits and debounce state.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { startNode } from '../src/node.js';
import { Api, freshStore, sleep, startTestNode, type TestNode } from './helpers.js';
import { assertError, assertInvalid } from './http-assert.js';

const ADMIN = 'admin-key-for-flow-tests';
const T0 = Date.UTC(2030, 0, 1, 12);

/** Enqueues many jobs through the bulk route, 100 at a time. */
async function bulk(api: Api, queue: string, n: number, extra: Record<string, unknown> = {}): Promise<void> {
  for (let i = 0; i < n; i += 100) {
    const jobs = Array.from({ length: Math.min(100, n - i) }, (_, k) => ({ payload: { i: i + k }, ...extra }));
    const r = await api.post('/api/v1/jobs/bulk', { queue_name: queue, jobs });
    assert.equal(r.body.failure_count, 0, JSON.stringify(r.body.failed?.[0]));
  }
}

async function configure(api: Api, queue: string, config: Record<string, unknown>): Promise<void> {
  const created = await api.post('/api/v1/queues', { name: queue });
  assert.ok(created.status === 201 || created.status === 409);
  const r = await api.put(`/api/v1/queues/${queue}/config`, config);
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

async function reasons(api: Api, id: string): Promise<Record<string, any>> {
  const r = await api.get(`/api/v1/jobs/${id}/explain`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return Object.fromEntries(r.body.reasons.map((x: any) => [x.reason, x]));
}

describe('flow control (real time)', () => {
  let n: TestNode;
  let api: Api;
  before(async () => {
    n = await startTestNode();
    api = n.api;
  });
  after(() => n.stop());

  test('fairness: key A with 1,000 waiting jobs, key B with 10, 4 claim loops: all of B within the first 30 claims', async () => {
    await bulk(api, 'fair', 1000, { concurrency_key: 'A' });
    await bulk(api, 'fair', 10, { concurrency_key: 'B' });
    const order: string[] = [];
    const loop = async (w: number) => {
      for (let i = 0; i < 10; i++) {
        const [j] = await api.claim('fair', { worker_id: `w${w}` });
        order.push(j.concurrency_key);
        const c = await api.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: `w${w}`, lease_id: j.lease_id });
        assert.equal(c.status, 200);
      }
    };
    await Promise.all([0, 1, 2, 3].map(loop));
    assert.equal(order.slice(0, 30).filter((k) => k === 'B').length, 10, order.join(''));
  });

  test('concurrency_per_key 2 is never exceeded under 16 racing claimers; other keys keep flowing', async () => {
    await configure(api, 'perkey', { concurrency_per_key: 2 });
    for (const key of ['K1', 'K2', 'K3']) await bulk(api, 'perkey', 12, { concurrency_key: key });
    const held = new Map<string, number>();
    let worst = 0;
    let done = 0;
    const claimer = async (w: number) => {
      for (let idle = 0; idle < 8 && done < 36; ) {
        const jobs = await api.claim('perkey', { worker_id: `r${w}`, limit: 3 });
        if (jobs.length === 0) {
          idle++;
          await sleep(5);
          continue;
        }
        for (const j of jobs) held.set(j.concurrency_key, (held.get(j.concurrency_key) ?? 0) + 1);
        worst = Math.max(worst, ...held.values());
        await sleep(3);
        for (const j of jobs) {
          // Released before the complete is sent: the server still counts it, so this count never overstates.
          held.set(j.concurrency_key, held.get(j.concurrency_key)! - 1);
          const c = await api.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: `r${w}`, lease_id: j.lease_id });
          assert.equal(c.status, 200);
          done++;
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, w) => claimer(w)));
    assert.equal(done, 36);
    assert.ok(worst <= 2, `a key had ${worst} jobs processing at once`);
    assert.equal(worst, 2, 'the limit was reached, so the race was real');
  });

  test('queue stats list the busiest keys', async () => {
    await bulk(api, 'busy', 5, { concurrency_key: 'big' });
    await bulk(api, 'busy', 2, { concurrency_key: 'small' });
    await api.claim('busy', { limit: 1 });
    const s = await api.get('/api/v1/queues/busy/stats');
    assert.equal(s.status, 200);
    assert.deepEqual(s.body.busiest_keys, [
      { key: 'big', processing: 1, waiting: 4 },
      { key: 'small', processing: 0, waiting: 2 },
    ]);
  });

  test('the rate limit holds within 5% over 20 s; a limited claim long-polls to the next slot', async () => {
    await configure(api, 'rated', { rate_limit: { jobs: 20, per_seconds: 1 } });
    await bulk(api, 'rated', 600);
    const started = Date.now();
    let claimed = 0;
    let calls = 0;
    const loop = async (w: number) => {
      while (Date.now() - started < 20_000) {
        calls++;
        const jobs = await api.claim('rated', { worker_id: `rl${w}`, limit: 10, wait_ms: Math.max(1, Math.min(2_000, 20_000 - (Date.now() - started))) });
        if (Date.now() - started <= 20_000) claimed += jobs.length;
      }
    };
    await Promise.all([0, 1, 2, 3].map(loop));
    assert.ok(claimed >= 380 && claimed <= 420, `${claimed} jobs in 20 s for 20/s`);
    assert.ok(calls < 200, `${calls} claim calls: parked claims wait for the next slot instead of spinning`);
  });

  test('progress reaches an SSE subscriber and is stored on the job; only the lease holder may report it', async () => {
    const job = await api.enqueue({ queue_name: 'prog' });
    const [c] = await api.claim('prog');
    const ac = new AbortController();
    const res = await fetch(`${api.url}/api/v1/events/jobs/${job.id}`, { headers: { authorization: `Bearer ${api.key}` }, signal: ac.signal });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    let text = '';
    const seen = (async () => {
      while (!text.includes('job.progress')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
    })();
    await sleep(50);
    const p = await api.post(`/api/v1/jobs/${job.id}/progress`, { worker_id: 'w1', lease_id: c.lease_id, progress: 40, message: 'halfway', data: { rows: 4 } });
    assert.equal(p.status, 200, JSON.stringify(p.body));
    await Promise.race([seen, sleep(5_000)]);
    ac.abort();
    const line = text.split('\n').find((l) => l.startsWith('data: ') && l.includes('job.progress'));
    assert.ok(line, text);
    const env = JSON.parse(line.slice(6));
    assert.equal(env.data.progress, 40);
    assert.equal(env.data.message, 'halfway');
    const got = await api.get(`/api/v1/jobs/${job.id}`);
    assert.equal(got.body.progress.progress, 40);
    assert.deepEqual(got.body.progress.data, { rows: 4 });
    assertError(await api.post(`/api/v1/jobs/${job.id}/progress`, { worker_id: 'other', progress: 50 }), 409, 'LEASE_EXPIRED');
    assertInvalid(await api.post(`/api/v1/jobs/${job.id}/progress`, { worker_id: 'w1', progress: 101 }), 'progress');
  });

  test('job.progress reaches an outgoing webhook at most once a second per job, the last report last', async () => {
    const got: Array<{ at: number; body: any }> = [];
    const server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        got.push({ at: Date.now(), body: JSON.parse(raw) });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const hook = await api.post('/api/v1/outgoing-webhooks', { name: 'progress', url, events: ['job.progress'] });
      assert.equal(hook.status, 201, JSON.stringify(hook.body));
      const job = await api.enqueue({ queue_name: 'prog-hook' });
      const [c] = await api.claim('prog-hook');
      const t0 = Date.now();
      for (let p = 5; p <= 100; p += 5) {
        const r = await api.post(`/api/v1/jobs/${job.id}/progress`, { worker_id: 'w1', lease_id: c.lease_id, progress: p });
        assert.equal(r.status, 200);
      }
      const sendMs = Date.now() - t0;
      const deadline = Date.now() + 5_000;
      while (got.at(-1)?.body.data.progress !== 100 && Date.now() < deadline) await sleep(50);
      await sleep(1_200);
      const values = got.map((g) => g.body.data.progress);
      assert.equal(values.at(-1), 100, `the last report arrives: ${values.join(',')}`);
      // One per started second of reporting, plus the held last one.
      assert.ok(values.length <= Math.ceil(sendMs / 1000) + 1, `${values.length} deliveries for 20 reports sent in ${sendMs} ms: ${values.join(',')}`);
      // Measured at the receiver, so with some delivery jitter.
      for (let i = 1; i < got.length; i++) assert.ok(got[i]!.at - got[i - 1]!.at >= 800, 'at most one a second');
      await api.delete(`/api/v1/outgoing-webhooks/${hook.body.id}`);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  test('cancelling a running job: its heartbeat answers 409 JOB_CANCELLED, its late complete 409', async () => {
    const job = await api.enqueue({ queue_name: 'cancel-run' });
    const [c] = await api.claim('cancel-run', { worker_id: 'wc' });
    const del = await api.delete(`/api/v1/jobs/${job.id}`);
    assert.equal(del.status, 200);
    assert.equal(del.body.status, 'cancelled');
    const hb = await api.post(`/api/v1/jobs/${job.id}/heartbeat`, { worker_id: 'wc', lease_id: c.lease_id });
    assertError(hb, 409, 'JOB_CANCELLED', ['job_status']);
    assertError(await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'wc', lease_id: c.lease_id, result: 1 }), 409, 'JOB_CANCELLED', ['job_status']);
    assertError(await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'someone-else', lease_id: c.lease_id }), 409, 'LEASE_EXPIRED');
    assert.equal((await api.get(`/api/v1/jobs/${job.id}`)).body.result, null);
  });

  test('bad flow-control input is refused with the field named, and changes nothing', async () => {
    assertInvalid(await api.post('/api/v1/jobs', { queue_name: 'bad', payload: {}, concurrency_key: 'x'.repeat(256) }), 'concurrency_key');
    assertInvalid(await api.post('/api/v1/jobs', { queue_name: 'bad', payload: {}, idempotency_ttl_secs: 5 }), 'idempotency_ttl_secs');
    assertInvalid(await api.post('/api/v1/jobs', { queue_name: 'bad', payload: {}, idempotency_key: 'k', debounce: { key: 'd', delay_ms: 5 } }), 'debounce');
    assertInvalid(await api.post('/api/v1/jobs', { queue_name: 'bad', payload: {}, debounce: { key: 'd', delay_ms: 500, max_delay_ms: 100 } }), 'debounce.max_delay_ms');
    await api.post('/api/v1/queues', { name: 'bad-q' });
    assertInvalid(await api.put('/api/v1/queues/bad-q/config', { concurrency_per_key: 0 }), 'concurrency_per_key');
    assertInvalid(await api.put('/api/v1/queues/bad-q/config', { rate_limit: { jobs: 10 } }), 'rate_limit');
    const q = await api.get('/api/v1/queues/bad-q');
    assert.deepEqual(q.body.config, { max_retries: null, lease_duration_secs: null, concurrency_per_key: null, max_concurrency: null, rate_limit: null });
    assert.equal((await n.node.store.query(`SELECT 1 FROM jobs WHERE queue_name = 'bad'`)).length, 0);
  });
});

describe('flow control (manual clock)', () => {
  const clock = new ManualClock(T0);
  let n: TestNode;
  let api: Api;
  before(async () => {
    n = await startTestNode({ clock, env: { ADMIN_API_KEY: ADMIN } });
    api = n.api;
  });
  after(() => n.stop());

  test('debounce: 50 jobs with one key within 1 s run once, with the last payload', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const r = await api.post('/api/v1/jobs', { queue_name: 'deb', payload: { n: i }, debounce: { key: 'user-1', delay_ms: 2_000 } });
      assert.equal(r.status, i === 0 ? 201 : 200, JSON.stringify(r.body));
      ids.add(r.body.id);
      await clock.advance(20);
    }
    assert.equal(ids.size, 1);
    assert.deepEqual(await api.claim('deb'), [], 'the trailing edge has not come');
    await clock.advance(2_000);
    const got = await api.claim('deb', { limit: 10 });
    assert.equal(got.length, 1);
    assert.deepEqual(got[0].payload, { n: 49 });
    const rows = await n.node.store.query(`SELECT count(*)::int AS n FROM jobs WHERE queue_name = 'deb'`);
    assert.equal(rows[0]!.n, 1);
  });

  test('debounce: max_delay_ms bounds the push', async () => {
    const first = await api.post('/api/v1/jobs', { queue_name: 'deb-max', payload: { n: 0 }, debounce: { key: 'k', delay_ms: 500, max_delay_ms: 1_000 } });
    for (let i = 1; i <= 5; i++) {
      await clock.advance(300);
      await api.post('/api/v1/jobs', { queue_name: 'deb-max', payload: { n: i }, debounce: { key: 'k', delay_ms: 500, max_delay_ms: 1_000 } });
    }
    const job = await api.get(`/api/v1/jobs/${first.body.id}`);
    assert.equal(Date.parse(job.body.scheduled_at), Date.parse(first.body.created_at) + 1_000);
    const got = await api.claim('deb-max');
    assert.equal(got.length, 1, 'due at the bound, though jobs kept coming');
    assert.deepEqual(got[0].payload, { n: 5 });
  });

  test('idempotency_ttl_secs: the key frees itself after the window, even for a finished job, and across queues', async () => {
    const a = await api.enqueue({ queue_name: 'idem-a', idempotency_key: 'order-1', idempotency_ttl_secs: 60 });
    const [c] = await api.claim('idem-a');
    await api.post(`/api/v1/jobs/${a.id}/complete`, { worker_id: 'w1', lease_id: c.lease_id });
    await clock.advance(59_000);
    const dup = await api.post('/api/v1/jobs', { queue_name: 'idem-b', payload: {}, idempotency_key: 'order-1' });
    assert.equal(dup.status, 200);
    assert.equal(dup.body.id, a.id);
    await clock.advance(1_000);
    const fresh = await api.post('/api/v1/jobs', { queue_name: 'idem-b', payload: {}, idempotency_key: 'order-1' });
    assert.equal(fresh.status, 201, JSON.stringify(fresh.body));
    assert.notEqual(fresh.body.id, a.id);
    const old = await api.get(`/api/v1/jobs/${a.id}`);
    assert.equal(old.body.idempotency_key, null, 'the old job gave the key up, durably');
    assert.equal(old.body.status, 'completed');
    const again = await api.post('/api/v1/jobs', { queue_name: 'idem-a', payload: {}, idempotency_key: 'order-1' });
    assert.equal(again.status, 200);
    assert.equal(again.body.id, fresh.body.id);
  });

  test('idempotency_ttl_secs: a live job of the same queue hands its key over', async () => {
    const a = await api.enqueue({ queue_name: 'idem-live', idempotency_key: 'k-live', idempotency_ttl_secs: 1 });
    await clock.advance(1_000);
    const b = await api.post('/api/v1/jobs', { queue_name: 'idem-live', payload: {}, idempotency_key: 'k-live' });
    assert.equal(b.status, 201);
    assert.equal((await api.get(`/api/v1/jobs/${a.id}`)).body.idempotency_key, null);
    assert.equal((await api.get(`/api/v1/jobs/${b.body.id}`)).body.idempotency_key, 'k-live');
  });

  describe('explain: one test per reason', () => {
    test('queue paused (since, reason)', async () => {
      const job = await api.enqueue({ queue_name: 'ex-paused' });
      await api.post('/api/v1/queues/ex-paused/pause', { reason: 'deploy' });
      const r = await reasons(api, job.id);
      assert.equal(r.queue_paused.paused_reason, 'deploy');
      assert.equal(r.queue_paused.since, new Date(clock.now()).toISOString());
    });

    test('scheduled until T', async () => {
      const at = new Date(clock.now() + 3_600_000).toISOString();
      const job = await api.enqueue({ queue_name: 'ex-sched', scheduled_at: at });
      assert.equal((await reasons(api, job.id)).scheduled.until, at);
    });

    test('retry backoff until T (attempt n of m, last error)', async () => {
      const job = await api.enqueue({ queue_name: 'ex-retry', max_retries: 3 });
      const [c] = await api.claim('ex-retry');
      const f = await api.post(`/api/v1/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: 'upstream 502' });
      const r = (await reasons(api, job.id)).retry_backoff;
      assert.equal(r.until, f.body.scheduled_at);
      assert.equal(r.attempt, 2);
      assert.equal(r.max_attempts, 4);
      assert.equal(r.last_error, 'upstream 502');
    });

    test('waiting for dependencies (which, their states)', async () => {
      const wf = await api.post('/api/v1/workflows', {
        name: 'ex',
        jobs: [
          { name: 'A', queue_name: 'ex-wf', payload: {} },
          { name: 'B', queue_name: 'ex-wf', payload: {}, depends_on: ['A'] },
        ],
      });
      assert.equal(wf.status, 201, JSON.stringify(wf.body));
      const [a, b] = ['A', 'B'].map((name) => wf.body.jobs.find((j: any) => j.name === name));
      const r = (await reasons(api, b.job_id ?? b.id)).waiting_for_dependencies;
      assert.deepEqual(r.dependencies, [{ name: 'A', job_id: a.job_id ?? a.id, status: 'pending' }]);
    });

    test('key at its concurrency limit (holders)', async () => {
      await configure(api, 'ex-key', { concurrency_per_key: 1 });
      const first = await api.enqueue({ queue_name: 'ex-key', concurrency_key: 'tenant-9' });
      const second = await api.enqueue({ queue_name: 'ex-key', concurrency_key: 'tenant-9' });
      await api.claim('ex-key');
      const r = (await reasons(api, second.id)).key_at_concurrency_limit;
      assert.deepEqual(r.holders, [first.id]);
      assert.equal(r.limit, 1);
    });

    test('queue at max_concurrency', async () => {
      await configure(api, 'ex-max', { max_concurrency: 1 });
      await api.enqueue({ queue_name: 'ex-max' });
      const second = await api.enqueue({ queue_name: 'ex-max' });
      await api.claim('ex-max', { limit: 5 });
      const r = (await reasons(api, second.id)).queue_at_max_concurrency;
      assert.equal(r.limit, 1);
      assert.equal(r.processing, 1);
    });

    test('queue rate-limited (next slot)', async () => {
      await configure(api, 'ex-rate', { rate_limit: { jobs: 1, per_seconds: 60 } });
      await api.enqueue({ queue_name: 'ex-rate' });
      const second = await api.enqueue({ queue_name: 'ex-rate' });
      assert.equal((await api.claim('ex-rate', { limit: 5 })).length, 1);
      const r = (await reasons(api, second.id)).queue_rate_limited;
      assert.equal(r.next_slot, new Date(clock.now() + 60_000).toISOString());
    });

    test('behind N claimable jobs of higher or equal priority', async () => {
      await api.enqueue({ queue_name: 'ex-behind', priority: 5 });
      await api.enqueue({ queue_name: 'ex-behind' });
      await api.enqueue({ queue_name: 'ex-behind', priority: -1 });
      const job = await api.enqueue({ queue_name: 'ex-behind' });
      assert.equal((await reasons(api, job.id)).behind_other_jobs.count, 2);
    });

    test('no worker has claimed from this queue for S seconds (last claim, registered workers)', async () => {
      const w = await api.post('/api/v1/workers/register', { worker_id: 'idle-worker', queue_name: 'ex-idle' });
      assert.ok(w.status === 200 || w.status === 201, JSON.stringify(w.body));
      await api.claim('ex-idle');
      const job = await api.enqueue({ queue_name: 'ex-idle' });
      assert.equal((await reasons(api, job.id)).no_recent_claims, undefined);
      await clock.advance(61_000);
      const r = (await reasons(api, job.id)).no_recent_claims;
      assert.equal(r.seconds, 61);
      assert.equal(r.last_claim_at, new Date(clock.now() - 61_000).toISOString());
      assert.deepEqual(r.workers.map((x: any) => x.id), ['idle-worker']);
    });

    test('organization at its active_jobs quota', async () => {
      const admin = new Api(api.url, '');
      const made = await admin.call('POST', '/api/v1/admin/organizations', { name: 'Small', slug: 'small-flow', plan: 'pro' }, { 'x-admin-key': ADMIN });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const limits = { rate_per_second: null, burst: null, jobs_per_day: null, active_jobs: 3 };
      const set = await admin.call('PUT', `/api/v1/admin/organizations/${made.body.organization.id}/limits`, { limits }, { 'x-admin-key': ADMIN });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      const small = api.as(made.body.api_key.key);
      let last = '';
      for (let i = 0; i < 3; i++) last = (await small.enqueue({ queue_name: 'ex-quota' })).id;
      const r = (await reasons(small, last)).organization_active_jobs_quota;
      assert.equal(r.current, 3);
      assert.equal(r.limit, 3);
      assertError(await api.get(`/api/v1/jobs/${last}/explain`), 404, 'NOT_FOUND');
    });

    test('a running job has no reason', async () => {
      const job = await api.enqueue({ queue_name: 'ex-run' });
      await api.claim('ex-run');
      const r = await api.get(`/api/v1/jobs/${job.id}/explain`);
      assert.equal(r.body.running, true);
      assert.deepEqual(r.body.reasons, []);
    });
  });
});

describe('flow control survives a restart', () => {
  test('keys, limits and debounce state come back from rows', async () => {
    const store = await freshStore();
    const clock = new ManualClock(T0);
    const first = await startTestNode({ store, clock });
    let n: { api: Api; stop(): Promise<void> } = first;
    try {
      await configure(n.api, 'restart', { concurrency_per_key: 1, rate_limit: { jobs: 100, per_seconds: 1 } });
      await n.api.enqueue({ queue_name: 'restart', concurrency_key: 'A' });
      await n.api.enqueue({ queue_name: 'restart', concurrency_key: 'A' });
      const b = await n.api.enqueue({ queue_name: 'restart', concurrency_key: 'B' });
      assert.equal((await n.api.claim('restart', { limit: 1 }))[0].concurrency_key, 'A');
      const deb = await n.api.post('/api/v1/jobs', { queue_name: 'restart-deb', payload: { n: 1 }, debounce: { key: 'd', delay_ms: 5_000, max_delay_ms: 8_000 } });
      await n.stop();
      // The same store again: no bootstrap this time, the first node's key still works.
      const node = await startNode({ config: loadConfig(first.env), clock });
      n = { api: new Api(node.url, first.api.key), stop: () => node.stop() };
      const got = await n.api.claim('restart', { limit: 10 });
      assert.deepEqual(got.map((j) => j.id), [b.id], 'A is still at its limit after the restart');
      const q = await n.api.get('/api/v1/queues/restart');
      assert.deepEqual(q.body.config.rate_limit, { jobs: 100, per_seconds: 1 });
      await clock.advance(4_000);
      const again = await n.api.post('/api/v1/jobs', { queue_name: 'restart-deb', payload: { n: 2 }, debounce: { key: 'd', delay_ms: 5_000, max_delay_ms: 8_000 } });
      assert.equal(again.status, 200);
      assert.equal(again.body.id, deb.body.id);
      assert.equal(Date.parse(again.body.scheduled_at), T0 + 8_000, 'still bounded by the first job of the burst');
    } finally {
      await n.stop().catch(() => {});
      await store.dispose();
    }
  });
});
