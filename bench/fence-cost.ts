// PostgreSQL's CPU per one-job commit, the fence's share of which is fixed: `node --import tsx bench/fence-cost.ts`.
// The database looks like a node's: its shards renewed every 200 ms (dead row versions, as lease renewals leave),
// the commit statement and the fence's query planned at the first commit, on a table one page long. One commit
// in flight, synchronous_commit off (the CPU, not the disk), BENCH_FENCE_SHARDS (1) shards per commit, 3 rounds of
// 4 s. Prints commits/s and the commit backend's CPU per commit (/proc). To compare two commits, copy this file
// and bench/lib.ts into a tree of each (they import commitBatch, PgStore and migrate).
import { randomUUID } from 'node:crypto';
import { migrate } from '../src/io/db/migrate.js';
import { PgStore } from '../src/io/db/pg.js';
import { commitBatch } from '../src/io/db/sql/commitBatch.js';
import { fmt, freshDatabase, jobInsert, procTicks, sleep } from './lib.js';

const SHARDS = Number(process.env.BENCH_FENCE_SHARDS ?? 1);
const ROUNDS = 3;
const ROUND_MS = 4_000;

const db = await freshDatabase();
try {
  const general = new PgStore(db.url, 2);
  await migrate(general);
  await general.exec(`ALTER DATABASE ${db.name} SET synchronous_commit = off`);
  const org = randomUUID();
  const node = randomUUID();
  await general.query(`INSERT INTO organizations (id, name, slug, created_at, updated_at) VALUES ($1, 'bench', 'bench', now(), now())`, [org]);
  await general.query(`INSERT INTO shards (shard) SELECT generate_series(0, 255) ON CONFLICT DO NOTHING`);
  await general.query(`UPDATE shards SET owner = $1, epoch = 1, lease_until = now() + interval '1 hour' WHERE shard >= 0`, [node]);
  const commits = PgStore.forCommits(db.url, 1);
  const shards = Array.from({ length: SHARDS }, (_, i) => i * 7);
  const fence = { node, shards, epochs: shards.map(() => '1') };
  // The first commit plans the statements, as a node's first commit does.
  await commitBatch(commits, [jobInsert(org, 'q')], fence);
  let renewing = true;
  const renewals = (async () => {
    while (renewing) {
      await general.query(`UPDATE shards SET lease_until = now() + interval '1 hour' WHERE owner = $1`, [node]);
      await sleep(200);
    }
  })();
  await sleep(3_000);
  const [{ pid }] = (await commits.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
  for (let round = 0; round < ROUNDS; round++) {
    const before = procTicks(pid);
    const end = performance.now() + ROUND_MS;
    let n = 0;
    while (performance.now() < end) {
      await commitBatch(commits, [jobInsert(org, 'q')], fence);
      n++;
    }
    const cpu = ((procTicks(pid) - before) * 10_000) / n;
    console.log(`[bench] fence-cost: ${SHARDS} shard(s) per commit: ${fmt((n * 1000) / ROUND_MS)} commits/s, ${fmt(cpu)} µs of the backend's CPU per commit`);
  }
  renewing = false;
  await renewals;
  await commits.close();
  await general.close();
} finally {
  await db.drop();
}
