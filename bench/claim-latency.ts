// Scenario 4 — claim latency at a steady 1,000 claims/s on a pre-filled queue.
//
// Open loop: claim i is due at start + i ms whatever happened to earlier ones, so a slow answer cannot
// hold back later requests and hide its own cost (coordinated omission). Latency is measured from the
// due time, so time a request spent waiting for its turn on the client counts too; the service time (from
// the actual send) is reported beside it. Claimed jobs are left leased: completing them is scenario 2.
import { Client, expectStatus, fmt, now, percentile, prefill, sleep, sortedOf, usageRows, watchBenchLoop, writeTrace, type Context, type Row } from './lib.js';

const SCENARIO = '4. claim latency, 1,000 claims/s open loop';
const RATE = 1_000;
const WARMUP_MS = 1_000;

export async function claimLatency(ctx: Context): Promise<Row[]> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const total = Math.round(RATE * (WARMUP_MS / 1000 + seconds));
  const queue = 'bench-claim';
  // Sockets enough for ~200 ms of backlog at this rate; beyond that requests wait on the client and the
  // due-time latency shows it.
  const client = new Client(ctx.url, ctx.key, 200);
  try {
    const jobs = Math.ceil(total * 1.05);
    ctx.log(`${SCENARIO}: pre-filling ${fmt(jobs)} jobs`);
    await prefill(client, queue, jobs, 50);
    ctx.log(`${SCENARIO}: ${fmt(total)} claims over ${seconds + 1} s (first second is warm-up)`);

    const fromDue: number[] = [];
    const trace: Array<[number, number]> = [];
    const service: number[] = [];
    let empty = 0;
    let failed = 0;
    const inflight = new Set<Promise<unknown>>();
    const interval = 1000 / RATE;
    const start = now();
    const meter = ctx.meter();
    const loop = watchBenchLoop();
    let i = 0;
    while (i < total) {
      const t = now();
      // Fire everything due; the timer below wakes about once per millisecond.
      while (i < total && start + i * interval <= t) {
        const due = start + i * interval;
        const warm = i < RATE * (WARMUP_MS / 1000);
        if (i === RATE * (WARMUP_MS / 1000)) meter.mark();
        const sentAt = now();
        const p = client
          .post('/api/v1/jobs/claim', { queue_name: queue, worker_id: `bench-c${i % 50}`, limit: 1 }, 30_000)
          .then((r) => {
            const at = now();
            expectStatus(r, 200, 'claim');
            if ((r.body.jobs as unknown[]).length === 0) empty++;
            if (!warm) {
              fromDue.push(at - due);
              trace.push([due - start, at - due]);
              service.push(at - sentAt);
            }
          })
          .catch(() => failed++)
          .finally(() => inflight.delete(p));
        inflight.add(p);
        i++;
      }
      if (i < total) await sleep(Math.max(0, start + i * interval - now()));
    }
    const sendSecs = (now() - start) / 1000;
    await Promise.all(inflight);
    const usage = await meter.read();
    const benchLoop = loop.stop();
    writeTrace('claim', trace);
    const d = sortedOf(fromDue);
    const s = sortedOf(service);
    const rate = total / sendSecs;
    ctx.log(`${SCENARIO}: offered ${fmt(rate)}/s; p50 ${fmt(percentile(d, 50), 2)} ms, p99 ${fmt(percentile(d, 99), 2)} ms`);
    return [
      { scenario: SCENARIO, metric: 'offered rate', value: `${fmt(rate)} claims/s`, target: '', met: null },
      { scenario: SCENARIO, metric: 'latency p50 (from due time)', value: `${fmt(percentile(d, 50), 2)} ms`, target: '', met: null },
      { scenario: SCENARIO, metric: 'latency p99 (from due time)', value: `${fmt(percentile(d, 99), 2)} ms`, target: '≤ 5 ms', met: percentile(d, 99) <= 5 },
      { scenario: SCENARIO, metric: 'latency p99.9 / max (from due time)', value: `${fmt(percentile(d, 99.9), 2)} / ${fmt(d[d.length - 1] ?? NaN, 2)} ms`, target: '', met: null },
      { scenario: SCENARIO, metric: 'service time p50 / p99 (from send)', value: `${fmt(percentile(s, 50), 2)} / ${fmt(percentile(s, 99), 2)} ms`, target: '', met: null },
      { scenario: SCENARIO, metric: 'empty claims / failed requests', value: `${fmt(empty)} / ${fmt(failed)}`, target: '0 / 0', met: empty === 0 && failed === 0 },
      { scenario: SCENARIO, metric: 'load generator event-loop delay p99 / max', value: `${fmt(benchLoop.p99, 1)} / ${fmt(benchLoop.max, 1)} ms`, target: '', met: null },
      ...usageRows(SCENARIO, usage, fromDue.length),
    ];
  } finally {
    client.close();
  }
}
