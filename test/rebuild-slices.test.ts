// A large queue's rebuild does not hold its actor thread in one piece: an ActorHost driven directly (no thread) on
// a real store, whose statements are logged. The big queue's window is read in slices (readyJobs, FILL_SLICE rows
// each) with a turn of the event loop between them, and another queue's requests, sent one after the other while
// the big one loads, are answered between its slices. Structural, not timed.
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
    // Every statement the host sends, by name: the slices of the big queue's window are `ready_jobs`.
    const store = {
      query: (sql, params, name) => {
        if (name === 'ready_jobs') log.push('slice');
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
    const last = log.lastIndexOf('slice');
    // The window is filled past half its size before the first message runs: several slices of 500.
    assert.ok(log.filter((e) => e === 'slice').length >= 3, `read in slices: ${log.join(' ')}`);
    assert.ok(log.slice(first, last).includes('small'), `the other queue answered between slices: ${log.join(' ')}`);
  });
});
