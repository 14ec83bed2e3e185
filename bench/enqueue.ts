// Scenario 1 — single enqueue: POST /api/v1/jobs, one job per request, 50 requests in flight (autocannon,
// 50 keep-alive connections, no pipelining), for BENCH_SECONDS (default 10) after a 2 s warm-up that lets
// the queue actor load and V8 optimise. autocannon's latency histogram has 1 ms resolution. Scenario 1b
// (enqueueBatch): POST /api/v1/jobs/bulk with 100 jobs per request, 10 requests in flight (the peer
// benchmark's batch workload).
import autocannon from 'autocannon';
import { fmt, usageRows, type Context, type Row } from './lib.js';

const SCENARIO = '1. single enqueue, 50 in flight';
const CONNECTIONS = 50;

export async function enqueueBatch(ctx: Context): Promise<Row[]> {
  const scenario = '1b. batch enqueue, 100 jobs per request, 10 in flight';
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const job = { queue_name: 'bench-enqueue-batch', payload: { task: 'send-email', user_id: 12345, template: 'welcome' } };
  const opts = {
    url: `${ctx.url}/api/v1/jobs/bulk`,
    method: 'POST',
    headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ jobs: Array.from({ length: 100 }, () => job) }),
    connections: 10,
    pipelining: 1,
    timeout: 10,
  };
  ctx.log(`${scenario}: warm-up 2 s`);
  await autocannon({ ...opts, duration: 2 });
  ctx.log(`${scenario}: measuring ${seconds} s`);
  const meter = ctx.meter();
  meter.mark();
  const r = await autocannon({ ...opts, duration: seconds });
  const usage = await meter.read();
  const perSec = (r['2xx'] * 100) / r.duration;
  const bad = r.non2xx + r.errors + r.timeouts;
  ctx.log(`${scenario}: ${fmt(perSec)} jobs/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${bad} failed`);
  return [
    { scenario, metric: 'throughput (jobs/s in 200 responses)', value: `${fmt(perSec)} jobs/s`, target: '', met: null },
    { scenario, metric: 'latency p50 / p99', value: `${r.latency.p50} / ${r.latency.p99} ms`, target: '', met: null },
    { scenario, metric: 'failed requests (non-2xx, errors, timeouts)', value: fmt(bad), target: '0', met: bad === 0 },
    ...usageRows(scenario, usage, r['2xx']),
  ];
}

export async function enqueue(ctx: Context): Promise<Row[]> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const opts = {
    url: `${ctx.url}/api/v1/jobs`,
    method: 'POST',
    headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ queue_name: 'bench-enqueue', payload: { task: 'send-email', user_id: 12345, template: 'welcome' } }),
    connections: CONNECTIONS,
    pipelining: 1,
    timeout: 10,
  };
  ctx.log(`${SCENARIO}: warm-up 2 s`);
  await autocannon({ ...opts, duration: 2 });
  ctx.log(`${SCENARIO}: measuring ${seconds} s`);
  const meter = ctx.meter();
  meter.mark();
  const r = await autocannon({ ...opts, duration: seconds });
  const usage = await meter.read();
  // 201s only: autocannon counts every answer in `requests`, errors included.
  const perSec = r['2xx'] / r.duration;
  const bad = r.non2xx + r.errors + r.timeouts;
  ctx.log(`${SCENARIO}: ${fmt(perSec)} jobs/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${bad} failed`);
  return [
    { scenario: SCENARIO, metric: 'throughput (201 responses/s)', value: `${fmt(perSec)} jobs/s`, target: '≥ 10,000 jobs/s', met: perSec >= 10_000 },
    { scenario: SCENARIO, metric: 'latency p50 / p99', value: `${r.latency.p50} / ${r.latency.p99} ms`, target: '', met: null },
    { scenario: SCENARIO, metric: 'failed requests (non-2xx, errors, timeouts)', value: fmt(bad), target: '0', met: bad === 0 },
    ...usageRows(SCENARIO, usage, r['2xx']),
  ];
}
