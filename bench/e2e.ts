// Scenario 3 — end-to-end latency, enqueue → claim, for a long-polling worker at a steady 200 jobs/s.
//
// A producer enqueues on an open-loop schedule (one job every 5 ms, not waiting for answers), stamping each
// payload with its send time. One worker keeps one claim outstanding (limit 10, wait_ms 5000) and stamps each
// job when the claim response reaches it; completes go out without holding up the next poll, as a real
// worker's would. Both stamps come from this process's monotonic clock. The first second is warm-up.
import { Client, expectStatus, fmt, now, percentile, sleep, sortedOf, usageRows, watchBenchLoop, writeTrace, type Context, type Row } from './lib.js';

const SCENARIO = '3. end-to-end enqueue → claim, 200 jobs/s, long poll';
const RATE = 200;
const WARMUP_JOBS = RATE; // one second
const CLAIM_LIMIT = 10;
const WAIT_MS = 5_000;

export async function e2e(ctx: Context): Promise<Row[]> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const total = WARMUP_JOBS + RATE * seconds;
  const queue = 'bench-e2e';
  const producer = new Client(ctx.url, ctx.key, 64);
  const worker = new Client(ctx.url, ctx.key, 64);
  const latencies: number[] = [];
  const trace: Array<[number, number]> = [];
  let received = 0;
  let sent = 0;
  let failed = 0;
  let stop = false;
  let claims = 0;
  const completes = new Set<Promise<unknown>>();
  try {
    const poll = async () => {
      while (!stop) {
        const r = await worker.post('/api/v1/jobs/claim', { queue_name: queue, worker_id: 'bench-e2e', limit: CLAIM_LIMIT, wait_ms: WAIT_MS });
        const at = now();
        expectStatus(r, 200, 'claim');
        claims++;
        for (const job of r.body.jobs as Array<{ id: string; lease_id: string; payload: { sent_at: number; warm: boolean } }>) {
          received++;
          if (!job.payload.warm) {
            latencies.push(at - job.payload.sent_at);
            trace.push([job.payload.sent_at, at - job.payload.sent_at]);
          }
          const c = worker
            .post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'bench-e2e', lease_id: job.lease_id })
            .then((d) => expectStatus(d, 200, 'complete'))
            .catch(() => failed++)
            .finally(() => completes.delete(c));
          completes.add(c);
        }
      }
    };
    // Handled at once: a failed poll must not crash the run as an unhandled rejection; it shows as jobs not received.
    let pollError: unknown = null;
    const polling = poll().catch((err: unknown) => {
      if (!stop) pollError = err;
    });
    // The first claim parks a waiter in the actor before any job exists.
    await sleep(200);

    ctx.log(`${SCENARIO}: ${fmt(total)} jobs over ${seconds + 1} s (first second is warm-up)`);
    const start = now();
    const interval = 1000 / RATE;
    const meter = ctx.meter();
    const loop = watchBenchLoop();
    const sends = new Set<Promise<unknown>>();
    for (let i = 0; i < total; i++) {
      const due = start + i * interval;
      const wait = due - now();
      if (wait > 1) await sleep(wait);
      if (i === WARMUP_JOBS) {
        meter.mark();
        claims = 0;
      }
      const p = producer
        .post('/api/v1/jobs', { queue_name: queue, payload: { sent_at: now(), warm: i < WARMUP_JOBS, n: i } })
        .then((r) => expectStatus(r, 201, 'enqueue'))
        .then(() => sent++)
        .catch(() => failed++)
        .finally(() => sends.delete(p));
      sends.add(p);
    }
    await Promise.all(sends);
    const usage = await meter.read();
    const benchLoop = loop.stop();
    const claimsInWindow = claims;
    const deadline = now() + 10_000;
    while (received < sent && now() < deadline) await sleep(10);
    stop = true;
    await Promise.all(completes);
    // The outstanding long poll ends by its wait_ms; closing the agent ends it sooner.
    worker.close();
    await polling;
    if (pollError) ctx.log(`${SCENARIO}: the worker stopped early: ${(pollError as Error).message}`);

    const t0 = trace.reduce((m, [t]) => Math.min(m, t), Infinity);
    writeTrace('e2e', trace.map(([t, v]) => [t - t0, v]));
    const s = sortedOf(latencies);
    const p50 = percentile(s, 50);
    const p95 = percentile(s, 95);
    const p99 = percentile(s, 99);
    const lost = sent - received;
    ctx.log(`${SCENARIO}: p50 ${fmt(p50, 2)} ms, p95 ${fmt(p95, 2)} ms, p99 ${fmt(p99, 2)} ms over ${latencies.length} jobs`);
    return [
      { scenario: SCENARIO, metric: 'latency p50', value: `${fmt(p50, 2)} ms`, target: '≤ 2 ms', met: p50 <= 2 },
      { scenario: SCENARIO, metric: 'latency p95', value: `${fmt(p95, 2)} ms`, target: '', met: null },
      { scenario: SCENARIO, metric: 'latency p99', value: `${fmt(p99, 2)} ms`, target: '≤ 10 ms', met: p99 <= 10 },
      { scenario: SCENARIO, metric: 'latency max', value: `${fmt(s[s.length - 1] ?? NaN, 2)} ms`, target: '', met: null },
      { scenario: SCENARIO, metric: 'jobs measured / not received / failed requests', value: `${fmt(latencies.length)} / ${fmt(lost)} / ${fmt(failed)}`, target: '0 / 0', met: lost === 0 && failed === 0 },
      { scenario: SCENARIO, metric: 'load generator event-loop delay p99 / max', value: `${fmt(benchLoop.p99, 1)} / ${fmt(benchLoop.max, 1)} ms`, target: '', met: null },
      // Writes in the window: one enqueue, one complete and (batched) claims per job.
      ...usageRows(SCENARIO, usage, 2 * RATE * seconds + claimsInWindow),
    ];
  } finally {
    stop = true;
    producer.close();
    worker.close();
  }
}
