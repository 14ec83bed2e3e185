// An organization's quota actor serves before its jobs are counted: counting a backlog of a million jobs takes
// seconds, and every request of the organization (its request rate) would wait for it. An ActorHost driven directly
// (no thread) on a real store whose job count is held back: the request rate and the resource quotas are answered
// at once, an admission waits for the count and is then exact, a finished-job tell that came meanwhile is dropped
// (the count may already leave the job out), and a count that fails answers 503 and is tried again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { PgStore } from '../src/io/db/pg.js';
import type { Store } from '../src/io/db/store.js';
import type { OrgOp, OrgOps } from '../src/runtime/protocol.js';
import { freshStore, STORE, type StoreLocation } from './helpers.js';
import { directHost, openStore, type DirectHost, type HostError } from './fixtures/direct-host.js';

const ORG = '00000000-0000-4000-8000-000000000003';
/** On a plan without job limits: its admissions need no count. */
const FREE_RUNNING = '00000000-0000-4000-8000-000000000004';
const LIVE = 10;
const LIMIT = 12;

describe('counting an organization’s jobs after its actor serves', () => {
  let location: StoreLocation;
  let direct: DirectHost;
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  // The job count waits for `release`; `failNext` makes the next one fail as a lost connection would.
  let release: () => void = () => {};
  let gate: Promise<void> = Promise.resolve();
  let failNext = false;
  let counts = 0;

  const hold = () => {
    gate = new Promise((resolve) => (release = resolve));
  };
  const ask = <K extends OrgOp>(op: K, args: OrgOps[K]['args'], org = ORG) => direct.askOrg(org, op, args);
  const tell = <K extends OrgOp>(op: K, args: OrgOps[K]['args']) => direct.tellOrg(ORG, op, args);
  const settled = async <T>(p: Promise<T>): Promise<boolean> => {
    let done = false;
    void p.then(() => (done = true), () => (done = true));
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    return done;
  };
  const code = (err: unknown) => (err as HostError).code;

  before(async () => {
    location = await freshStore();
    const real = await openStore(location, 4);
    await real.query(
      `INSERT INTO organizations (id, name, slug, plan, limit_overrides, created_at, updated_at)
       VALUES ($1, 'Counted', 'counted', 'enterprise', $2, now(), now()), ($3, 'Unlimited', 'unlimited', 'enterprise', '{}', now(), now())`,
      [ORG, JSON.stringify({ active_jobs: LIMIT }), FREE_RUNNING],
    );
    for (const [org, variant] of [[ORG, '8000'], [FREE_RUNNING, '9000']]) {
      await real.query(
        `INSERT INTO jobs (id, organization_id, queue_name, status, payload, max_retries, timeout_seconds, created_at, updated_at)
         SELECT ('00000000-0000-7000-${variant}-' || lpad(to_hex(i), 12, '0'))::uuid, $1, 'q', 'pending', '{}', 3, 60, now(), now()
           FROM generate_series(1, $2::int) AS i`,
        [org, LIVE],
      );
    }
    const store = {
      query: async (sql: string, params?: unknown[], name?: string) => {
        if (sql.includes('AS active_jobs')) {
          counts++;
          await gate;
          if (failNext) {
            failNext = false;
            throw new Error('connection terminated');
          }
        }
        return real.query(sql, params, name);
      },
      close: () => real.close(),
    } as Store;
    direct = await directHost(location, store, clock);
  });
  after(async () => {
    release();
    await direct.stop();
    await location.dispose();
  });

  test('a count that fails answers 503 to what waited; the actor is counted again at its next message', async () => {
    hold();
    failNext = true;
    const admitted = ask('admit', { n: 1, payloadBytes: [2], credit: 0 });
    assert.equal(await settled(admitted), false, 'an admission waits for the count');
    release();
    await assert.rejects(admitted, (err) => code(err) === 'UNAVAILABLE', 'answered 503');
  });

  test('the request rate and resource quotas are answered before the count; admissions wait for it, then are exact', async () => {
    hold();
    const before = counts;
    const permits = await ask('permits', { want: 1, holdMs: 0 });
    assert.equal(permits.granted, 1, 'the request rate is answered while the jobs are still being counted');
    await ask('reserve', { resource: 'queues' });
    assert.equal(counts, before + 1, 'counted again, and the count has started');

    const admitted = ask('admit', { n: 1, payloadBytes: [2], credit: 0 });
    const usage = ask('usage', {});
    assert.equal(await settled(admitted), false, 'an admission waits for the count');
    // A job that finished while the count ran may be left out of it already: its tell is dropped.
    tell('jobsFinished', { n: 5 });
    release();

    await admitted;
    assert.equal((await usage).active_jobs, LIVE + 1, 'counted, then the waiting admission');
    await ask('admit', { n: 1, payloadBytes: [2], credit: 0 });
    await assert.rejects(ask('admit', { n: 1, payloadBytes: [2], credit: 0 }), (err) => code(err) === 'QUOTA_EXCEEDED', 'the limit holds at exactly its value');
    assert.equal((await ask('usage', {})).counts.queues, 1, 'the reservation made before the count is kept');
  });

  test('on a plan without job limits, admissions do not wait for the count and are added to it', async () => {
    hold();
    await ask('admit', { n: 3, payloadBytes: [2, 2, 2], credit: 0 }, FREE_RUNNING);
    const usage = ask('usage', {}, FREE_RUNNING);
    assert.equal(await settled(usage), false, 'the usage report waits for the count');
    await ask('releaseJobs', { n: 1, day: '2030-01-01' }, FREE_RUNNING);
    release();
    const u = await usage;
    assert.equal(u.active_jobs, LIVE + 2, 'the count plus what was admitted (and not released) meanwhile');
    assert.equal(u.jobs_today, 2, 'what was admitted meanwhile (the rows were made on another day than the clock’s)');
  });
});

// Counting a million jobs keeps a PostgreSQL core busy for half a second; beside a rebuild's reads it made every other
// queue of the node wait (docs/BENCHMARKS.md). A count that no message waits for waits for the thread's rebuild and
// for the count before it; one that a message waits for does not wait its turn.
describe('the counts nobody waits for run after the rebuild, one at a time', () => {
  let location: StoreLocation;
  let direct: DirectHost;
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  const orgs = {
    limited: '00000000-0000-4000-8000-000000000011',
    reported: '00000000-0000-4000-8000-000000000012',
    first: '00000000-0000-4000-8000-000000000013',
    second: '00000000-0000-4000-8000-000000000014',
  };
  let releaseRebuild: () => void = () => {};
  const rebuild = new Promise<void>((resolve) => (releaseRebuild = resolve));
  let releaseCounts: () => void = () => {};
  let countGate = new Promise<void>((resolve) => (releaseCounts = resolve));
  const counted: string[] = [];
  let inflight = 0;
  let most = 0;
  const settled = async <T>(p: Promise<T>): Promise<boolean> => {
    let done = false;
    void p.then(() => (done = true), () => (done = true));
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    return done;
  };
  /** The rebuild's reads are real statements: waited for in time, not in turns. */
  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  };

  before(async () => {
    location = await freshStore();
    const real = await openStore(location, 4);
    const names = Object.keys(orgs);
    await real.query(
      `INSERT INTO organizations (id, name, slug, plan, limit_overrides, created_at, updated_at)
       SELECT id, name, name, 'enterprise', CASE WHEN name = 'limited' THEN '{"active_jobs": 100}'::jsonb ELSE '{}' END, now(), now()
         FROM unnest($1::uuid[], $2::text[]) AS o(id, name)`,
      [names.map((n) => orgs[n as keyof typeof orgs]), names],
    );
    // A queue with live jobs: the host rebuilds it at boot, and the rebuild is held at its first read.
    await real.query(`INSERT INTO queues (organization_id, name, created_at, updated_at) VALUES ($1, 'held', now(), now())`, [orgs.first]);
    await real.query(
      `INSERT INTO jobs (id, organization_id, queue_name, status, payload, max_retries, timeout_seconds, created_at, updated_at)
       VALUES ('00000000-0000-7000-8000-000000000001', $1, 'held', 'pending', '{}', 3, 60, now(), now())`,
      [orgs.first],
    );
    const store = {
      query: async (sql: string, params?: unknown[], name?: string) => {
        if (sql.includes('FROM queues WHERE organization_id = $1 AND name = $2')) await rebuild;
        if (!sql.includes('AS active_jobs')) return real.query(sql, params, name);
        counted.push(params![0] as string);
        most = Math.max(most, ++inflight);
        try {
          await countGate;
          return await real.query(sql, params, name);
        } finally {
          inflight--;
        }
      },
      close: () => real.close(),
    } as Store;
    direct = await directHost(location, store, clock);
  });
  after(async () => {
    releaseRebuild();
    releaseCounts();
    await direct.stop();
    await location.dispose();
  });

  test('during the rebuild, only the counts a message waits for run; then the others, one at a time', async () => {
    await direct.askOrg(orgs.first, 'permits', { want: 1, holdMs: 0 });
    await direct.askOrg(orgs.second, 'permits', { want: 1, holdMs: 0 });
    const limited = direct.askOrg(orgs.limited, 'admit', { n: 1, payloadBytes: [2], credit: 0 });
    const usage = direct.askOrg(orgs.reported, 'usage', {});
    await until(() => counted.length >= 2);
    assert.equal(await settled(usage), false, 'the usage report waits for its count');
    assert.deepEqual(counted.sort(), [orgs.limited, orgs.reported].sort(), 'the waited-for counts started during the rebuild; the others did not');
    releaseCounts();
    await limited;
    assert.equal((await usage).active_jobs, 0);

    countGate = new Promise<void>((resolve) => (releaseCounts = resolve));
    most = 0;
    releaseRebuild();
    await until(() => counted.length >= 3);
    assert.deepEqual(counted.slice(2), [orgs.first], 'after the rebuild, the first deferred count, alone');
    releaseCounts();
    await until(() => counted.length >= 4);
    assert.deepEqual(counted.slice(2), [orgs.first, orgs.second], 'then the next');
    assert.equal(most, 1, 'never two at once');
    assert.equal((await direct.askOrg(orgs.first, 'usage', {})).active_jobs, 1, 'counted');
  });
});

// A rebuilt queue whose backlog is larger than its window counts its ready jobs to make its bookkeeping exact. That
// count is asked once the window is read (the first claim waits for the read, which then runs alone) and before
// the queue's first message runs (the count's snapshot must come before its writes); the counts that can wait
// their turn wait for it, so that two million-row counts never run at once (docs/BENCHMARKS.md).
describe('a rebuilt queue counts its ready jobs after its window is read; the deferred counts wait for it', () => {
  const OWNER = '00000000-0000-4000-8000-000000000021';
  /** An organization loaded meanwhile, on a plan without job limits: its count waits its turn. */
  const OTHER = '00000000-0000-4000-8000-000000000022';
  const BACKLOG = 30;
  let location: StoreLocation;
  let direct: DirectHost;
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  const events: string[] = [];
  let releaseReady: () => void = () => {};
  const readyGate = new Promise<void>((resolve) => (releaseReady = resolve));
  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  };

  before(async () => {
    location = await freshStore();
    const real = await openStore(location, 4);
    await real.query(
      `INSERT INTO organizations (id, name, slug, plan, created_at, updated_at)
       VALUES ($1, 'owner', 'owner', 'enterprise', now(), now()), ($2, 'other', 'other', 'enterprise', now(), now())`,
      [OWNER, OTHER],
    );
    await real.query(`INSERT INTO queues (organization_id, name, created_at, updated_at) VALUES ($1, 'big', now(), now())`, [OWNER]);
    await real.query(
      `INSERT INTO jobs (id, organization_id, queue_name, status, payload, max_retries, timeout_seconds, created_at, updated_at)
       SELECT ('00000000-0000-7000-8000-' || lpad(i::text, 12, '0'))::uuid, $1, 'big', 'pending', '{}', 3, 60, now(), now()
         FROM generate_series(1, $2) i`,
      [OWNER, BACKLOG],
    );
    const store = {
      query: async (sql: string, params?: unknown[], name?: string) => {
        if (name === 'ready_jobs_unkeyed' || name === 'ready_jobs') {
          const rows = await real.query(sql, params, name);
          events.push('window read');
          return rows;
        }
        if (sql.includes('count(*)') && sql.includes('concurrency_key IS NULL')) {
          events.push('ready count');
          await readyGate;
          const rows = await real.query(sql, params, name);
          events.push('ready counted');
          return rows;
        }
        if (sql.includes('AS active_jobs')) events.push(`org count ${params![0] === OTHER ? 'other' : params![0]}`);
        return real.query(sql, params, name);
      },
      close: () => real.close(),
    } as Store;
    direct = await directHost(location, store, clock, { QUEUE_WINDOW: '10' });
  });
  after(async () => {
    releaseReady();
    await direct.stop();
    await location.dispose();
  });

  test('the window is read, then the count asked; a claim is answered meanwhile, and the organization counts wait for it', async () => {
    await until(() => events.includes('ready count'));
    assert.deepEqual(events.slice(0, 2), ['window read', 'ready count'], 'asked once the window is read');
    // The queue serves while its count is held; so does another organization, whose count can wait its turn.
    const claimed = await direct.ask(OWNER, 'big', 'claim', { worker_id: 'w', limit: 1, lease_duration_secs: null, wait_ms: 0 });
    assert.equal(claimed.jobs.length, 1);
    await direct.askOrg(OTHER, 'permits', { want: 1, holdMs: 0 });
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(!events.some((e) => e.startsWith('org count')), `no deferred count while the ready count runs: ${events.join(', ')}`);
    releaseReady();
    await until(() => events.includes('org count other'));
    assert.deepEqual(events.slice(2), ['ready counted', 'org count other'], 'then the deferred count');
  });
});

test('the counts nobody waits for run without parallel workers: one PostgreSQL core each', { skip: STORE !== 'pg' && 'PgStore: the background pool on PostgreSQL' }, async () => {
  const location = await freshStore();
  const background = PgStore.forBackground(location.env.DATABASE_URL!, 2);
  try {
    const [row] = await background.query<{ v: string }>(`SELECT current_setting('max_parallel_workers_per_gather') AS v`);
    assert.equal(row!.v, '0');
  } finally {
    await background.close();
    await location.dispose();
  }
});
