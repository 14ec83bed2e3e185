// The group commit alone, by how many shards its fence spans: `node --import tsx bench/commit-fence.ts`. Groups of
// BENCH_FENCE_GROUP (18) one-job inserts, each job in a queue drawn from 1, 100 or 10,000 (BENCH_FENCE_QUEUES), so a
// group's fence covers 1 to ~17 of the 256 shards; two commits in flight (the journal's default depth) on the
// commit pool, for BENCH_FENCE_SECONDS (6) each. Prints commits/s and WAL bytes per commit. No node runs: this is
// commitBatch and PostgreSQL only, where the scale scenario's queue-count curve mixes in the whole server. To compare
// two commits, copy this file into a tree of each (the file imports only commitBatch, PgStore, migrate and shardOf).
import { randomUUID } from 'node:crypto';
import type { JournalRecord } from '../src/actors/records.js';
import { migrate } from '../src/io/db/migrate.js';
import { PgStore } from '../src/io/db/pg.js';
import { commitBatch } from '../src/io/db/sql/commitBatch.js';
import { actorKey, shardOf } from '../src/runtime/shard.js';
import { fmt, freshDatabase } from './lib.js';

const GROUP = Number(process.env.BENCH_FENCE_GROUP ?? 18);
const SECONDS = Number(process.env.BENCH_FENCE_SECONDS ?? 6);
const QUEUES = (process.env.BENCH_FENCE_QUEUES ?? '1,100,10000').split(',').map(Number);
const IN_FLIGHT = 2;
const SHARDS = 256;

function insert(org: string, queue: string): JournalRecord {
  const now = Date.now();
  return {
    kind: 'insert',
    conflictKey: false,
    job: {
      id: randomUUID(), organization_id: org, queue_name: queue, status: 'pending', payload: { n: 1 }, result: null, priority: 0,
      retry_count: 0, max_retries: 3, last_error: null, errors: [], tags: {}, idempotency_key: null, timeout_seconds: 300,
      scheduled_at: null, created_at: now, started_at: null, completed_at: null, updated_at: now, assigned_worker_id: null,
      lease_id: null, lease_expires_at: null, workflow_id: null, dependencies_met: true, completion_webhook: null,
      completion_webhook_secret: null, concurrency_key: null, idempotency_expires_at: null, debounce_key: null, debounce_until: null,
    },
  };
}

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
          const records = Array.from({ length: GROUP }, () => insert(org, `q${Math.floor(Math.random() * queues)}`));
          const shards = [...new Set(records.map((r) => shardOf(actorKey(org, (r as Extract<JournalRecord, { kind: 'insert' }>).job.queue_name), SHARDS)))].sort((a, b) => a - b);
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
