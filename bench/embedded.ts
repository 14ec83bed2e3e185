// The node on its embedded store (PGlite, what `make run` starts): `node --import tsx bench/embedded.ts`. The
// scenarios of bench/run.ts need PostgreSQL (fresh databases, statistics, bulk prefills); this one starts a node
// without DATABASE_URL and measures, from 50 loops over HTTP, single enqueues then claim (limit 1) → complete on
// one queue, BENCH_SECONDS (default 6) each after a 2 s warm-up. BENCH_SERVER_ROOT and BENCH_COMPILED as in
// bench/lib.ts.
import { Client, expectStatus, fmt, startServer } from './lib.js';

const LOOPS = 50;
const ms = Number(process.env.BENCH_SECONDS ?? 6) * 1000;

const server = await startServer('');
try {
  const client = new Client(server.url, server.key, LOOPS);
  const loops = async (ms: number, step: (w: number) => Promise<number>): Promise<number> => {
    const end = performance.now() + ms;
    let n = 0;
    await Promise.all(
      Array.from({ length: LOOPS }, async (_, w) => {
        while (performance.now() < end) {
          const done = await step(w);
          n += done;
        }
      }),
    );
    return n / (ms / 1000);
  };
  const enqueue = async (): Promise<number> => {
    expectStatus(await client.post('/api/v1/jobs', { queue_name: 'embedded', payload: { at: Date.now() } }), 201, 'enqueue');
    return 1;
  };
  const cycle = async (w: number): Promise<number> => {
    const r = await client.post('/api/v1/jobs/claim', { queue_name: 'embedded', worker_id: `w${w}`, limit: 1 });
    expectStatus(r, 200, 'claim');
    for (const job of r.body.jobs as Array<{ id: string; lease_id: string }>) {
      expectStatus(await client.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: `w${w}`, lease_id: job.lease_id }), 200, 'complete');
    }
    return r.body.jobs.length;
  };
  await loops(2_000, enqueue);
  const enqueued = await loops(ms, enqueue);
  await loops(2_000, cycle);
  const cycled = await loops(ms, cycle);
  console.log(`[bench] embedded store: enqueue ${fmt(enqueued)} jobs/s, claim → complete ${fmt(cycled)} jobs/s`);
} finally {
  await server.stop();
}
