// Fencing: a group commit carries the epochs of its shards and writes nothing unless the node still holds every
// one of them under that epoch, in the same statement; the shard leases (take, renew, hand over, lose) that move
// the epochs; how a group's inserts with and without an idempotency key go in. On both stores (the embedded node
// owns every shard of its own database the same way).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { JobRow, JournalRecord } from '../src/actors/records.js';
import { actorHosts, loadConfig } from '../src/config.js';
import { acquireShards } from '../src/io/db/sql/acquireShards.js';
import { PgStore } from '../src/io/db/pg.js';
import { commitBatch, FencedError } from '../src/io/db/sql/commitBatch.js';
import { ensureShards } from '../src/io/db/sql/ensureShards.js';
import { readCluster } from '../src/io/db/sql/readCluster.js';
import { registerNode } from '../src/io/db/sql/registerNode.js';
import { releaseShards } from '../src/io/db/sql/releaseShards.js';
import { renewShards } from '../src/io/db/sql/renewShards.js';
import type { Store } from '../src/io/db/store.js';
import { startTestNode, STORE, type TestNode } from './helpers.js';

let n: TestNode;
let store: Store;
let org: string;
before(async () => {
  n = await startTestNode();
  store = n.node.store;
  org = (await store.query<{ id: string }>(`SELECT id FROM organizations LIMIT 1`))[0]!.id;
});
after(() => n.stop());

function insert(queue: string): JournalRecord {
  const now = Date.now();
  const job: JobRow = {
    id: randomUUID(),
    organization_id: org,
    queue_name: queue,
    status: 'pending',
    payload: { queue },
    result: null,
    priority: 0,
    retry_count: 0,
    max_retries: 3,
    last_error: null,
    errors: [],
    tags: {},
    idempotency_key: null,
    timeout_seconds: 300,
    scheduled_at: null,
    created_at: now,
    started_at: null,
    completed_at: null,
    updated_at: now,
    assigned_worker_id: null,
    lease_id: null,
    lease_expires_at: null,
    workflow_id: null,
    dependencies_met: true,
    completion_webhook: null,
    completion_webhook_secret: null,
    concurrency_key: null,
    idempotency_expires_at: null,
    debounce_key: null,
    debounce_until: null,
  };
  return { kind: 'insert', job, conflictKey: false };
}

const count = async (queue: string) => (await store.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE queue_name = $1`, [queue]))[0]!.n;

/** Now, by PostgreSQL's clock, in seconds (microseconds kept). */
const CLOCK = `extract(epoch FROM clock_timestamp())::float8`;

/** Resolves once a session of this database waits as `where` says (pg_stat_activity), within 5 s. */
async function sessionWaiting(where: string, failure: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const [row] = await store.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND ${where}`);
    if (row!.n > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(failure);
}

interface SlowCommit {
  /** Resolves once a commit sleeps inside its statement, its fence lock taken. */
  started(): Promise<void>;
  /** When its sleep ended, by PostgreSQL's clock: before the commit's transaction ended. */
  sleptUntil(): Promise<number>;
}

/**
 * Runs `fn` with shard `shard` held by `node` under epoch 1, and with every insert into `queue` sleeping `seconds`
 * inside the commit's statement, after the fence has taken its lock: a commit in flight that a test can race.
 * What waited for what is read from PostgreSQL's clock, not from the order the answers arrive in: a statement
 * that waited for the commit is woken as it ends, and its answer may reach the test before the commit's own.
 */
async function withSlowCommit(shard: number, node: string, queue: string, seconds: number, fn: (slow: SlowCommit) => Promise<void>): Promise<void> {
  await store.query(`INSERT INTO shards (shard) VALUES ($1) ON CONFLICT DO NOTHING`, [shard]);
  await store.query(`UPDATE shards SET owner = $1, epoch = 1, lease_until = now() + interval '1 minute' WHERE shard = $2`, [node, shard]);
  await store.exec(`
    CREATE TABLE slow_commit_end (at float8);
    CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.queue_name = '${queue}' THEN PERFORM pg_sleep(${seconds}); INSERT INTO slow_commit_end VALUES (${CLOCK}); END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER slow BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION slow_insert();`);
  const slow: SlowCommit = {
    started: () => sessionWaiting(`wait_event = 'PgSleep'`, 'the slow commit never started'),
    sleptUntil: async () => (await store.query<{ at: number }>(`SELECT at FROM slow_commit_end`))[0]!.at,
  };
  try {
    await fn(slow);
  } finally {
    await store.exec(`DROP TRIGGER slow ON jobs; DROP FUNCTION slow_insert(); DROP TABLE slow_commit_end;`);
  }
}

describe('the fence of a group commit', () => {
  // Shards of a separate range of this test's own: the node under test owns its own shards of this database.
  const A = randomUUID();
  const B = randomUUID();

  test('writes under the epoch the node holds; after a takeover, the deposed node writes nothing', async () => {
    await registerNode(store, A, null);
    await registerNode(store, B, null);
    await store.query(`INSERT INTO shards (shard) VALUES (100000), (100001) ON CONFLICT DO NOTHING`);
    await store.query(`UPDATE shards SET owner = $1, epoch = 7, lease_until = now() + interval '1 minute' WHERE shard IN (100000, 100001)`, [A]);

    await commitBatch(store, [insert('fenced-ok')], { node: A, shards: [100000, 100001], epochs: ['7', '7'] });
    assert.equal(await count('fenced-ok'), 1);

    // B takes shard 100001 over (its lease ran out): a new epoch.
    await store.query(`UPDATE shards SET owner = $1, epoch = 8 WHERE shard = 100001`, [B]);
    await assert.rejects(commitBatch(store, [insert('fenced-no')], { node: A, shards: [100000, 100001], epochs: ['7', '7'] }), FencedError);
    assert.equal(await count('fenced-no'), 0, 'a deposed owner writes nothing, not even to the shard it still holds');
    await assert.rejects(commitBatch(store, [insert('fenced-no')], { node: A, shards: [100001], epochs: ['8'] }), FencedError);
    await commitBatch(store, [insert('fenced-b')], { node: B, shards: [100001], epochs: ['8'] });
    assert.equal(await count('fenced-b'), 1);
  });

  test('a takeover waits for the commit in flight of the old owner, so the new owner loads its last writes', { skip: STORE !== 'pg' && 'one connection: PGlite runs statements one at a time' }, async () => {
    await withSlowCommit(100002, A, 'fenced-slow', 0.4, async ({ started, sleptUntil }) => {
      const commit = commitBatch(store, [insert('fenced-slow')], { node: A, shards: [100002], epochs: ['1'] });
      await started();
      const takeover = store.query<{ at: number }>(`UPDATE shards SET owner = $1, epoch = epoch + 1 WHERE shard = 100002 RETURNING ${CLOCK} AS at`, [B]);
      const [, [took]] = await Promise.all([commit, takeover]);
      assert.ok(took!.at > (await sleptUntil()), 'the takeover went through only once the commit had ended');
      assert.equal(await count('fenced-slow'), 1);
    });
  });

  test('a lease renewal neither waits for a commit in flight nor holds it up; a hand-over waits for it', { skip: STORE !== 'pg' && 'one connection: PGlite runs statements one at a time' }, async () => {
    await withSlowCommit(100003, A, 'fenced-renew', 0.6, async ({ started, sleptUntil }) => {
      const commit = commitBatch(store, [insert('fenced-renew')], { node: A, shards: [100003], epochs: ['1'] });
      await started();
      // Renewals of every shard run every few seconds: one that waited for each shard's commits in flight held the
      // rows it had already locked, and so every commit of those shards, for as long.
      const renewed = await renewShards(store, A, 60_000, [{ shard: 100003, epoch: '1' }]);
      const [now] = await store.query<{ at: number }>(`SELECT ${CLOCK} AS at`);
      assert.deepEqual(renewed, [{ shard: 100003, epoch: '1' }]);
      // A hand-over written as a plain update still waits: owner and epoch are key columns (migration 0024).
      const handover = store.query<{ at: number }>(`UPDATE shards SET owner = NULL, lease_until = NULL WHERE shard = 100003 RETURNING ${CLOCK} AS at`);
      const [, [handed]] = await Promise.all([commit, handover]);
      const slept = await sleptUntil();
      assert.ok(now!.at < slept, 'the renewal was done while the commit still slept');
      assert.ok(handed!.at > slept, 'the hand-over went through only once the commit had ended');
      assert.equal(await count('fenced-renew'), 1);
    });
  });

  test('a commit that starts during a takeover waits for it, then finds the new epoch and writes nothing', { skip: STORE !== 'pg' && 'one connection: PGlite runs statements one at a time' }, async () => {
    // The commit statement's own snapshot is taken before it waits; a fence that read the shard rows with it
    // would see the old epoch once the takeover had committed, and write behind the new owner's back.
    await store.query(`INSERT INTO shards (shard) VALUES (100006) ON CONFLICT DO NOTHING`);
    await store.query(`UPDATE shards SET owner = $1, epoch = 1, lease_until = now() + interval '1 minute' WHERE shard = 100006`, [A]);
    const takeover = new pg.Client({ connectionString: n.env.DATABASE_URL });
    await takeover.connect();
    try {
      await takeover.query('BEGIN');
      await takeover.query(`UPDATE shards SET owner = $1, epoch = epoch + 1 WHERE shard = 100006`, [B]);
      const commit = commitBatch(store, [insert('fenced-during')], { node: A, shards: [100006], epochs: ['1'] });
      const outcome = commit.then(() => 'written', (err: unknown) => (err instanceof FencedError ? 'fenced' : String(err)));
      await sessionWaiting(`wait_event_type = 'Lock'`, 'the commit did not wait for the takeover');
      const [waiting] = await store.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      assert.equal(waiting!.n, 1, 'the commit alone waits for the takeover');
      await takeover.query('COMMIT');
      assert.equal(await outcome, 'fenced');
      assert.equal(await count('fenced-during'), 0);
    } finally {
      await takeover.end();
    }
  });

  test('a node opens its commit connections before it serves, and names its pools', { skip: STORE !== 'pg' && 'PgStore: the pools of a node on PostgreSQL' }, async () => {
    // Kept open from boot (PgStore.warm, keepOpen): the first commit, and the first after a quiet half minute, does
    // not wait for a new connection and its statements prepared anew.
    const config = loadConfig(n.env);
    const rows = await store.query<{ name: string; n: number }>(
      `SELECT application_name AS name, count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() GROUP BY 1`,
    );
    const count = (name: string) => rows.find((r) => r.name === name)?.n ?? 0;
    assert.equal(count('sluice commits'), actorHosts(config.actorThreads) * config.commitPipeline, JSON.stringify(rows));
    assert.ok(count('sluice general') >= 1, JSON.stringify(rows));
  });

  test('a commit connection plans each statement shape once, however small its first commits', { skip: STORE !== 'pg' && 'PgStore: the pool of group commits on PostgreSQL' }, async () => {
    const C = randomUUID();
    await registerNode(store, C, null);
    await store.query(`INSERT INTO shards (shard) VALUES (100004) ON CONFLICT DO NOTHING`);
    await store.query(`UPDATE shards SET owner = $1, epoch = 1, lease_until = now() + interval '1 minute' WHERE shard = 100004`, [C]);
    const fence = { node: C, shards: [100004], epochs: ['1'] };
    // One connection, as with COMMIT_PIPELINE=1: every commit and the look at its plans run on it.
    const commits = PgStore.forCommits(n.env.DATABASE_URL!, 1);
    try {
      // Commits of one job each, as at a moderate rate: an enqueue, then a claim that wants its row back.
      for (let i = 0; i < 8; i++) {
        const rec = insert('fenced-plans') as Extract<JournalRecord, { kind: 'insert' }>;
        await commitBatch(commits, [rec], fence);
        const claimed = { ...rec.job, status: 'processing' as const, started_at: Date.now(), lease_id: randomUUID(), assigned_worker_id: 'w' };
        const out = await commitBatch(commits, [{ kind: 'update', id: rec.job.id, state: claimed, returning: true, onlyFrom: ['pending'] }], fence);
        assert.equal(out.rows.get(rec.job.id)?.status, 'processing');
      }
      const plans = await commits.query<{ name: string; generic_plans: number; custom_plans: number }>(
        `SELECT name, generic_plans::int, custom_plans::int FROM pg_prepared_statements WHERE name LIKE 'commit_%' ORDER BY name`,
      );
      assert.deepEqual(plans.map((p) => p.name), ['commit_fp', 'commit_fr']);
      for (const p of plans) {
        assert.equal(p.custom_plans, 0, `${p.name}: planned for each commit's values`);
        assert.equal(p.generic_plans, 8, `${p.name}: its generic plan serves every commit`);
      }
    } finally {
      await commits.close();
    }
  });

  test('updates and queue rows are fenced too', async () => {
    const rec = insert('fenced-upd');
    await commitBatch(store, [rec], { node: B, shards: [100001], epochs: ['8'] });
    const job = (rec as Extract<JournalRecord, { kind: 'insert' }>).job;
    const update: JournalRecord = { kind: 'update', id: job.id, state: { ...job, status: 'cancelled', completed_at: Date.now() } };
    const queue: JournalRecord = { kind: 'queue', organization_id: org, name: 'fenced-upd', state: { paused: true, paused_reason: null, paused_at: Date.now(), max_retries: null, lease_duration_secs: null, concurrency_per_key: null, max_concurrency: null, rate_limit: null, created_at: Date.now(), updated_at: Date.now() } };
    await assert.rejects(commitBatch(store, [update, queue], { node: A, shards: [100001], epochs: ['7'] }), FencedError);
    const [row] = await store.query<{ status: string }>(`SELECT status FROM jobs WHERE id = $1`, [job.id]);
    assert.equal(row!.status, 'pending');
    assert.equal((await store.query(`SELECT 1 FROM queues WHERE name = 'fenced-upd'`)).length, 0);
  });
});

describe("a group commit's inserts", () => {
  test('a job with a key another row holds is not inserted; every job without a key is; only rows claimed in the group come back', async () => {
    const keyed = (key: string): JournalRecord => {
      const rec = insert('split-inserts') as Extract<JournalRecord, { kind: 'insert' }>;
      return { ...rec, job: { ...rec.job, idempotency_key: key }, conflictKey: true };
    };
    const jobOf = (r: JournalRecord) => (r as Extract<JournalRecord, { kind: 'insert' }>).job;
    const holder = keyed('split-k1');
    const done = insert('split-inserts');
    assert.ok((await commitBatch(store, [holder, done])).inserted.has(jobOf(holder).id));
    // An update that returns nothing, in a group whose keyed inserts read the updates first (the key takeover).
    const complete: JournalRecord = { kind: 'update', id: jobOf(done).id, state: { ...jobOf(done), status: 'completed', completed_at: Date.now() } };

    const [taken, fresh, plain, claimed] = [keyed('split-k1'), keyed('split-k2'), insert('split-inserts'), insert('split-inserts')];
    const c = jobOf(claimed);
    const lease = randomUUID();
    const claim: JournalRecord = { kind: 'update', id: c.id, state: { ...c, status: 'processing', started_at: Date.now(), lease_id: lease, assigned_worker_id: 'w' }, returning: true, onlyFrom: ['pending'] };
    const out = await commitBatch(store, [taken, fresh, plain, claimed, claim, complete]);
    assert.equal(out.inserted.has(jobOf(taken).id), false, 'the key was held: not inserted');
    assert.equal(out.inserted.has(jobOf(fresh).id), true);
    const row = out.rows.get(c.id);
    assert.equal(row?.status, 'processing');
    assert.equal(row?.lease_id, lease);
    assert.equal(out.rows.has(jobOf(plain).id), false, 'a job not claimed comes back as nothing');
    assert.equal(out.rows.has(jobOf(done).id), false);
    const rows = await store.query<{ id: string; status: string }>(`SELECT id, status FROM jobs WHERE queue_name = 'split-inserts'`);
    assert.deepEqual(rows.map((r) => r.id).sort(), [holder, done, fresh, plain, claimed].map((r) => jobOf(r).id).sort());
    assert.equal(rows.find((r) => r.id === jobOf(done).id)?.status, 'completed');
  });
});

describe("a group commit's rows", () => {
  // Rows travel without the values a new job usually has and without the group's most common organization and queue
  // (commitBatch's insertJobs): a row that differs from them in every such field, in a group where it is the
  // minority, must come back as it was written, and so must an update that sets those fields away and back.
  test('a job unlike the others of its group, and unlike the usual job, is stored as it was', async () => {
    const other = randomUUID();
    const now = new Date().toISOString();
    await store.query(`INSERT INTO organizations (id, name, slug, created_at, updated_at) VALUES ($1, 'rows', $2, $3, $3)`, [other, `rows-${other.slice(0, 8)}`, now]);
    const jobOf = (r: JournalRecord) => (r as Extract<JournalRecord, { kind: 'insert' }>).job;
    const usual = [insert('rows-usual'), insert('rows-usual'), insert('rows-usual')];
    const t = Date.now();
    const odd: JournalRecord = {
      kind: 'insert',
      conflictKey: false,
      job: {
        ...jobOf(insert('rows-odd')),
        organization_id: other,
        status: 'scheduled',
        priority: -7,
        retry_count: 2,
        max_retries: 9,
        errors: [{ attempt: 1, error: 'boom', at: new Date(t).toISOString() }],
        tags: { team: 'a' },
        timeout_seconds: 42,
        scheduled_at: t + 60_000,
        updated_at: t + 5,
        dependencies_met: false,
        last_error: 'boom',
      },
    };
    const elsewhere = { ...jobOf(insert('rows-usual')), queue_name: 'rows-elsewhere' };
    await commitBatch(store, [...usual, odd, { kind: 'insert', conflictKey: false, job: elsewhere }]);
    const read = async (id: string) =>
      (await store.query<Record<string, unknown>>(
        `SELECT organization_id, queue_name, status, priority, retry_count, max_retries, errors, tags, timeout_seconds,
           dependencies_met, last_error, (extract(epoch FROM updated_at) * 1000)::float8 AS updated_ms,
           (extract(epoch FROM created_at) * 1000)::float8 AS created_ms FROM jobs WHERE id = $1`,
        [id],
      ))[0]!;
    const o = jobOf(odd);
    const { updated_ms, created_ms: _, ...oddRow } = await read(o.id);
    assert.deepEqual(oddRow, {
      organization_id: other, queue_name: 'rows-odd', status: 'scheduled', priority: -7, retry_count: 2, max_retries: 9,
      errors: o.errors, tags: { team: 'a' }, timeout_seconds: 42, dependencies_met: false, last_error: 'boom',
    });
    assert.equal(Math.round(updated_ms as number), o.updated_at);
    const u = await read(jobOf(usual[0]!).id);
    assert.deepEqual(
      { organization_id: u.organization_id, queue_name: u.queue_name, status: u.status, priority: u.priority, retry_count: u.retry_count, max_retries: u.max_retries, errors: u.errors, tags: u.tags, timeout_seconds: u.timeout_seconds, dependencies_met: u.dependencies_met },
      { organization_id: org, queue_name: 'rows-usual', status: 'pending', priority: 0, retry_count: 0, max_retries: 3, errors: [], tags: {}, timeout_seconds: 300, dependencies_met: true },
    );
    assert.equal(Math.round(u.updated_ms as number), Math.round(u.created_ms as number));
    assert.equal((await read(elsewhere.id)).queue_name, 'rows-elsewhere');

    // Updates: away from the usual values, then back to them.
    const away: JournalRecord = { kind: 'update', id: jobOf(usual[1]!).id, state: { ...jobOf(usual[1]!), priority: 5, retry_count: 1, dependencies_met: false } };
    await commitBatch(store, [away]);
    let r = await read(jobOf(usual[1]!).id);
    assert.deepEqual([r.priority, r.retry_count, r.dependencies_met], [5, 1, false]);
    await commitBatch(store, [{ kind: 'update', id: jobOf(usual[1]!).id, state: { ...jobOf(usual[1]!) } }]);
    r = await read(jobOf(usual[1]!).id);
    assert.deepEqual([r.priority, r.retry_count, r.dependencies_met], [0, 0, true]);
  });
});

describe('shard leases', () => {
  test('take free shards under a new epoch, renew them, hand them over; a lease that ran out is taken by another', async () => {
    const X = randomUUID();
    const Y = randomUUID();
    await registerNode(store, X, 'x:1');
    await registerNode(store, Y, 'y:1');
    // A range of its own, as if these were the only shards: released rows are free to take.
    await store.query(`INSERT INTO shards (shard) SELECT s FROM generate_series(200000, 200003) s ON CONFLICT DO NOTHING`);
    await store.query(`UPDATE shards SET owner = NULL, lease_until = NULL WHERE shard BETWEEN 200000 AND 200003`);
    const free = async () => (await store.query<{ shard: number }>(`SELECT shard FROM shards WHERE shard BETWEEN 200000 AND 200003 AND owner IS NULL`)).length;

    // Only these four are free: the node under test holds its own shards of this database.
    const taken = (await acquireShards(store, X, 60_000, 'shards', 100)).filter((l) => l.shard >= 200000);
    assert.equal(taken.length, 4);
    assert.equal(await free(), 0);
    assert.equal((await acquireShards(store, Y, 60_000, 'shards', 100)).filter((l) => l.shard >= 200000).length, 0, 'held shards are not taken');

    const renewed = (await renewShards(store, X, 60_000, taken)).filter((l) => l.shard >= 200000);
    assert.deepEqual(renewed.map((l) => l.epoch).sort(), taken.map((l) => l.epoch).sort());

    await releaseShards(store, X, taken.slice(0, 2));
    assert.equal(await free(), 2);
    const got = (await acquireShards(store, Y, 60_000, 'shards', 100)).filter((l) => l.shard >= 200000);
    assert.equal(got.length, 2);
    for (const l of got) assert.equal(BigInt(l.epoch), BigInt(taken.find((t) => t.shard === l.shard)!.epoch) + 1n);

    // X stops renewing: its leases run out and Y takes them under new epochs; X's renewal no longer returns them.
    await store.query(`UPDATE shards SET lease_until = now() - interval '1 second' WHERE owner = $1`, [X]);
    const later = (await acquireShards(store, Y, 60_000, 'shards', 100)).filter((l) => l.shard >= 200000);
    assert.equal(later.length, 2);
    assert.equal((await renewShards(store, X, 60_000, taken)).filter((l) => l.shard >= 200000).length, 0);
    const view = await readCluster(store, 60_000);
    assert.ok(view.nodes.some((nd) => nd.id === X && nd.address === 'x:1'));
    assert.ok(view.shards.filter((s) => s.shard >= 200000).every((s) => s.owner === Y));
  });

  test('a lease that ran out while its owner commits is left for the next round, not waited for, whichever way the owner fences', { skip: STORE !== 'pg' && 'one connection: PGlite runs statements one at a time' }, async () => {
    const old = randomUUID();
    const next = randomUUID();
    await registerNode(store, old, null);
    await registerNode(store, next, null);
    await store.query(`INSERT INTO shards (shard) VALUES (200010) ON CONFLICT DO NOTHING`);
    const expire = () => store.query(`UPDATE shards SET owner = $1, lease_until = now() - interval '1 second' WHERE shard = 200010`, [old]);
    // Bounded: an acquisition that waited for the commit would hang the test.
    const takes = async () => {
      const leases = acquireShards(store, next, 60_000, 'shards', 100000);
      const waited = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the acquisition waited for the commit in flight')), 5_000).unref());
      return (await Promise.race([leases, waited])).some((l) => l.shard === 200010);
    };
    const inFlight = new pg.Client({ connectionString: n.env.DATABASE_URL });
    await inFlight.connect();
    try {
      // A commit of this version in flight: its node's fence lock, shared (sluice_fence).
      await expire();
      await inFlight.query('BEGIN');
      await inFlight.query(`SELECT sluice_fence($1, '{200010}', (SELECT array[epoch] FROM shards WHERE shard = 200010))`, [old]);
      assert.equal(await takes(), false, 'skipped while the commit is in flight');
      await inFlight.query('COMMIT');
      assert.equal(await takes(), true, 'taken once it ended');

      // A commit of a node from before migration 0025, during a rolling update: the shard row FOR KEY SHARE.
      await expire();
      await inFlight.query('BEGIN');
      await inFlight.query(`SELECT shard FROM shards WHERE shard = 200010 FOR KEY SHARE`);
      assert.equal(await takes(), false, 'skipped while the old-style commit is in flight');
      await inFlight.query('COMMIT');
      assert.equal(await takes(), true, 'taken once it ended');
    } finally {
      await inFlight.end();
    }
  });

  test('a node started with the defaults holds each shard for CLUSTER_LEASE_MS (10 s) from its last renewal, no longer', async () => {
    const config = loadConfig(n.env);
    assert.equal(config.clusterLeaseMs, 10_000, 'the node under test runs with the default');
    const [row] = await store.query<{ n: number; soonest: number; latest: number }>(
      `SELECT count(*)::int AS n,
              (extract(epoch FROM min(lease_until) - now()) * 1000)::float8 AS soonest,
              (extract(epoch FROM max(lease_until) - now()) * 1000)::float8 AS latest
         FROM shards WHERE owner = $1 AND shard BETWEEN 0 AND $2`,
      [n.node.nodeId, config.shardCount - 1],
    );
    assert.equal(row!.n, config.shardCount);
    // Renewed every CLUSTER_LEASE_MS / 4: a lease ends at most 10 s from now (what a dead node keeps them for),
    // and not sooner than one round less (with a second of slack for a slow machine).
    assert.ok(row!.latest <= config.clusterLeaseMs + 100, `a lease runs ${row!.latest} ms more`);
    assert.ok(row!.soonest >= config.clusterLeaseMs * 0.75 - 1_000, `a lease runs only ${row!.soonest} ms more`);
  });

  test('the shard count is fixed by the first node', async () => {
    const count = await ensureShards(store, 64);
    assert.notEqual(count, 64, 'a second count does not change the first');
  });
});
