// What this machine allows whatever the node does: `node --import tsx bench/floors.ts`. No node runs.
//
// 1. A durable commit's latency: one-row INSERTs through node-pg, open loop (each due at its time, measured from it,
//    as scenarios 3 and 4 measure), over two connections (the journal's depth), at 200/s and 1,000/s, with
//    synchronous_commit on (what every Sluice commit pays) and off (what is the disk's). A p99 of the node's under
//    its target needs this p99 well under it: the claim-latency target (≤ 5 ms at 1,000/s) cannot be met where a
//    bare commit's p99 is already 5 ms.
// 2. What one job's group commit costs PostgreSQL beside the plainest insert of the same row: select 1 (the round
//    trip), a one-row INSERT … VALUES, and commitBatch of one new job with its fence, each prepared, one at a time,
//    passes alternated; the backend's CPU per statement (/proc) and latency p50. The difference is the commit's
//    fixed cost (its CTEs, json_to_recordset, the fence), which small groups (low load) pay per request.
//
// BENCH_FLOORS_SECONDS (5) per rate, BENCH_FLOORS_STATEMENTS (2,000) per kind and pass, BENCH_FLOORS_PASSES (5).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../src/io/db/migrate.js';
import { PgStore } from '../src/io/db/pg.js';
import { commitBatch } from '../src/io/db/sql/commitBatch.js';
import { fmt, freshDatabase, jobInsert, now, percentile, procTicks, sleep, sortedOf } from './lib.js';

const SECONDS = Number(process.env.BENCH_FLOORS_SECONDS ?? 5);
const STATEMENTS = Number(process.env.BENCH_FLOORS_STATEMENTS ?? 2_000);
const PASSES = Number(process.env.BENCH_FLOORS_PASSES ?? 5);
const log = (msg: string) => process.stdout.write(`[bench] floors: ${msg}\n`);

/** Open-loop one-row commits at `rate` over two connections; latencies from each commit's due time. */
async function commitLatency(url: string, rate: number, sync: 'on' | 'off'): Promise<number[]> {
  const conns = await Promise.all(
    [0, 1].map(async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`SET synchronous_commit = ${sync}`);
      return { c, busy: false, queue: [] as number[] };
    }),
  );
  const latencies: number[] = [];
  const run = (conn: (typeof conns)[number], due: number): void => {
    conn.busy = true;
    void conn.c.query({ name: 'floor_insert', text: 'INSERT INTO floor (a, b) VALUES ($1, $2)', values: [1, 'x'] }).then(() => {
      latencies.push(now() - due);
      conn.busy = false;
      const next = conn.queue.shift();
      if (next !== undefined) run(conn, next);
    });
  };
  const total = rate * SECONDS;
  const start = now();
  for (let i = 0; i < total; ) {
    for (const t = now(); i < total && start + (i * 1000) / rate <= t; i++) {
      const due = start + (i * 1000) / rate;
      const free = conns.find((c) => !c.busy);
      if (free) run(free, due);
      else conns.reduce((a, b) => (a.queue.length <= b.queue.length ? a : b)).queue.push(due);
    }
    await sleep(1);
  }
  while (latencies.length < total) await sleep(5);
  await Promise.all(conns.map((c) => c.c.end()));
  return latencies;
}

const db = await freshDatabase();
try {
  const setup = new PgStore(db.url, 2);
  await migrate(setup);
  await setup.query('CREATE TABLE floor (id bigserial PRIMARY KEY, a int, b text, at timestamptz DEFAULT now())');

  for (const rate of [200, 1_000]) {
    for (const sync of ['on', 'off'] as const) {
      const d = sortedOf(await commitLatency(db.url, rate, sync));
      log(
        `one-row commits at ${fmt(rate)}/s, synchronous_commit ${sync}: p50 ${fmt(percentile(d, 50), 2)} · p99 ${fmt(percentile(d, 99), 2)} · ` +
          `p99.9 ${fmt(percentile(d, 99.9), 2)} · max ${fmt(d[d.length - 1]!, 2)} ms from due time; over 5 ms ${fmt((100 * d.filter((x) => x > 5).length) / d.length, 2)} %`,
      );
    }
  }

  // A node's setting: the shards it owns (256), the fence's lock and read, the commit pool's generic plans.
  const node = randomUUID();
  const org = randomUUID();
  await setup.query(`INSERT INTO shards (shard) SELECT generate_series(0, 255) ON CONFLICT DO NOTHING`);
  await setup.query(`UPDATE shards SET owner = $1, epoch = 1 WHERE shard >= 0`, [node]);
  const commits = PgStore.forCommits(db.url, 1);
  const pid = (await commits.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))[0]!.pid;
  const kinds: Array<[string, () => Promise<unknown>]> = [
    ['select 1', () => commits.query('SELECT 1', [], 'floor_select')],
    [
      'INSERT … VALUES of the row',
      () =>
        commits.query(
          `INSERT INTO jobs (id, organization_id, queue_name, status, payload, max_retries, timeout_seconds, created_at, updated_at)
           VALUES ($1, $2, 'q', 'pending', $3, 3, 300, now(), now())`,
          [randomUUID(), org, { n: 1 }],
          'floor_values',
        ),
    ],
    ['commitBatch of one job, fenced', () => commitBatch(commits, [jobInsert(org, 'q')], { node, shards: [7], epochs: ['1'] })],
  ];
  const cpu = new Map<string, number[]>();
  const p50 = new Map<string, number[]>();
  for (let pass = 0; pass <= PASSES; pass++) {
    for (const [name, op] of kinds) {
      const ms: number[] = [];
      const t0 = procTicks(pid);
      for (let i = 0; i < STATEMENTS; i++) {
        const t = now();
        await op();
        ms.push(now() - t);
      }
      if (pass === 0) continue; // warm-up: plans, caches
      cpu.set(name, [...(cpu.get(name) ?? []), ((procTicks(pid) - t0) * 10_000) / STATEMENTS]);
      p50.set(name, [...(p50.get(name) ?? []), percentile(sortedOf(ms), 50)]);
    }
  }
  const median = (xs: number[]) => percentile(sortedOf(xs), 50);
  for (const [name] of kinds) {
    log(`${name}: backend CPU ${fmt(median(cpu.get(name)!))} µs, p50 ${fmt(median(p50.get(name)!), 3)} ms per statement (medians of ${PASSES} passes)`);
  }
  await commits.close();
  await setup.close();
} finally {
  await db.drop();
}
