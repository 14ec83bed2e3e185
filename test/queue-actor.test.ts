// QueueActor alone: a pure state machine driven with a hand-moved clock and a journal that records what it
// is told. No store is involved because the actor has none; the stores are exercised by the HTTP suites.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JobIds } from '../src/actors/ids.js';
import { backoffMs, QueueActor, type EnqueueInput } from '../src/actors/queue/queue-actor.js';
import type { CommitOutput, Effects, JournalRecord } from '../src/actors/records.js';

function harness() {
  const records: JournalRecord[] = [];
  const ids = new JobIds();
  let now = Date.UTC(2030, 0, 1);
  const fx: Effects = {
    get now() {
      return now;
    },
    write: (r) => records.push(r),
    emit: () => {},
    newJobId: () => ids.next(now),
  };
  const actor = new QueueActor('org', 'q', { retryUnitMs: 1000, defaultMaxRetries: 3, defaultTimeoutSeconds: 60 }, null);
  /** What a commit of everything so far would hand back: every returning update's row, every insert. */
  const commit = (): CommitOutput => {
    const out: CommitOutput = { rows: new Map(), inserted: new Set() };
    for (const r of records) {
      if (r.kind === 'insert') out.inserted.add(r.job.id);
      if (r.kind === 'update' && r.returning) out.rows.set(r.id, { id: r.id, lease_id: r.state.lease_id });
    }
    return out;
  };
  const input = (over: Partial<EnqueueInput> = {}): EnqueueInput => ({
    payload: {},
    priority: 0,
    max_retries: null,
    timeout_seconds: null,
    scheduled_at: null,
    idempotency_key: null,
    tags: {},
    completion_webhook: null,
    completion_webhook_secret: null,
    ...over,
  });
  return { actor, fx, records, commit, input, advance: (ms: number) => (now += ms), now: () => now };
}

describe('QueueActor', () => {
  test('ids are strictly increasing within one millisecond', () => {
    const g = new JobIds();
    const a = Array.from({ length: 5000 }, () => g.next(1_000));
    assert.deepEqual([...a].sort(), a);
    assert.equal(new Set(a).size, a.length);
  });

  test('backoff is min(2^n, 60) units', () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6, 7, 20].map((n) => backoffMs(n, 1)),
      [1, 2, 4, 8, 16, 32, 60, 60, 60],
    );
  });

  test('the first enqueue creates the queue row, once', () => {
    const h = harness();
    h.actor.enqueue(h.input(), h.fx);
    h.actor.enqueue(h.input(), h.fx);
    assert.equal(h.records.filter((r) => r.kind === 'queue').length, 1);
  });

  test('a keyed job is not claimable until its insert is committed', () => {
    const h = harness();
    const reply = h.actor.enqueue(h.input({ idempotency_key: 'k' }), h.fx);
    assert.equal(h.actor.claim({ worker_id: 'w', limit: 10, lease_duration_secs: null }, h.fx), null);
    const dup = h.actor.enqueue(h.input({ idempotency_key: 'k' }), h.fx)(h.commit());
    assert.deepEqual(dup, { created: false, idempotency_key: 'k' });
    const r = reply(h.commit());
    assert.equal(r.created, true);
    const c = h.actor.claim({ worker_id: 'w', limit: 10, lease_duration_secs: null }, h.fx);
    assert.ok(c);
    assert.equal(c(h.commit()).jobs.length, 1);
  });

  test('a keyed insert that lost to another thread is forgotten', () => {
    const h = harness();
    const reply = h.actor.enqueue(h.input({ idempotency_key: 'k' }), h.fx);
    const r = reply({ rows: new Map(), inserted: new Set() });
    assert.deepEqual(r, { created: false, idempotency_key: 'k' });
    assert.equal(h.actor.jobs.size, 0);
  });

  test('a waiter gets the next job in the same batch as its insert', () => {
    const h = harness();
    const answered: Array<(o: CommitOutput) => { jobs: unknown[] }> = [];
    assert.equal(h.actor.claim({ worker_id: 'w', limit: 1, lease_duration_secs: null }, h.fx), null);
    h.actor.addWaiter({ input: { worker_id: 'w', limit: 1, lease_duration_secs: null }, respond: (r) => answered.push(r) });
    h.actor.enqueue(h.input(), h.fx);
    assert.equal(answered.length, 1);
    assert.equal(answered[0]!(h.commit()).jobs.length, 1);
    assert.equal(h.actor.waiting, 0);
  });

  test('lease expiry requeues, then dead-letters when retries are spent', () => {
    const h = harness();
    h.actor.enqueue(h.input({ max_retries: 1 }), h.fx);
    const take = () => h.actor.claim({ worker_id: 'w', limit: 1, lease_duration_secs: 10 }, h.fx)!(h.commit()).jobs;
    assert.equal(take().length, 1);
    assert.equal(h.actor.nextWake(), h.now() + 10_000);
    h.advance(10_000);
    h.actor.tick(h.fx);
    const requeue = h.records.at(-1)!;
    assert.ok(requeue.kind === 'update' && requeue.state.status === 'pending' && requeue.state.retry_count === 1);
    assert.equal(take().length, 1);
    h.advance(10_000);
    h.actor.tick(h.fx);
    const dead = h.records.at(-1)!;
    assert.ok(dead.kind === 'update' && dead.state.status === 'deadletter');
    assert.equal(h.actor.jobs.size, 0);
  });

  test('a stale lease is refused even before the expiry timer fires', () => {
    const h = harness();
    h.actor.enqueue(h.input(), h.fx);
    const [job] = h.actor.claim({ worker_id: 'w', limit: 1, lease_duration_secs: 10 }, h.fx)!(h.commit()).jobs as Array<{
      id: string;
      lease_id: string;
    }>;
    h.advance(10_000);
    assert.throws(
      () => h.actor.complete({ id: job!.id, worker_id: 'w', lease_id: job!.lease_id, result: null }, h.fx),
      (e: Error & { code?: string }) => e.code === 'LEASE_EXPIRED',
    );
  });

  test('cancelled and completed jobs leave memory; a cancelled processing job fences its worker', () => {
    const h = harness();
    h.actor.enqueue(h.input(), h.fx);
    const [job] = h.actor.claim({ worker_id: 'w', limit: 1, lease_duration_secs: null }, h.fx)!(h.commit()).jobs as Array<{
      id: string;
      lease_id: string;
    }>;
    assert.ok(h.actor.cancel(job!.id, h.fx));
    assert.equal(h.actor.jobs.size, 0);
    assert.equal(h.actor.cancel(job!.id, h.fx), null);
    assert.throws(() => h.actor.fail({ id: job!.id, worker_id: 'w', lease_id: job!.lease_id, error: 'x', retryable: true }, h.fx));
  });
});
