// An ActorHost driven directly, without a thread: messages in, replies out, on a real store and a ManualClock.
// Covers the host's own rules: replies after commit, tells, and that the work a reply does once its commit
// lands runs as its actor (its timer armed, its writes its own).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { EnqueueInput } from '../src/actors/queue/queue-actor.js';
import { ManualClock, systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import type { Store } from '../src/io/db/store.js';
import { ActorHost } from '../src/runtime/actor-host.js';
import type { OrgOp, OrgOps, QueueOp, QueueOps, ThreadIn, ThreadOut } from '../src/runtime/protocol.js';
import { freshStore, type StoreLocation } from './helpers.js';
import { directHost, openStore, type DirectHost } from './fixtures/direct-host.js';
import { enqueueInput } from './fixtures/enqueue-input.js';

const ORG = '00000000-0000-4000-8000-000000000001';

const input = (extra: Partial<EnqueueInput> = {}): EnqueueInput => enqueueInput({ payload: { n: 1 }, ...extra });

describe('ActorHost without a thread', () => {
  let location: StoreLocation;
  let store: Store;
  let host: ActorHost;
  /** Statements the host sent to the store. */
  let hostQueries = 0;
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  let nextId = 1;

  const post = (batch: ThreadOut[]) => {
    for (const m of batch) {
      const w = waiting.get(m.id);
      if (!w) continue;
      waiting.delete(m.id);
      if (!m.ok) w.reject(Object.assign(new Error(m.error.message), { code: m.error.code }));
      else if ('value' in m) w.resolve(m.value);
    }
  };
  const send = <R>(make: (id: number) => ThreadIn): Promise<R> => {
    const id = nextId++;
    return new Promise<R>((resolve, reject) => {
      waiting.set(id, { resolve: (v) => resolve(v as R), reject });
      host.receive([make(id)]);
    });
  };
  const ask = <K extends QueueOp>(queue: string, op: K, args: QueueOps[K]['args']) =>
    send<QueueOps[K]['reply']>((id) => ({ t: 'queue', id, org: ORG, queue, op, args }));
  const askOrg = <K extends OrgOp>(op: K, args: OrgOps[K]['args']) => send<OrgOps[K]['reply']>((id) => ({ t: 'org', id, org: ORG, op, args }));
  /** Several messages in one batch, as a thread receives them in one turn: each answered on its own. */
  const sendAll = (makes: Array<(id: number) => ThreadIn>): Array<Promise<unknown>> => {
    const batch: ThreadIn[] = [];
    const answers = makes.map((make) => {
      const id = nextId++;
      batch.push(make(id));
      return new Promise<unknown>((resolve, reject) => waiting.set(id, { resolve, reject }));
    });
    host.receive(batch);
    return answers;
  };
  const claimMsg = (queue: string, worker: string, lease: number | null = null) => (id: number): ThreadIn => ({
    t: 'queue',
    id,
    org: ORG,
    queue,
    op: 'claim',
    args: { worker_id: worker, limit: 1, lease_duration_secs: lease, wait_ms: 0 },
  });
  const tick = () => send<null>((id) => ({ t: 'tick', id }));
  const status = async (id: string) => (await store.query<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [id]))[0]?.status;

  before(async () => {
    location = await freshStore();
    store = await openStore(location);
    await store.query(
      `INSERT INTO organizations (id, name, slug, plan, limit_overrides, created_at, updated_at) VALUES ($1, 'Host', 'host', 'pro', '{}', now(), now())`,
      [ORG],
    );
    const config = loadConfig({ DATA_DIR: location.env.DATA_DIR!, ACTOR_THREADS: '1', LOG_LEVEL: 'warn' });
    const s = store;
    const counting: Store = {
      query: (...args: Parameters<Store['query']>) => {
        hostQueries++;
        return s.query(...args);
      },
      exec: (sql) => s.exec(sql),
      close: () => s.close(),
    };
    host = new ActorHost({ index: 0, threads: 1, nodeId: null, config, store: counting, clock, post });
    await host.boot();
  });
  after(async () => {
    await send((id) => ({ t: 'stop', id }));
    await location.dispose();
  });

  test('an enqueue is answered once committed, and the row is there', async () => {
    const r = await ask('plain', 'enqueue', input());
    assert.ok(r.created);
    assert.equal(await status(r.job.id), 'pending');
  });

  test('a keyed delayed job on an idle queue falls due on its own: its timer is armed once the commit says it won its key', async () => {
    const r = await ask('idle1', 'enqueue', input({ idempotency_key: 'k1', scheduled_at: clock.now() + 3_000 }));
    assert.ok(r.created);
    assert.equal(await status(r.job.id), 'scheduled');
    await clock.advance(6_000);
    await tick();
    assert.equal(await status(r.job.id), 'pending');
  });

  test('a revived job feeds a parked claim, and that claim is committed under the queue it belongs to', async () => {
    const r = await ask('revive1', 'enqueue', input({ max_retries: 0 }));
    assert.ok(r.created);
    const [c] = (await ask('revive1', 'claim', { worker_id: 'w', limit: 1, lease_duration_secs: null, wait_ms: 0 })).jobs;
    await ask('revive1', 'fail', { id: r.job.id, worker_id: 'w', lease_id: c!.lease_id as string, error: 'boom', retryable: false });
    assert.equal(await status(r.job.id), 'deadletter');
    const parked = ask('revive1', 'claim', { worker_id: 'w2', limit: 1, lease_duration_secs: null, wait_ms: 5_000 });
    const revived = await ask('revive1', 'revive', {
      jobs: [{ id: r.job.id, priority: 0, max_retries: 0, timeout_seconds: 300, last_error: 'boom', idempotency_key: null, callback: false }],
      from: ['deadletter'],
    });
    assert.equal(revived[0]!.revived, true);
    const { jobs } = await parked;
    assert.equal(jobs[0]?.id, r.job.id);
    assert.equal(await status(r.job.id), 'processing');
  });

  test('the quota actor answers without a commit, and a tell is answered by nobody', async () => {
    const before = await askOrg('usage', {});
    await askOrg('reserve', { resource: 'queues' });
    host.receive([{ t: 'org', id: 0, org: ORG, op: 'counted', args: { resource: 'queues', delta: -1 } }]);
    const after = await askOrg('usage', {});
    assert.equal(after.counts.queues, before.counts.queues);
  });

  test('metrics: counted from what each commit published; a cold queue is answered without being loaded', async () => {
    const r = await ask('counted1', 'enqueue', input());
    assert.ok(r.created);
    await clock.advance(1_500);
    const [c] = (await ask('counted1', 'claim', { worker_id: 'w', limit: 1, lease_duration_secs: null, wait_ms: 0 })).jobs;
    await clock.advance(500);
    await ask('counted1', 'complete', { id: r.job.id, worker_id: 'w', lease_id: c!.lease_id as string, result: null });
    const m = await ask('counted1', 'metrics', {});
    assert.ok(m);
    assert.deepEqual(m.events, { 'job.created': 1, 'job.started': 1, 'job.completed': 1, 'job.failed': 0, 'job.cancelled': 0 });
    assert.deepEqual([m.wait!.count, m.wait!.sum], [1, 1.5]);
    assert.deepEqual([m.run.completed!.count, m.run.completed!.sum], [1, 0.5]);
    // A queue with a row and no live job, whose actor was never loaded: nothing counted, and nothing read.
    await store.query(`INSERT INTO queues (organization_id, name, created_at, updated_at) VALUES ($1, 'cold1', now(), now())`, [ORG]);
    const before = hostQueries;
    assert.equal(await ask('cold1', 'metrics', {}), null);
    assert.equal(hostQueries, before);
    // Deleted, its numbers go with it.
    await ask('counted1', 'deleteQueue', {});
    assert.equal(await ask('counted1', 'metrics', {}), null);
  });

  // Replies reach the main thread as they are, with no copy, when the actors run there (inline-thread.ts): whoever
  // receives one may treat it as its own. Each test changes what it received and checks that neither the actor's
  // state nor another reply moved.
  test("a reply is the receiver's own: changing it changes neither the actor nor a later reply", async () => {
    const created = await ask('owned1', 'createQueue', { max_retries: null, lease_duration_secs: null, concurrency_per_key: null, max_concurrency: null, rate_limit: { jobs: 2, per_seconds: 3600 } });
    created.config.rate_limit!.jobs = 1_000;
    for (let i = 0; i < 4; i++) assert.ok((await ask('owned1', 'enqueue', input())).created);
    const [first] = (await ask('owned1', 'claim', { worker_id: 'w', limit: 1, lease_duration_secs: null, wait_ms: 0 })).jobs;
    const pending = (await ask('owned1', 'enqueue', input())) as { created: true; job: { id: string } };
    const facts = await ask('owned1', 'explain', { id: pending.job.id });
    assert.ok(facts.live);
    assert.deepEqual(facts.rate_limit, { jobs: 2, per_seconds: 3600 });
    facts.rate_limit!.jobs = 1_000;
    // The actor still hands out 2 an hour: one more, then none.
    const more = await ask('owned1', 'claim', { worker_id: 'w', limit: 10, lease_duration_secs: null, wait_ms: 0 });
    assert.equal(more.jobs.length, 1);
    assert.notEqual(more.jobs[0]!.id, first!.id);
    assert.deepEqual((await ask('owned1', 'configure', {})).config.rate_limit, { jobs: 2, per_seconds: 3600 });

    const usage = await askOrg('usage', {});
    const queues = usage.limits.queues;
    const limits = usage.limits as Record<string, number | null>;
    for (const k of Object.keys(limits)) limits[k] = 0;
    usage.counts.queues = -1;
    // The organization's limits are what they were: a queue may still be reserved, and the usage says the same.
    await askOrg('reserve', { resource: 'queues' });
    await askOrg('counted', { resource: 'queues', delta: -1 });
    const again = await askOrg('usage', {});
    assert.equal(again.limits.queues, queues);
    assert.ok(again.counts.queues >= 0);
  });

  test('a job claimed twice in one group goes to the later claim only: the earlier lease was never written', async () => {
    const r = await ask('shared1', 'enqueue', input({ max_retries: 3 }));
    assert.ok(r.created);
    // In one batch, so in one group: w1's lease (0 s) has run out when w2's claim comes, which takes the job again.
    // The group writes the row once, under w2's lease; w1 must not be handed a job it does not hold.
    const [a, b] = (await Promise.all(sendAll([claimMsg('shared1', 'w1', 0), claimMsg('shared1', 'w2')]))) as Array<QueueOps['claim']['reply']>;
    assert.deepEqual(a!.jobs, []);
    assert.equal(b!.jobs.length, 1);
    const row = b!.jobs[0]!;
    assert.equal(row.id, r.job.id);
    assert.equal(row.assigned_worker_id, 'w2');
    const [stored] = await store.query<{ lease_id: string; assigned_worker_id: string }>(`SELECT lease_id, assigned_worker_id FROM jobs WHERE id = $1`, [r.job.id]);
    assert.equal(stored!.lease_id, row.lease_id);
    assert.equal(stored!.assigned_worker_id, 'w2');
  });

  test('a job row nested too deep to encode fails its own claim and revive, and nothing else', async () => {
    const deep = await ask('deep1', 'enqueue', input({ max_retries: 0 }));
    const fine = await ask('deep2', 'enqueue', input());
    assert.ok(deep.created && fine.created);
    // Stored before the edge refused deep values (it refuses more than BODY_MAX_DEPTH ≤ 1,000 levels): 5,000 levels,
    // more than a structured clone or JSON.stringify can take on Node 20.
    await store.query('UPDATE jobs SET payload = $2::jsonb WHERE id = $1', [deep.job.id, `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`]);
    const [bad, good, enqueued, usage] = await Promise.allSettled(
      sendAll([
        claimMsg('deep1', 'w'),
        claimMsg('deep2', 'w'),
        (id) => ({ t: 'queue', id, org: ORG, queue: 'deep3', op: 'enqueue', args: input() }),
        (id) => ({ t: 'org', id, org: ORG, op: 'usage', args: {} }),
      ]),
    );
    assert.equal(bad!.status, 'rejected');
    const err = (bad as PromiseRejectedResult).reason as Error & { code: string };
    assert.equal(err.code, 'INTERNAL');
    assert.equal(err.message, 'The reply could not be encoded');
    assert.equal(good!.status, 'fulfilled');
    assert.equal(((good as PromiseFulfilledResult<QueueOps['claim']['reply']>).value).jobs[0]?.id, fine.job.id);
    assert.equal(enqueued!.status, 'fulfilled');
    assert.equal(usage!.status, 'fulfilled');
    // The claim did its work (the job is held under a lease, as when the copy to the main thread failed); only its reply failed.
    assert.equal(await status(deep.job.id), 'processing');
    await ask('deep1', 'fail', { id: deep.job.id, worker_id: 'w', lease_id: null, error: 'never received', retryable: false });
    assert.equal(await status(deep.job.id), 'deadletter');
    const revive = ask('deep1', 'revive', {
      jobs: [{ id: deep.job.id, priority: 0, max_retries: 0, timeout_seconds: 300, last_error: null, idempotency_key: null, callback: false }],
      from: ['deadletter'],
    });
    await assert.rejects(revive, (e: Error & { code?: string }) => e.code === 'INTERNAL' && e.message === 'The reply could not be encoded');
    assert.equal(await status(deep.job.id), 'pending');
    // The host serves on, that queue included; and a row as deep as the edge may be set to accept (BODY_MAX_DEPTH at
    // its most, 1,000 levels, all of them the payload's, under the row's own) goes out.
    assert.ok((await ask('deep1', 'enqueue', input())).created);
    const deepest = await ask('deep4', 'enqueue', input());
    assert.ok(deepest.created);
    await store.query('UPDATE jobs SET payload = $2::jsonb WHERE id = $1', [deepest.job.id, `${'{"a":'.repeat(1_000)}1${'}'.repeat(1_000)}`]);
    const [row] = (await ask('deep4', 'claim', { worker_id: 'w', limit: 1, lease_duration_secs: null, wait_ms: 0 })).jobs;
    assert.equal(row?.id, deepest.job.id);
  });

  test('an unknown operation fails its own request with a catalog error', async () => {
    // What a peer built from another version could send: the op map is the contract, anything else is refused.
    const bad = { t: 'queue', id: nextId++, org: ORG, queue: 'plain', op: 'explode', args: {} } as unknown as ThreadIn;
    const answer = new Promise((resolve, reject) => waiting.set((bad as { id: number }).id, { resolve, reject }));
    host.receive([bad]);
    await assert.rejects(answer, (err: Error & { code?: string }) => err.code === 'INTERNAL');
  });
});

// Real time: the host keeps one timer for all its actors' wakes. A tick run by that timer may re-arm it (a job
// falling due arms the next wake); the timer that fireDue then sets must replace that one, not run beside it: each
// due round that re-armed left one timer more, each firing fireDue again at every later wake, and a stopped node's
// leftover timers kept its process alive until the last wake (a lease, minutes).
describe('ActorHost in real time', () => {
  let location: StoreLocation;
  let direct: DirectHost;
  /** The fireDue timers set and neither cleared nor fired yet. */
  const pending = new Set<NodeJS.Timeout>();
  const realSet = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;

  before(async () => {
    location = await freshStore();
    const store = await openStore(location);
    await store.query(
      `INSERT INTO organizations (id, name, slug, plan, limit_overrides, created_at, updated_at) VALUES ($1, 'Host', 'host', 'pro', '{}', now(), now())`,
      [ORG],
    );
    direct = await directHost(location, store, systemClock);
    const set = ((fn: () => void, ms?: number) => {
      if (!String(fn).includes('fireDue')) return realSet(fn, ms);
      const t: NodeJS.Timeout = realSet(() => {
        pending.delete(t);
        fn();
      }, ms);
      pending.add(t);
      return t;
    }) as typeof setTimeout;
    globalThis.setTimeout = set;
    globalThis.clearTimeout = ((t?: NodeJS.Timeout) => {
      if (t) pending.delete(t);
      realClear(t);
    }) as typeof clearTimeout;
  });
  after(async () => {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
    await direct.stop();
    await location.dispose();
  });

  test('due rounds that re-arm leave one timer, not one each', async () => {
    const now = Date.now();
    // A far wake keeps the timer armed after the near ones; five jobs fall due one after another before it.
    await direct.ask(ORG, 'timers', 'enqueue', input({ scheduled_at: now + 3_600_000 }));
    for (let i = 1; i <= 5; i++) await direct.ask(ORG, 'timers', 'enqueue', input({ scheduled_at: now + 100 + i * 40 }));
    await new Promise((r) => realSet(r, 600));
    const claimed = await direct.ask(ORG, 'timers', 'claim', { worker_id: 'w', limit: 10, lease_duration_secs: null, wait_ms: 0 });
    assert.equal(claimed.jobs.length, 5, 'the five fell due');
    assert.equal(pending.size, 1, 'one timer, for the next wake');
  });
});
