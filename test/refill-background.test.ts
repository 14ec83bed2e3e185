// A window that runs low is refilled while its queue actor serves on: an ActorHost driven directly (no thread) on a
// real store, whose refill reads are answered late (the statement runs, its rows are handed back only when the test
// says), so the rows are what the store held before everything the actor did meanwhile. Claims go on from the
// held jobs during the read; jobs paged out during it (enqueued behind the backlog) are neither lost nor claimed
// twice; a claim that finds the window empty waits for the rows instead of answering nothing; and every job is
// claimed once, in claim order (priority, then age). Structural: a request counts as held when it is not answered
// within a second, where a commit takes milliseconds.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import type { Store } from '../src/io/db/store.js';
import type { QueueOp, QueueOps } from '../src/runtime/protocol.js';
import { freshStore, type StoreLocation } from './helpers.js';
import { directHost, openStore, type DirectHost } from './fixtures/direct-host.js';
import { enqueueInput } from './fixtures/enqueue-input.js';

const ORG = '00000000-0000-4000-8000-000000000005';
const WINDOW = 20;
// A quarter of a window more than the window: the refill that runs while the test withholds its rows reaches the end of
// the store, so the jobs paged out meanwhile exist only in what the actor recorded.
const BACKLOG = 25;

describe('refilling a window while the queue serves on', () => {
  let location: StoreLocation;
  let direct: DirectHost;
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  // Refill reads run at once, but their rows wait for `release` while `held` is on.
  let held = false;
  let reads = 0;
  let release: () => void = () => {};
  let gate: Promise<void> = Promise.resolve();

  const ask = <K extends QueueOp>(op: K, args: QueueOps[K]['args']) => direct.ask(ORG, 'q', op, args);
  const claim = async (): Promise<{ id: string; priority: number } | undefined> => {
    const r = await ask('claim', { worker_id: 'w', limit: 1, lease_duration_secs: null, wait_ms: 0 });
    return r.jobs[0] as { id: string; priority: number } | undefined;
  };
  const enqueue = async (input: ReturnType<typeof enqueueInput>): Promise<string> => {
    const r = await ask('enqueue', input);
    assert.ok(r.created);
    return r.job.id;
  };
  // Whether a request is answered within a second (a commit takes milliseconds; a request held for the withheld
  // rows is never answered until they come).
  const answers = async <T>(p: Promise<T>): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined;
    const out = await Promise.race([p.then(() => true, () => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 1_000)))]);
    clearTimeout(timer);
    return out;
  };

  before(async () => {
    location = await freshStore();
    const real = await openStore(location, 4);
    await real.query(
      `INSERT INTO organizations (id, name, slug, plan, limit_overrides, created_at, updated_at) VALUES ($1, 'Refill', 'refill', 'enterprise', '{}', now(), now())`,
      [ORG],
    );
    await real.query(`INSERT INTO queues (organization_id, name, created_at, updated_at) VALUES ($1, 'q', now(), now())`, [ORG]);
    // The backlog, ids in creation order (older than anything the host makes).
    await real.query(
      `INSERT INTO jobs (id, organization_id, queue_name, status, payload, max_retries, timeout_seconds, created_at, updated_at)
       SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, $1, 'q', 'pending', '{}', 3, 60, now(), now()
         FROM generate_series(1, $2::int) AS i`,
      [ORG, BACKLOG],
    );
    const store = {
      query: async (sql: string, params?: unknown[], name?: string) => {
        const rows = await real.query(sql, params, name);
        if (name === 'ready_jobs' && held) {
          reads++;
          await gate;
        }
        return rows;
      },
      close: () => real.close(),
    } as Store;
    direct = await directHost(location, store, clock, { QUEUE_WINDOW: String(WINDOW) });
  });
  after(async () => {
    held = false;
    release();
    await direct.stop();
    await location.dispose();
  });

  test('claims go on during the read, late page-outs are merged, an empty window waits, each job is claimed once in order', async () => {
    const claimed: Array<{ id: string; priority: number }> = [];
    // The first claim loads the actor (its window read at once); then claims until a refill is being read.
    const first = await claim();
    assert.ok(first);
    claimed.push(first);
    held = true;
    gate = new Promise((resolve) => (release = resolve));
    while (reads === 0) {
      const j = await claim();
      assert.ok(j, 'a job while the backlog lasts');
      claimed.push(j);
    }
    // The refill's rows are withheld: the actor still serves from what it holds.
    const answered = claim();
    assert.ok(await answers(answered), 'a claim is answered while the refill is read');
    const during = await answered;
    assert.ok(during);
    claimed.push(during);
    // Enqueued now, behind the backlog: paged out (the withheld rows cannot hold them) and recorded.
    const late: string[] = [];
    for (let i = 0; i < 5; i++) {
      late.push(await enqueue(enqueueInput({ payload: { late: i } })));
    }
    // One of higher priority: held at once, claimed first.
    const urgent = await enqueue(enqueueInput({ priority: 5 }));
    const next = await claim();
    assert.equal(next?.id, urgent, 'the higher priority first');
    // Drain what the window holds: the claim after it waits for the rows rather than answering nothing.
    let last: Promise<{ id: string; priority: number } | undefined> | null = null;
    for (;;) {
      const p = claim();
      if (!(await answers(p))) {
        last = p;
        break;
      }
      const j = await p;
      assert.ok(j, 'no empty answer while jobs wait in the store');
      claimed.push(j);
    }
    held = false;
    release();
    const waited = await last;
    assert.ok(waited, 'the waiting claim got the next job once the rows came');
    claimed.push(waited);
    for (let j = await claim(); j; j = await claim()) claimed.push(j);

    const ids = claimed.map((j) => j.id);
    assert.equal(new Set(ids).size, ids.length, 'no job claimed twice');
    const backlog = Array.from({ length: BACKLOG }, (_, i) => `00000000-0000-7000-8000-${(i + 1).toString(16).padStart(12, '0')}`);
    assert.deepEqual(ids, [...backlog, ...late], 'every job once, the backlog in order, then the late ones in order');
  });
});
