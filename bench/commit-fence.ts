// The group commit alone, by how many shards its fence spans: `node --import tsx bench/commit-fence.ts`. Groups of
// BENCH_FENCE_GROUP (18) one-job inserts, each job in a queue drawn from 1, 100 or 10,000 (BENCH_FENCE_QUEUES), so a
// group's fence covers 1 to ~17 of the 256 shards; two commits in flight (the journal's default depth) on the
// commit pool, for BENCH_FENCE_SECONDS (6) each. Prints commits/s and WAL bytes per commit. No node runs: this is
// commitBatch and PostgreSQL only, where the scale scenario's queue-count curve mixes in the whole server. To compare
// two commits, copy this file and bench/lib.ts into a tree of each (they import commitBatch, PgStore, migrate and shardOf).
import { randomUUID } from 'node:crypto';
import { migrate } from '../src/io/db/migrate.js';
import { PgStore } from '../src/io/db/pg.js';
import { commitBatch } from '../src/io/db/sql/commitBatch.js';
import { actorKey, shardOf } from '../src/runtime/shard.js';
import { fmt, freshDatabase, jobInsert } from './lib.js';

const GROUP = Number(process.env.BENCH_FENCE_GROUP ?? 18);
const SECONDS = Number(process.env.BENCH_FENCE_SECONDS ?? 6);
const QUEUES = (process.env.BENCH_FENCE_QUEUES ?? '1,100,10000').split(',').map(Number);
const IN_FLIGHT = 2;
const SHARDS = 256;

const db = await freshDatabase();
try {
  const general = new PgStore(db.url, 2);
  await migrate(general);
  const org = randomUUID();
  const node = randomUUID();
  await general.query(`INSERT INTO organizations (id, name, slug, created_at, updated_at) VALUES ($1, 'bench', 'bench', now(), now())`, [org]);
  await general.query(`INSERT INTO shards (shard) SELECT generate_series(0, ${SHARDS - 1}) ON CONFLICT DO NOTHING`);
  await general.query(`UPDATE shards SET owner = $1, epoch = 1, lease_until = now() + interval '1 hour' WHERE shard >= 0`, [node]);
  const commits = PgStore.forCommits(db.url, IN_FLIGHT);
  for (const queues of QUEUES) {
    const [start] = await general.query<{ lsn: string }>(`SELECT pg_current_wal_lsn()::text AS lsn`);
    const end = performance.now() + SECONDS * 1000;
    let n = 0;
    let spanned = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (performance.now() < end) {
          const names = Array.from({ length: GROUP }, () => `q${Math.floor(Math.random() * queues)}`);
          const records = names.map((q) => jobInsert(org, q));
          const shards = [...new Set(names.map((q) => shardOf(actorKey(org, q), SHARDS)))].sort((a, b) => a - b);
          await commitBatch(commits, records, { node, shards, epochs: shards.map(() => '1') });
          n++;
          spanned += shards.length;
        }
      }),
    );
    const [wal] = await general.query<{ bytes: number }>(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::float8 AS bytes`, [start!.lsn]);
    console.log(`[bench] commit-fence: ${fmt(queues)} queues, ${(spanned / n).toFixed(1)} shards per commit: ${fmt(n / SECONDS)} commits/s, ${fmt(wal!.bytes / n)} WAL bytes per commit`);
  }
  await commits.close();
  await general.close();
} finally {
  await db.drop();
}
