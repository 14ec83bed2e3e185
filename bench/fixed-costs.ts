// What one request costs when nothing else runs: `node --import tsx bench/fixed-costs.ts`. One client sends one
// request at a time, each kind in turn: GET /health (HTTP alone), a claim on an empty queue (plus the credential,
// admission and a queue actor), an enqueue (plus one group commit), a claim then a complete of the job (two
// requests, two commits). A first pass warms the node (a fresh node's first seconds cost more: docs/BENCHMARKS.md);
// the second is printed: latency p50, and the CPU per operation of the node and of PostgreSQL's processes for the
// database (/proc). BENCH_FIXED_SECONDS (4) per kind and pass; BENCH_SERVER_ROOT and BENCH_COMPILED as in lib.ts.
import { Client, expectStatus, fmt, freshDatabase, percentile, postgresPids, procTicks, sortedOf, startServer } from './lib.js';

const SECONDS = Number(process.env.BENCH_FIXED_SECONDS ?? 4);

const db = await freshDatabase();
try {
  const server = await startServer(db.url);
  try {
    const c = new Client(server.url, server.key, 1);
    const kinds: Array<[string, () => Promise<void>]> = [
      ['GET /health', async () => expectStatus(await c.get('/health'), 200, 'health')],
      ['claim, empty queue', async () => expectStatus(await c.post('/api/v1/jobs/claim', { queue_name: 'empty', worker_id: 'w', limit: 1 }), 200, 'claim')],
      ['enqueue', async () => expectStatus(await c.post('/api/v1/jobs', { queue_name: 'q', payload: { n: 1 } }), 201, 'enqueue')],
      [
        'claim + complete',
        async () => {
          const r = await c.post('/api/v1/jobs/claim', { queue_name: 'q', worker_id: 'w', limit: 1 });
          expectStatus(r, 200, 'claim');
          const job = r.body.jobs[0] as { id: string; lease_id: string };
          expectStatus(await c.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w', lease_id: job.lease_id, result: {} }), 200, 'complete');
        },
      ],
    ];
    const postgres = () => postgresPids(db.name).reduce((sum, p) => sum + procTicks(p), 0);
    for (const pass of ['warm-up', 'measured']) {
      for (const [name, op] of kinds) {
        const ms: number[] = [];
        const node0 = procTicks(server.pid);
        const pg0 = postgres();
        const end = performance.now() + SECONDS * 1000;
        while (performance.now() < end) {
          const t = performance.now();
          await op();
          ms.push(performance.now() - t);
        }
        if (pass === 'warm-up') continue;
        // A tick is 10 ms: µs per operation = ticks × 10,000 / operations.
        const node = ((procTicks(server.pid) - node0) * 10_000) / ms.length;
        const pg = ((postgres() - pg0) * 10_000) / ms.length;
        console.log(`[bench] fixed-costs: ${name}: p50 ${fmt(percentile(sortedOf(ms), 50), 2)} ms, node ${fmt(node)} µs and PostgreSQL ${fmt(pg)} µs of CPU per operation (${fmt(ms.length)} operations)`);
      }
    }
    c.close();
  } finally {
    await server.stop();
  }
} finally {
  await db.drop();
}
