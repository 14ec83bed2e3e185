// Scenario `sdkWorker` — the TypeScript SDK's Worker over REST (clients/typescript), concurrency 50, with a no-op
// handler on a pre-filled queue: what a user's worker gets, and how its time splits between its two round trips.
// The worker claims with long polls sized to its free slots and acknowledges in batches (POST /api/v1/jobs/complete),
// which also claim the next jobs while the worker is busy, so throughput is set by how many jobs ride in each
// request and how long each takes; the node's own histograms (/metrics, read before and after the window) say
// both, and the journal's commits beside them.
// SDK_PREFETCH (default 50, as the peer harness's sdk-prefetch) holds that many jobs beyond the slots; 0 runs the
// plain worker. The first second is warm-up; the run stops at BENCH_SECONDS or when the queue runs dry.
import { SluiceClient, Worker } from '../clients/typescript/src/index.js';
import { Client, fmt, now, prefill, sleep, usageRows, type Context, type Row } from './lib.js';

const CONCURRENCY = 50;
const WARMUP_MS = 1_000;

interface Totals {
  count: number;
  sum: number;
}

/** Counts and sums of the node's histograms that this scenario reads, keyed `claim`, `ack`, `commit`, `records`. */
async function histograms(url: string): Promise<Record<string, Totals>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, Totals> = {};
  const add = (key: string, part: string, v: number) => {
    const t = (out[key] ??= { count: 0, sum: 0 });
    if (part === 'count') t.count += v;
    else t.sum += v;
  };
  for (const line of text.split('\n')) {
    const http = /^sluice_http_request_duration_seconds_(count|sum)\{(.*)\} (\S+)$/.exec(line);
    if (http && http[2]!.includes('method="POST"')) {
      if (http[2]!.includes('route="/api/v1/jobs/claim"')) add('claim', http[1]!, Number(http[3]));
      else if (http[2]!.includes('route="/api/v1/jobs/complete"')) add('ack', http[1]!, Number(http[3]));
      continue;
    }
    const journal = /^sluice_journal_commit_(seconds|records)_(count|sum)(?:\{.*\})? (\S+)$/.exec(line);
    if (journal) add(journal[1] === 'seconds' ? 'commit' : 'records', journal[2]!, Number(journal[3]));
  }
  return out;
}

function diff(a: Record<string, Totals>, b: Record<string, Totals>, key: string): Totals {
  return { count: (b[key]?.count ?? 0) - (a[key]?.count ?? 0), sum: (b[key]?.sum ?? 0) - (a[key]?.sum ?? 0) };
}

export async function sdkWorker(ctx: Context): Promise<Row[]> {
  const prefetch = Number(process.env.SDK_PREFETCH ?? 50);
  const transport = process.env.SDK_TRANSPORT === 'grpc' ? 'grpc' : 'http';
  const scenario = `5. SDK worker over ${transport === 'grpc' ? 'gRPC' : 'REST'}, concurrency ${CONCURRENCY}, prefetch ${prefetch}`;
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const jobs = Number(process.env.BENCH_CYCLE_JOBS ?? 120_000);
  const queue = 'bench-sdk';
  const filler = new Client(ctx.url, ctx.key, 10);
  ctx.log(`${scenario}: pre-filling ${fmt(jobs)} jobs`);
  try {
    await prefill(filler, queue, jobs, 10, 120_000, 0, true);
  } finally {
    filler.close();
  }

  const client = new SluiceClient({ url: ctx.url, apiKey: ctx.key });
  let done = 0;
  let errors = 0;
  const worker = new Worker(client, queue, async () => {}, {
    concurrency: CONCURRENCY,
    prefetch,
    pollWaitMs: 1000,
    transport,
    grpc: { address: ctx.server.grpc },
  });
  worker.on('completed', () => done++);
  worker.on('error', () => errors++);
  worker.on('leaseLost', () => errors++);
  const meter = ctx.meter();
  try {
    await sleep(WARMUP_MS);
    const before = await histograms(ctx.url);
    meter.mark();
    const from = done;
    const t0 = now();
    const deadline = t0 + seconds * 1000;
    while (now() < deadline && done < jobs) await sleep(20);
    const elapsed = (now() - t0) / 1000;
    const counted = done - from;
    const usage = await meter.read();
    const after = await histograms(ctx.url);
    const claims = diff(before, after, 'claim');
    const acks = diff(before, after, 'ack');
    const commits = diff(before, after, 'commit');
    const records = diff(before, after, 'records');
    // Since 6d35400 a busy worker claims on its acknowledgements, so the claim route may see no request at all.
    const mean = (t: Totals) => (t.count > 0 ? `${fmt((t.sum / t.count) * 1000, 2)} ms` : '—');
    const per = (t: Totals) => (t.count > 0 ? fmt(counted / t.count, 1) : '—');
    const rate = counted / elapsed;
    ctx.log(`${scenario}: ${fmt(rate)} jobs/s`);
    const row = (metric: string, value: string, target = '', met: boolean | null = null): Row => ({ scenario, metric, value, target, met });
    return [
      row('completed jobs/s', fmt(rate)),
      row('claim requests: per second · jobs per request · mean at the node', `${fmt(claims.count / elapsed)} · ${per(claims)} · ${mean(claims)}`),
      row('acknowledgements: per second · jobs per batch · mean at the node', `${fmt(acks.count / elapsed)} · ${per(acks)} · ${mean(acks)}`),
      row('journal commits: records per commit · mean duration', `${fmt(records.sum / Math.max(1, records.count), 1)} · ${mean(commits)}`),
      row('worker errors and lost leases', fmt(errors), '0', errors === 0),
      ...usageRows(scenario, usage, claims.count + acks.count),
    ];
  } finally {
    await worker.close({ graceMs: 5_000 });
  }
}
