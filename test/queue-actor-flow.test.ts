// QueueActor flow control alone: fairness and limits per key, max_concurrency, the rate window, debounce,
// idempotency windows, progress, cancelling running work and explain's facts. A hand-moved clock and a journal
// that records what it is told, as in queue-actor.test.ts; the stores are exercised by test/flow-control.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JobIds } from '../src/actors/ids.js';
import { QueueActor, type EnqueueInput, type LiveJob, type QueueConfig } from '../src/actors/queue/queue-actor.js';
import type { CommitResult, DomainEvent, Effects, JournalRecord, QueueState } from '../src/actors/records.js';
import { enqueueInput } from './fixtures/enqueue-input.js';

/** A commit that returned nothing: for replies that read nothing from it. */
const EMPTY: CommitResult = { rows: new Map(), inserted: new Set() };

type Claimed = { id: string; lease_id: string; key: string | null };

function harness(config: Partial<QueueConfig> = {}, live: Omit<LiveJob, 'ver'>[] = []) {
  const records: JournalRecord[] = [];
  const events: DomainEvent[] = [];
  const ids = new JobIds();
  let now = Date.UTC(2030, 0, 1);
  const fx: Effects = {
    get now() {
      return now;
    },
    write: (r) => records.push(r),
    emit: (e) => events.push(e),
    newJobId: () => ids.next(now),
  };
  const queue: QueueState = {
    paused: false,
    paused_reason: null,
    paused_at: null,
    max_retries: null,
    lease_duration_secs: null,
    concurrency_per_key: null,
    max_concurrency: null,
    rate_limit: null,
    created_at: now,
    updated_at: now,
    ...config,
  };
  const actor = new QueueActor('org', 'q', { retryUnitMs: 1000, defaultMaxRetries: 3, defaultTimeoutSeconds: 60 }, queue, live, now);
  const keyOf = new Map<string, string | null>();
  const commit = (): CommitResult => {
    const out: CommitResult = { rows: new Map(), inserted: new Set() };
    for (const r of records) {
      if (r.kind === 'insert') {
        out.inserted.add(r.job.id);
        keyOf.set(r.job.id, r.job.concurrency_key);
      }
      if (r.kind === 'update' && r.returning) out.rows.set(r.id, { id: r.id, lease_id: r.state.lease_id, key: keyOf.get(r.id) ?? null });
    }
    return out;
  };
  const input = enqueueInput;
  const enqueue = (over: Partial<EnqueueInput> = {}) => actor.enqueue(input(over), fx)(commit());
  const claim = (limit = 1, worker = 'w'): Claimed[] => {
    const r = actor.claim({ worker_id: worker, limit, lease_duration_secs: null }, fx);
    return r ? (r(commit()).jobs as Claimed[]) : [];
  };
  const complete = (j: Claimed, worker = 'w') => actor.complete({ id: j.id, worker_id: worker, lease_id: j.lease_id, result: null }, fx)(commit());
  /** A parked long-poll claim; `answers` fills when the actor feeds it. */
  const wait = (limit = 1) => {
    const answers: Claimed[][] = [];
    actor.addWaiter({ input: { worker_id: 'w', limit, lease_duration_secs: null }, respond: (r) => answers.push(r(commit()).jobs as Claimed[]) });
    return answers;
  };
  return { actor, fx, records, events, enqueue, claim, complete, wait, advance: (ms: number) => (now += ms), now: () => now };
}

describe('QueueActor: fairness per key', () => {
  test('a key with 1,000 waiting jobs does not delay a key with 10: all of them go within the first 30 claims', () => {
    const h = harness();
    for (let i = 0; i < 1000; i++) h.enqueue({ concurrency_key: 'A' });
    for (let i = 0; i < 10; i++) h.enqueue({ concurrency_key: 'B' });
    const keys: Array<string | null> = [];
    // Four claim loops taking turns, one job each, completing what they take.
    for (let round = 0; round < 8; round++) {
      for (let loop = 0; loop < 4; loop++) for (const j of h.claim(1, `w${loop}`)) {
        keys.push(j.key);
        h.complete(j, `w${loop}`);
      }
    }
    assert.equal(keys.slice(0, 30).filter((k) => k === 'B').length, 10);
    assert.deepEqual(keys.slice(0, 4), ['A', 'B', 'A', 'B']);
  });

  test('priority comes first; keys take turns within a priority level; jobs without a key form one lane', () => {
    const h = harness();
    h.enqueue({ concurrency_key: 'A' });
    h.enqueue({ concurrency_key: 'A' });
    h.enqueue({ concurrency_key: 'B' });
    h.enqueue({});
    h.enqueue({ concurrency_key: 'C', priority: 5 });
    const order = h.claim(10).map((j) => j.key);
    assert.deepEqual(order, ['C', 'A', 'B', null, 'A']);
  });

  test('concurrency_per_key is never exceeded, and a key at its limit does not block the others', () => {
    const h = harness({ concurrency_per_key: 2 });
    for (let i = 0; i < 10; i++) h.enqueue({ concurrency_key: 'A' });
    for (let i = 0; i < 3; i++) h.enqueue({ concurrency_key: 'B' });
    const first = h.claim(100);
    assert.deepEqual(first.map((j) => j.key).sort(), ['A', 'A', 'B', 'B']);
    assert.deepEqual(h.claim(100), []);
    h.complete(first.find((j) => j.key === 'A')!);
    assert.deepEqual(h.claim(100).map((j) => j.key), ['A']);
    // A cancelled running job and an expired lease free their key's slot too.
    const runningB = first.find((j) => j.key === 'B')!;
    h.actor.cancel(runningB.id, h.fx);
    assert.deepEqual(h.claim(100).map((j) => j.key), ['B']);
  });

  test('a parked claim is fed when a job of a key at its limit completes', () => {
    const h = harness({ concurrency_per_key: 1 });
    h.enqueue({ concurrency_key: 'A' });
    h.enqueue({ concurrency_key: 'A' });
    const [a] = h.claim(5);
    assert.equal(h.actor.claim({ worker_id: 'w', limit: 1, lease_duration_secs: null }, h.fx), null);
    const answers = h.wait();
    h.complete(a!);
    assert.equal(answers.length, 1);
    assert.equal(answers[0]!.length, 1);
  });

  test('an actor rebuilt from rows counts the processing jobs of each key against its limit', () => {
    const row = (id: string, status: 'pending' | 'processing', key: string): Omit<LiveJob, 'ver'> => ({
      id,
      status,
      priority: 0,
      retry_count: 0,
      max_retries: 3,
      timeout_seconds: 60,
      last_error: null,
      scheduled_at: null,
      started_at: status === 'processing' ? Date.UTC(2030, 0, 1) : null,
      due_at: Date.UTC(2030, 0, 1),
      assigned_worker_id: status === 'processing' ? 'w' : null,
      lease_id: status === 'processing' ? 'l' : null,
      lease_expires_at: status === 'processing' ? Date.UTC(2030, 0, 1) + 60_000 : null,
      lease_ms: 60_000,
      idempotency_key: null,
      callback: false,
      workflow_id: null,
      blocked: false,
      concurrency_key: key,
      idempotency_expires_at: null,
      debounce_key: null,
      debounce_until: null,
    });
    const ID = (n: number) => `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`;
    const h = harness({ concurrency_per_key: 1 }, [row(ID(1), 'processing', 'A'), row(ID(2), 'pending', 'A'), row(ID(3), 'pending', 'B')]);
    assert.deepEqual(h.claim(10).map((j) => j.id), [ID(3)]);
  });
});

describe('QueueActor: queue limits', () => {
  test('max_concurrency caps processing jobs; a completion feeds a parked claim', () => {
    const h = harness({ max_concurrency: 3 });
    for (let i = 0; i < 5; i++) h.enqueue();
    const first = h.claim(10);
    assert.equal(first.length, 3);
    assert.deepEqual(h.claim(10), []);
    const answers = h.wait(10);
    h.complete(first[0]!);
    assert.equal(answers.length, 1);
    assert.equal(answers[0]!.length, 1);
  });

  test('the rate limit hands out at most `jobs` per window; a parked claim wakes at the next slot, by the timer', () => {
    const h = harness({ rate_limit: { jobs: 5, per_seconds: 2 } });
    for (let i = 0; i < 20; i++) h.enqueue();
    const start = h.now();
    assert.equal(h.claim(10).length, 5);
    h.advance(500);
    assert.equal(h.actor.claim({ worker_id: 'w', limit: 1, lease_duration_secs: null }, h.fx), null);
    assert.equal(h.actor.nextWake(h.now()), start + 60_000, 'no waiter: only the lease timers');
    const answers = h.wait(3);
    assert.equal(h.actor.nextWake(h.now()), start + 2_000, 'a waiter: the window’s next slot');
    h.advance(1_499);
    h.actor.tick(h.fx);
    assert.equal(answers.length, 0);
    h.advance(1);
    h.actor.tick(h.fx);
    assert.equal(answers.length, 1);
    assert.equal(answers[0]!.length, 3);
  });

  test('over a long run the rate limit never lets more than `jobs` out in any window', () => {
    const h = harness({ rate_limit: { jobs: 10, per_seconds: 1 } });
    for (let i = 0; i < 1000; i++) h.enqueue();
    const at: number[] = [];
    for (let t = 0; t < 20_000; t += 37) {
      for (const j of h.claim(3)) {
        at.push(h.now());
        h.complete(j);
      }
      h.advance(37);
    }
    for (let i = 10; i < at.length; i++) assert.ok(at[i]! - at[i - 10]! >= 1000, `11 jobs within a second at ${i}`);
    assert.ok(at.length >= 190 && at.length <= 200, `${at.length} jobs in 20 s`);
  });

  test('raising a limit feeds parked claims at once', () => {
    const h = harness({ max_concurrency: 1 });
    h.enqueue();
    h.enqueue();
    h.claim();
    const answers = h.wait();
    h.actor.configure({ max_concurrency: 2 }, h.fx)(EMPTY);
    assert.equal(answers.length, 1);
  });
});

describe('QueueActor: debounce and idempotency windows', () => {
  test('50 jobs with one debounce key within 1 s make one job, with the last payload, run delay_ms after the last', () => {
    const h = harness();
    const replies = [];
    for (let i = 0; i < 50; i++) {
      replies.push(h.enqueue({ payload: { n: i }, debounce: { key: 'd', delay_ms: 500, max_delay_ms: null } }));
      h.advance(20);
    }
    assert.equal(replies[0]!.created, true);
    const id = replies[0]!.created ? replies[0]!.job.id : '';
    assert.ok(replies.slice(1).every((r) => !r.created && 'debounced' in r && r.id === id));
    const last = h.records.filter((r) => r.kind === 'update' && r.id === id).at(-1)!;
    assert.ok(last.kind === 'update' && (last.payload as { n: number }).n === 49);
    assert.equal(last.state.scheduled_at, h.now() - 20 + 500);
    assert.deepEqual(h.claim(), [], 'not before the trailing edge');
    h.advance(480);
    const got = h.claim(10);
    assert.deepEqual(got.map((j) => j.id), [id]);
    // Once running it no longer absorbs new jobs: the next one starts a new burst.
    const next = h.enqueue({ payload: { n: 50 }, debounce: { key: 'd', delay_ms: 500, max_delay_ms: null } });
    assert.equal(next.created, true);
  });

  test('a rebuilt actor finds the waiting job of a debounce key, but not a job that already ran (a retry)', () => {
    const t = Date.UTC(2030, 0, 1);
    const row = (n: number, started: boolean): Omit<LiveJob, 'ver'> => ({
      id: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`,
      status: 'scheduled',
      priority: 0,
      retry_count: started ? 1 : 0,
      max_retries: 3,
      timeout_seconds: 60,
      last_error: started ? 'boom' : null,
      scheduled_at: t + 5_000,
      started_at: started ? t - 1_000 : null,
      due_at: t + 5_000,
      assigned_worker_id: null,
      lease_id: null,
      lease_expires_at: null,
      lease_ms: 60_000,
      idempotency_key: null,
      callback: false,
      workflow_id: null,
      blocked: false,
      concurrency_key: null,
      idempotency_expires_at: null,
      debounce_key: started ? 'ran' : 'waits',
      debounce_until: t + 8_000,
    });
    const h = harness({}, [row(1, false), row(2, true)]);
    const d = (key: string) => ({ debounce: { key, delay_ms: 500, max_delay_ms: null } });
    const absorbed = h.enqueue(d('waits'));
    assert.ok(!absorbed.created && 'debounced' in absorbed && absorbed.id === row(1, false).id);
    assert.equal(h.enqueue(d('ran')).created, true);
  });

  test('max_delay_ms bounds the push', () => {
    const h = harness();
    const t0 = h.now();
    const first = h.enqueue({ debounce: { key: 'd', delay_ms: 500, max_delay_ms: 1_000 } });
    for (let i = 0; i < 10; i++) {
      h.advance(300);
      h.enqueue({ payload: { n: i }, debounce: { key: 'd', delay_ms: 500, max_delay_ms: 1_000 } });
    }
    assert.ok(first.created);
    const job = h.actor.jobs.get(first.job.id)!;
    assert.equal(job.scheduled_at, t0 + 1_000);
    assert.deepEqual(h.claim().map((j) => j.id), [first.job.id], 'due since t0 + 1 s: pending, not pushed again');
  });

  test('an idempotency key frees itself after idempotency_ttl_secs, not before', () => {
    const h = harness();
    const a = h.enqueue({ idempotency_key: 'k', idempotency_ttl_secs: 10 });
    assert.ok(a.created);
    h.advance(9_999);
    assert.deepEqual(h.enqueue({ idempotency_key: 'k' }), { created: false, idempotency_key: 'k' });
    h.advance(1);
    const b = h.enqueue({ idempotency_key: 'k' });
    assert.ok(b.created);
    const ins = h.records.filter((r) => r.kind === 'insert');
    assert.equal(ins.length, 2);
    assert.ok(ins[0]!.kind === 'insert' && ins[0]!.job.idempotency_expires_at === a.job.created_at + 10_000);
    // The old job keeps running without the key; the new one holds it for good (no TTL given).
    assert.equal(h.actor.jobs.get(a.job.id)!.idempotency_key, null);
    h.advance(1_000_000);
    assert.deepEqual(h.enqueue({ idempotency_key: 'k' }), { created: false, idempotency_key: 'k' });
  });
});

describe('QueueActor: progress and cancelling running work', () => {
  test('progress needs the live lease; it is written on the row and published', () => {
    const h = harness();
    h.enqueue();
    const [j] = h.claim();
    const r = h.actor.progress({ id: j!.id, worker_id: 'w', lease_id: j!.lease_id, progress: 40, message: 'halfway', data: { rows: 4 } }, h.fx)(EMPTY);
    assert.equal(r.progress, 40);
    const rec = h.records.at(-1)!;
    assert.ok(rec.kind === 'update' && rec.progress?.progress === 40 && rec.progress.message === 'halfway' && rec.state.status === 'processing');
    const ev = h.events.at(-1)!;
    assert.ok(ev.type === 'job' && ev.event === 'job.progress' && ev.data?.progress === 40);
    assert.throws(
      () => h.actor.progress({ id: j!.id, worker_id: 'other', lease_id: j!.lease_id, progress: 50, message: null, data: null }, h.fx),
      (e: Error & { code?: string }) => e.code === 'LEASE_EXPIRED',
    );
  });

  test('cancelling a running job names its worker in job.cancelled; the worker’s late complete is refused', () => {
    const h = harness();
    h.enqueue();
    const [j] = h.claim(1, 'w7');
    h.actor.cancel(j!.id, h.fx)!(EMPTY);
    const ev = h.events.find((e) => e.type === 'job' && e.event === 'job.cancelled');
    assert.ok(ev && ev.type === 'job' && ev.data?.worker_id === 'w7');
    assert.throws(() => h.complete(j!, 'w7'), (e: Error & { code?: string }) => e.code === 'LEASE_EXPIRED');
  });
});

describe('QueueActor: explain facts', () => {
  test('key holders, queue limit, rate slot, jobs ahead, pause and last claim', () => {
    const h = harness({ concurrency_per_key: 1, rate_limit: { jobs: 2, per_seconds: 10 } });
    const a1 = h.enqueue({ concurrency_key: 'A', priority: 1 });
    const a2 = h.enqueue({ concurrency_key: 'A', priority: 1 });
    const b = h.enqueue({ concurrency_key: 'B' });
    const c = h.enqueue({ concurrency_key: 'C' });
    assert.ok(a1.created && a2.created && b.created && c.created);
    const before = h.actor.explain(c.job.id, h.now());
    assert.ok(before.live);
    assert.equal(before.ahead, 3, 'two of priority 1, and B (equal priority, older)');
    assert.equal(before.last_claim_at, null);
    h.claim(2);
    const f = h.actor.explain(a2.job.id, h.now());
    assert.ok(f.live);
    assert.deepEqual(f.key_holders, [a1.job.id]);
    assert.equal(f.concurrency_per_key, 1);
    assert.equal(f.rate_next_slot, h.now() + 10_000);
    assert.equal(f.last_claim_at, h.now());
    const fc = h.actor.explain(c.job.id, h.now());
    assert.ok(fc.live);
    assert.equal(fc.ahead, 0, 'A is at its limit, B was claimed');
    h.actor.pause('maintenance', h.fx);
    const p = h.actor.explain(c.job.id, h.now());
    assert.ok(p.live && p.paused && p.paused_reason === 'maintenance' && p.paused_at === h.now());
    assert.deepEqual(h.actor.explain('nope', h.now()), { live: false });
  });
});
