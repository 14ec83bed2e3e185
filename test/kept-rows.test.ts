// A new job's row is kept in memory for its claim (ROW_CACHE_MB, RowBudget in queue-actor.ts): the claim is then
// answered from that row and its commit returns none. What the worker receives must be the job exactly as stored,
// whichever way the claim was answered: each claimed job is compared field by field with GET /jobs/:id, on a node
// that keeps rows and on one that keeps none (ROW_CACHE_MB=0), on both stores.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { sleep, startTestNode, type TestNode } from './helpers.js';

let keeping: TestNode;
let none: TestNode;
let frozen: TestNode;
let clock: ManualClock;
before(async () => {
  keeping = await startTestNode();
  none = await startTestNode({ env: { ROW_CACHE_MB: '0' } });
  clock = new ManualClock(Date.UTC(2030, 0, 1));
  frozen = await startTestNode({ clock });
});
after(async () => {
  await keeping.stop();
  await none.stop();
  await frozen.stop();
});

/** Every job of a claim's answer is what GET returns for it right after. */
async function sameAsStored(n: TestNode, jobs: any[]): Promise<void> {
  for (const job of jobs) {
    const stored = await n.api.get(`/api/v1/jobs/${job.id}`);
    assert.equal(stored.status, 200);
    assert.deepEqual(job, stored.body, `job ${job.id}`);
  }
}

const unusual = {
  priority: 5,
  max_retries: 7,
  timeout_seconds: 60,
  tags: { team: 'a', env: 'test' },
  payload: { nested: { list: [1, 'two', null, { three: 3 }] }, text: 'é ✓ "quoted"' },
};

for (const [name, get] of [['a node that keeps rows', () => keeping], ['a node that keeps none', () => none]] as const) {
  describe(name, () => {
    test('a claimed job is the job as stored: enqueued before the claim, and fed to a waiting claim', async () => {
      const n = get();
      const queue = 'kept-before';
      await n.api.enqueue({ queue_name: queue, ...unusual });
      await n.api.enqueue({ queue_name: queue, payload: { plain: true } });
      await n.api.enqueue({ queue_name: queue, payload: { keyed: true }, idempotency_key: `kept-${name}` });
      const jobs = await n.api.claim(queue, { limit: 10, lease_duration_secs: 30 });
      assert.equal(jobs.length, 3);
      assert.deepEqual(jobs[0].payload, unusual.payload);
      await sameAsStored(n, jobs);

      // A claim waiting when the job comes: the insert and the claim go out in one commit.
      const waiting = n.api.post('/api/v1/jobs/claim', { queue_name: 'kept-fed', worker_id: 'w2', wait_ms: 10_000 });
      await sleep(100);
      await n.api.enqueue({ queue_name: 'kept-fed', ...unusual });
      const fed = await waiting;
      assert.equal(fed.status, 200);
      assert.equal(fed.body.jobs.length, 1);
      await sameAsStored(n, fed.body.jobs);
    });
  });
}

test("a job whose idempotency key passed to a newer job is claimed without it", async () => {
  const n = frozen;
  const old = await n.api.enqueue({ queue_name: 'kept-key', payload: { n: 1 }, idempotency_key: 'k1', idempotency_ttl_secs: 60 });
  await clock.advance(61_000);
  const newer = await n.api.enqueue({ queue_name: 'kept-key', payload: { n: 2 }, idempotency_key: 'k1' });
  assert.notEqual(newer.id, old.id);
  const jobs = await n.api.claim('kept-key', { limit: 10 });
  assert.deepEqual(jobs.map((j) => j.id), [old.id, newer.id]);
  assert.equal(jobs[0].idempotency_key, null);
  assert.equal(jobs[1].idempotency_key, 'k1');
  await sameAsStored(n, jobs);
});
