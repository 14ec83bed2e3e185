// Scenario 6 — a flood of unknown API keys beside a tenant: the tenant's single enqueues (20 keep-alive connections,
// autocannon) for BENCH_SECONDS alone, then as long again while another client sends 2,500 requests/s, each with a
// different key no row has (what a misconfigured client or someone guessing sends). Each unknown key costs the node a
// SHA-256 and a read of the keys; the reads go in batches, one statement at a time (src/app/key-lookups.ts), so the
// flood takes CPU but not the store's general pool from the tenant. Reported: the tenant's rate and latency with and
// without the flood, and the flood's refusals (every one must be a 401).
import { randomUUID } from 'node:crypto';
import autocannon, { type Result } from 'autocannon';
import { fmt, type Context, type Row } from './lib.js';

const SCENARIO = '6. a tenant beside 2,500 requests/s with unknown keys';
const FLOOD_RATE = 2_500;

export async function keyFlood(ctx: Context): Promise<Row[]> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const tenant = {
    url: `${ctx.url}/api/v1/jobs`,
    method: 'POST' as const,
    headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ queue_name: 'bench-flood', payload: { task: 'send-email', user_id: 12345 } }),
    connections: 20,
    pipelining: 1,
    timeout: 10,
  };
  const flood = {
    url: `${ctx.url}/api/v1/queues`,
    method: 'GET' as const,
    connections: 30,
    pipelining: 1,
    timeout: 10,
    overallRate: FLOOD_RATE,
    requests: [{ setupRequest: (req: { headers?: Record<string, string> }) => ({ ...req, headers: { ...req.headers, authorization: `Bearer svc_live_${randomUUID().replaceAll('-', '')}` } }) }],
  };
  ctx.log(`${SCENARIO}: warm-up 2 s`);
  await autocannon({ ...tenant, duration: 2 });
  ctx.log(`${SCENARIO}: the tenant alone, ${seconds} s`);
  const alone = await autocannon({ ...tenant, duration: seconds });
  ctx.log(`${SCENARIO}: the tenant beside the flood, ${seconds} s`);
  const [beside, bad] = await Promise.all([autocannon({ ...tenant, duration: seconds }), autocannon({ ...flood, duration: seconds })]);
  const rate = (r: Result) => r['2xx'] / r.duration;
  const kept = rate(beside) / Math.max(1, rate(alone));
  const refused = bad.statusCodeStats?.['401']?.count ?? 0;
  const other = bad['2xx'] + bad.non2xx - refused + bad.errors + bad.timeouts;
  ctx.log(`${SCENARIO}: tenant ${fmt(rate(alone))} → ${fmt(rate(beside))} jobs/s (${fmt(kept * 100)} %), flood ${fmt(refused / bad.duration)} 401/s`);
  return [
    { scenario: SCENARIO, metric: 'tenant alone: enqueues/s · p50 / p99', value: `${fmt(rate(alone))} · ${alone.latency.p50} / ${alone.latency.p99} ms`, target: '', met: null },
    { scenario: SCENARIO, metric: 'tenant beside the flood: enqueues/s · p50 / p99', value: `${fmt(rate(beside))} · ${beside.latency.p50} / ${beside.latency.p99} ms`, target: '', met: null },
    { scenario: SCENARIO, metric: "share of the tenant's rate kept", value: `${fmt(kept * 100)} %`, target: '', met: null },
    { scenario: SCENARIO, metric: 'flood: refused 401/s · other answers', value: `${fmt(refused / bad.duration)} · ${fmt(other)}`, target: '· 0', met: other === 0 },
  ];
}
