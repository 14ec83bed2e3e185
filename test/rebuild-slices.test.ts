// A large queue's rebuild does not hold its actor thread in one piece: an ActorHost driven directly (no thread) on
// a real store, whose statements are logged. The big queue's first message waits for the first slice of its window
// only (readyJobs, FILL_SLICE rows); the rest is read in slices while it serves, with a turn of the event loop
// between them, and another queue's requests, sent one after the other while the big one loads, are answered between
// its slices. Structural, not timed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { EnqueueInput } from '../src/actors/queue/queue-actor.js';
import { ManualClock } from '../src/clock.js';
import type { Store } from '../src/io/db/store.js';
import type { QueueOp, QueueOps } from '../src/runtime/protocol.js';
import { freshStore, type StoreLocation } from './helpers.js';
import { directHost, openStore, type DirectHost } from './fixtures/direct-host.js';
import { enqueueInput } from './fixtures/enqueue-input.js';

const ORG = '00000000-0000-4000-8000-000000000002';
const BIG = 8_000;

const input = (): EnqueueInput => enqueueInput();

describe('rebuilding a large queue', () => {
  let location: StoreLocation;
  let direct: DirectHost;
  const log: string[] = [];
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  const ask = <K extends QueueOp>(queue: string, op: K, args: QueueOps[K]['args']) => direct.ask(ORG, queue, op, args);

  before(async () => {
    location = await freshStore();
    const real = await openStore(location, 4);
    await real.query(
      `INSERT INTO organizations (id, name, slug, plan, limit_overrides, created_at, updated_at) VALUES ($1, 'Big', 'big', 'enterprise', '{}', now(), now())`,
      [ORG],
    );
    // The backlog, written straight into the store: ids in creation order, as UUIDv7 would be.
    await real.query(
      `INSERT INTO jobs (id, organization_id, queue_name, status, payload, max_retries, timeout_seconds, created_at, updated_at)
       SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, $1, 'big', 'pending', '{}', 3, 60, now(), now()
         FROM generate_series(1, $2::int) AS i`,
      [ORG, BIG],
    );
    // The big queue's window is read by `ready_jobs` statements, one a slice.
    const store = {
      query: (sql, params, name) => {
        if (name === 'ready_jobs' && params?.includes('big')) log.push('slice');
        return real.query(sql, params, name);
      },
      close: () => real.close(),
    } as Store;
    direct = await directHost(location, store, clock, { QUEUE_WINDOW: String(BIG) });
    await ask('small', 'enqueue', input());
  });
  after(async () => {
    await direct.stop();
    await location.dispose();
  });

  test('its window is read in slices, and another queue is answered between them', async () => {
    let loaded = false;
    const big = ask('big', 'claim', { worker_id: 'w', limit: 1, lease_duration_secs: null, wait_ms: 0 }).then((r) => {
      loaded = true;
      log.push('big');
      return r;
    });
    while (!loaded) {
      await ask('small', 'enqueue', input());
      log.push('small');
    }
    const claimed = await big;
    assert.equal(claimed.jobs[0]?.id, '00000000-0000-7000-8000-000000000001', 'the head of the backlog');
    const first = log.indexOf('slice');
    // The claim waits for the first slice only, not for half the window (8 slices of 500 here): the refill that reads
    // the rest starts with it, so a slice or two may be asked before its answer is seen.
    assert.ok(log.slice(0, log.indexOf('big')).filter((e) => e === 'slice').length < BIG / 500 / 2, `the first claim waits for one slice: ${log.join(' ')}`);
    // The other queue is asked on until the big window is full (a few hundred requests at most: one a slice).
    const count = () => log.filter((e) => e === 'slice').length;
    for (let i = 0; i < 1_000 && count() < BIG / 500 - 1; i++) {
      await ask('small', 'enqueue', input());
      log.push('small');
    }
    assert.ok(count() >= BIG / 500 - 1, `the window filled in slices after: ${log.join(' ')}`);
    assert.ok(log.slice(first, log.lastIndexOf('slice')).includes('small'), `the other queue answered between slices: ${log.join(' ')}`);
  });
});
