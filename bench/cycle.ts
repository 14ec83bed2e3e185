// Scenario 2 — claim → complete with 50 concurrent workers (cycleKeys: the same with jobs spread over 1,000
// concurrency keys, so every claim goes through the per-key lanes; its ratio to `cycle` is the cost of fairness;
// cycleAck: 5 workers claiming 10 at a time and acknowledging each claim's jobs in one batch request,
// POST /api/v1/jobs/complete: 50 jobs in flight, as in the others, at a fifth of a request per job). The queue is pre-filled first (50 concurrent
// enqueuers), then 50 loops each claim (limit 1, or 10 in the variant) and complete what they got, with no
// work in between: this measures the queue, not a job. Jobs completed in the first second are warm-up and
// not counted; a loop stops at the deadline or when the queue runs dry.
import { Client, expectStatus, fmt, now, percentile, prefill, sortedOf, usageRows, writeTrace, type Context, type Row } from './lib.js';

const WORKERS = 50;
const WARMUP_MS = 1_000;

async function run(ctx: Context, limit: number, keys = 0, ack = false): Promise<Row[]> {
  const workers = ack ? WORKERS / limit : WORKERS;
  const scenario = `2. claim → complete, ${workers} workers, limit ${limit}${keys > 0 ? `, ${fmt(keys)} concurrency keys` : ''}${ack ? ', batch ack' : ''}`;
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const jobs = Number(process.env.BENCH_CYCLE_JOBS ?? (limit === 1 ? 40_000 : 90_000));
  const queue = `bench-cycle-${limit}${keys > 0 ? '-keys' : ''}${ack ? '-ack' : ''}`;
  const client = new Client(ctx.url, ctx.key, WORKERS * Math.max(1, limit));
  try {
    ctx.log(`${scenario}: pre-filling ${fmt(jobs)} jobs`);
    const t0 = now();
    const filled = await prefill(client, queue, jobs, WORKERS, 120_000, keys);
    ctx.log(`${scenario}: pre-filled ${fmt(filled)} in ${fmt((now() - t0) / 1000, 1)} s; measuring ${seconds} s`);

    const start = now();
    const measureFrom = start + WARMUP_MS;
    const deadline = measureFrom + seconds * 1000;
    let counted = 0;
    let lastDone = measureFrom;
    let drained = false;
    const meter = ctx.meter();
    const meterTimer = setTimeout(() => meter.mark(), WARMUP_MS);
    const claimMs: number[] = [];
    const completeMs: number[] = [];
    const trace: Array<[number, number]> = [];

    const worker = async (w: number) => {
      const workerId = `bench-w${w}`;
      while (now() < deadline) {
        const c0 = now();
        const r = await client.post('/api/v1/jobs/claim', { queue_name: queue, worker_id: workerId, limit });
        expectStatus(r, 200, 'claim');
        const t = now();
        if (t >= measureFrom) claimMs.push(t - c0);
        const got = r.body.jobs as Array<{ id: string; lease_id: string }>;
        if (got.length === 0) {
          drained = true;
          return;
        }
        if (ack) {
          const s = now();
          const done = await client.post('/api/v1/jobs/complete', {
            worker_id: workerId,
            jobs: got.map((job) => ({ id: job.id, lease_id: job.lease_id, result: { ok: true } })),
          });
          expectStatus(done, 200, 'batch complete');
          if (done.body.failure_count !== 0) throw new Error(`batch complete: ${JSON.stringify(done.body.failed[0])}`);
          const e = now();
          if (e >= measureFrom && e < deadline) {
            counted += got.length;
            lastDone = e;
            completeMs.push(e - s);
            trace.push([e - measureFrom, e - s]);
          }
          continue;
        }
        await Promise.all(
          got.map(async (job) => {
            const s = now();
            const done = await client.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: workerId, lease_id: job.lease_id, result: { ok: true } });
            expectStatus(done, 200, 'complete');
            const e = now();
            if (e >= measureFrom && e < deadline) {
              counted++;
              lastDone = e;
              completeMs.push(e - s);
              trace.push([e - measureFrom, e - s]);
            }
          }),
        );
      }
    };
    await Promise.all(Array.from({ length: workers }, (_, i) => worker(i)));
    clearTimeout(meterTimer);
    const usage = await meter.read();
    writeTrace(`cycle-${limit}`, trace);
    const end = drained ? lastDone : deadline;
    const perSec = counted / ((end - measureFrom) / 1000);
    const cl = sortedOf(claimMs);
    const co = sortedOf(completeMs);
    if (drained) ctx.log(`${scenario}: the queue ran dry before the deadline; raise BENCH_CYCLE_JOBS for a full-length run`);
    ctx.log(`${scenario}: ${fmt(perSec)} completed/s`);
    return [
      {
        scenario,
        metric: `completed jobs/s${drained ? ' (queue ran dry early)' : ''}`,
        value: counted === 0 ? 'n/a: the pre-fill ran out during warm-up' : `${fmt(perSec)} jobs/s`,
        target: limit === 1 ? '≥ 8,000 jobs/s' : '',
        met: limit === 1 ? perSec >= 8_000 : null,
      },
      {
        scenario,
        metric: 'claim / complete latency p50 · p99',
        value: `${fmt(percentile(cl, 50), 1)} · ${fmt(percentile(cl, 99), 1)} / ${fmt(percentile(co, 50), 1)} · ${fmt(percentile(co, 99), 1)} ms`,
        target: '',
        met: null,
      },
      // Each completed job took a claim and a complete (claims are per `limit` jobs).
      ...usageRows(scenario, usage, claimMs.length + completeMs.length),
    ];
  } finally {
    client.close();
  }
}

export const cycle = (ctx: Context) => run(ctx, 1);
export const cycle10 = (ctx: Context) => run(ctx, 10);
export const cycleKeys = (ctx: Context) => run(ctx, 1, 1_000);
export const cycleAck = (ctx: Context) => run(ctx, 10, 0, true);
