// Long-polling claims: answered by the enqueue that feeds them (not by a timer that polls), and with an empty
// list when wait_ms runs out. How fast is measured by the benchmark (`make bench`, scenario e2e), not here.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { sleep, startTestNode, type TestNode } from './helpers.js';

let n: TestNode;
let frozen: TestNode;
before(async () => {
  n = await startTestNode();
  frozen = await startTestNode({ clock: new ManualClock(Date.UTC(2030, 0, 1)) });
});
after(async () => {
  await n.stop();
  await frozen.stop();
});

test('a waiting claim is answered by the enqueue that feeds it, with no time passing on the node', async (t) => {
  // The node's clock never moves here, so no timer of the node can fire: only the enqueue can wake the claim.
  // The bound of 1 s (real time) is far above what it takes and far below any polling period worth the name.
  const n = frozen;
  // Warm the enqueue and claim paths once (first-call compilation is not what this measures).
  await n.api.enqueue({ queue_name: 'lp-warm' });
  await n.api.claim('lp-warm');
  for (let round = 0; round < 5; round++) {
    const queue = `lp-${round}`;
    const claim = n.api.post('/api/v1/jobs/claim', { queue_name: queue, worker_id: 'w1', wait_ms: 10_000 });
    let claimedAt = 0;
    void claim.then(() => (claimedAt = performance.now()));
    await sleep(100); // the claim is parked by now
    const sent = performance.now();
    const job = await n.api.enqueue({ queue_name: queue, payload: { round } });
    const r = await claim;
    assert.equal(r.status, 200);
    assert.equal(r.body.jobs.length, 1);
    assert.equal(r.body.jobs[0].id, job.id);
    assert.deepEqual(r.body.jobs[0].payload, { round });
    const latency = claimedAt - sent;
    t.diagnostic(`round ${round}: claim answered ${latency.toFixed(1)} ms after the enqueue was sent`);
    assert.ok(latency <= 1_000, `round ${round}: claim answered ${latency.toFixed(1)} ms after the enqueue was sent`);
  }
});

test('a waiting claim with nothing to take returns [] after wait_ms', async () => {
  const t0 = performance.now();
  const r = await n.api.post('/api/v1/jobs/claim', { queue_name: 'lp-empty', worker_id: 'w1', wait_ms: 300 });
  const waited = performance.now() - t0;
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.jobs, []);
  assert.ok(waited >= 290, `waited ${waited.toFixed(0)} ms`);
});

test('several waiters are served in arrival order, one job each', async () => {
  const claims = [0, 1, 2].map((i) =>
    n.api.post('/api/v1/jobs/claim', { queue_name: 'lp-many', worker_id: `w${i}`, wait_ms: 5_000 }),
  );
  await sleep(100);
  const jobs = [];
  for (let i = 0; i < 3; i++) jobs.push(await n.api.enqueue({ queue_name: 'lp-many', payload: { i } }));
  const got = (await Promise.all(claims)).map((r) => r.body.jobs.map((j: { id: string }) => j.id));
  assert.deepEqual(got, jobs.map((j) => [j.id]));
});

test('a waiting claim whose client left gives the job it took back at once, with no attempt spent', async () => {
  const ac = new AbortController();
  const gone = fetch(`${n.node.url}/api/v1/jobs/claim`, {
    method: 'POST',
    headers: { authorization: `Bearer ${n.api.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ queue_name: 'lp-gone', worker_id: 'w-gone', wait_ms: 10_000, lease_duration_secs: 3600 }),
    signal: ac.signal,
  }).catch(() => null);
  await sleep(100); // parked
  ac.abort();
  await gone;
  await sleep(50);
  // The parked claim still takes this job, but its answer has nobody to go to: the job comes back.
  const job = await n.api.enqueue({ queue_name: 'lp-gone' });
  let got: any[] = [];
  for (let i = 0; i < 100 && got.length === 0; i++) {
    got = await n.api.claim('lp-gone', { worker_id: 'w-next' });
    if (got.length === 0) await sleep(20);
  }
  assert.equal(got.length, 1, 'the job is claimable again long before its one-hour lease would run out');
  assert.equal(got[0].id, job.id);
  assert.equal(got[0].retry_count, 0);
  assert.equal(got[0].assigned_worker_id, 'w-next');
});

test('a stopping node answers its parked claims at once, empty, closing their connections', async () => {
  // Its own node: this one stops. Before, the stop waited for the claims' wait (or its 5 s grace) to run out. A
  // claim still on its way to its actor when the stop begins (a slow machine) is answered the same way.
  const s = await startTestNode();
  let stopped = false;
  try {
    const claims = [0, 1].map((i) => s.api.post('/api/v1/jobs/claim', { queue_name: `lp-stop-${i}`, worker_id: `w${i}`, wait_ms: 30_000 }));
    await sleep(100); // parked
    const t0 = performance.now();
    const stopping = s.stop().then(() => (stopped = true));
    const answers = await Promise.all(claims);
    const answeredMs = performance.now() - t0;
    for (const r of answers) {
      assert.equal(r.status, 200);
      assert.deepEqual(r.body.jobs, []);
      assert.equal(r.headers.get('connection'), 'close');
    }
    await stopping;
    // Far below the stop's grace (5 s) and the claims' wait (30 s): nothing timed out to answer them.
    assert.ok(answeredMs < 2_500, `answered ${answeredMs.toFixed(0)} ms after the stop began`);
  } finally {
    if (!stopped) await s.stop();
  }
});
