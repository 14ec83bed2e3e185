// QueueActor alone: a pure state machine driven with a hand-moved clock and a journal that records what it
// is told. No store is involved because the actor has none; the stores are exercised by the HTTP suites.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JobIds } from '../src/actors/ids.js';
import { backoffMs, QueueActor, RowBudget } from '../src/actors/queue/queue-actor.js';
import type { CommitResult, DomainEvent, Effects, JournalRecord } from '../src/actors/records.js';
import { enqueueInput } from './fixtures/enqueue-input.js';

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
  const commit = (): CommitResult => {
    const out: CommitResult = { rows: new Map(), inserted: new Set() };
    for (const r of records) {
      if (r.kind === 'insert') out.inserted.add(r.job.id);
      if (r.kind === 'update' && r.returning) out.rows.set(r.id, { id: r.id, lease_id: r.state.lease_id });
    }
    return out;
  };
  const input = enqueueInput;
  return { actor, fx, records, commit, input, advance: (ms: number) => (now += ms), now: () => now };
}

describe('QueueActor', () => {
  test('kept rows: claims answered from them while the budget lasts, given back on claim, change and dispose', () => {
    const h = harness();
    // 700 bytes per row (600 of overhead and a 100-byte payload): room for two.
    const budget = new RowBudget(1_400);
    const actor = new QueueActor('org', 'q', { retryUnitMs: 1000, defaultMaxRetries: 3, defaultTimeoutSeconds: 60, rows: budget }, null);
    const payloads = [{ n: 1 }, { n: 2 }, { n: 3 }];
    for (const payload of payloads) actor.enqueue(h.input({ payload, payload_bytes: 100, tags: { t: 'x' } }), h.fx)(h.commit());
    assert.equal(budget.left, 0);
    const inserted = h.records.filter((r) => r.kind === 'insert').map((r) => (r as Extract<JournalRecord, { kind: 'insert' }>).job);
    const reply = actor.claim({ worker_id: 'w', limit: 3, lease_duration_secs: null }, h.fx)!;
    const claims = h.records.filter((r) => r.kind === 'update') as Array<Extract<JournalRecord, { kind: 'update' }>>;
    assert.deepEqual(claims.map((c) => [c.confirm ?? false, c.returning ?? false]), [[true, false], [true, false], [false, true]]);
    assert.equal(budget.left, 1_400, 'a claim gives its row back');
    // The commit confirms the first two with an empty row and returns the third's row.
    const out: CommitResult = { rows: new Map<string, Record<string, unknown>>([[claims[0]!.id, {}], [claims[1]!.id, {}], [claims[2]!.id, { id: claims[2]!.id, lease_id: claims[2]!.state.lease_id, from: 'store' }]]), inserted: new Set() };
    const jobs = reply(out).jobs as Array<Record<string, unknown>>;
    assert.deepEqual(jobs.map((j) => j.payload), [{ n: 1 }, { n: 2 }, undefined]);
    assert.equal(jobs[2]!.from, 'store');
    for (const [i, j] of jobs.slice(0, 2).entries()) {
      assert.deepEqual(j, { ...inserted[i], ...claims[i]!.state }, 'the kept row with the claim\'s state');
      assert.equal(j.status, 'processing');
    }
    // A claim whose update found no row (the store disagrees) hands nothing out and marks the actor diverged.
    actor.enqueue(h.input({ payload: {}, payload_bytes: 2 }), h.fx)(h.commit());
    assert.equal(budget.left, 1_400 - 602);
    const lost = actor.claim({ worker_id: 'w', limit: 1, lease_duration_secs: null }, h.fx)!;
    assert.deepEqual(lost({ rows: new Map(), inserted: new Set() }).jobs, []);
    assert.equal(actor.diverged, true);
    // A job that changes before its claim (cancelled here) gives its row back, and so does a dropped actor.
    const a = actor.enqueue(h.input({ payload: {}, payload_bytes: 0 }), h.fx)(h.commit()) as unknown as { job: { id: string } };
    actor.enqueue(h.input({ payload: {}, payload_bytes: 0 }), h.fx)(h.commit());
    assert.equal(budget.left, 1_400 - 1_200);
    actor.cancel(a.job.id, h.fx);
    assert.equal(budget.left, 1_400 - 600);
    actor.dispose();
    assert.equal(budget.left, 1_400);
  });

  test('ids are strictly increasing within one millisecond', () => {
    const g = new JobIds();
    const a = Array.from({ length: 5000 }, () => g.next(1_000));
    assert.deepEqual([...a].sort(), a);
    assert.equal(new Set(a).size, a.length);
  });

  test('unclaim: a job still under the given lease is pending again, as if never claimed; another lease is left alone', () => {
    const h = harness();
    h.actor.enqueue(h.input(), h.fx)(h.commit());
    h.actor.enqueue(h.input(), h.fx)(h.commit());
    const [a, b] = h.actor.claim({ worker_id: 'w', limit: 2, lease_duration_secs: null }, h.fx)!(h.commit()).jobs as Array<{ id: string; lease_id: string }>;
    const reply = h.actor.unclaim([{ id: a!.id, lease_id: a!.lease_id }, { id: b!.id, lease_id: 'not-its-lease' }], h.fx);
    assert.deepEqual(reply(h.commit()).unclaimed, [a!.id]);
    const again = h.actor.claim({ worker_id: 'w2', limit: 2, lease_duration_secs: null }, h.fx)!(h.commit()).jobs as Array<{ id: string }>;
    assert.deepEqual(again.map((j) => j.id), [a!.id]);
    const job = h.actor.jobs.get(a!.id)!;
    assert.equal(job.retry_count, 0);
    assert.equal(job.assigned_worker_id, 'w2');
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
    const answered: Array<(o: CommitResult) => { jobs: unknown[] }> = [];
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
    assert.equal(h.actor.nextWake(h.now()), h.now() + 10_000);
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

  test('claims follow priority, then age, through any mix of enqueues, priority changes and claims (seeded, 300 runs; every other one in a key lane)', () => {
    // A small seeded generator: a failure names its seed, and the run repeats exactly.
    const rng = (seed: number) => () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (let seed = 1; seed <= 300; seed++) {
      const h = harness();
      const random = rng(seed);
      const pending = new Map<string, number>();
      for (let step = 0; step < 120; step++) {
        const r = random();
        const ids = [...pending.keys()];
        if (r < 0.5 || ids.length === 0) {
          const priority = Math.floor(random() * 5);
          // Odd seeds: every job under one concurrency key, so the queue serves them from a key lane (key-lanes.ts).
          const reply = h.actor.enqueue(h.input({ priority, ...(seed % 2 ? { concurrency_key: 'k' } : {}) }), h.fx)(h.commit());
          if (reply.created) pending.set(reply.job.id, priority);
        } else if (r < 0.75) {
          const id = ids[Math.floor(random() * ids.length)]!;
          const priority = Math.floor(random() * 10) - 2;
          h.actor.setPriority(id, priority, h.fx);
          pending.set(id, priority);
        } else {
          const want = [...pending].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]![0];
          const [got] = h.actor.claim({ worker_id: 'w', limit: 1, lease_duration_secs: null }, h.fx)!(h.commit()).jobs as Array<{ id: string }>;
          assert.equal(got!.id, want, `seed ${seed}, step ${step}`);
          pending.delete(want);
        }
        h.advance(Math.floor(random() * 3));
      }
    }
  });

  test('every claim takes the best job the actor itself calls claimable, through enqueues, delays, fails, expiries, cancels and priority changes (seeded, 300 runs)', () => {
    // The oracle is the actor's own job table, scanned whole before each claim: whatever the heaps, windows and
    // timers do, the claim must hand out the highest priority, then the oldest id, of the jobs pending or due.
    const rng = (seed: number) => () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    type Claimed = { id: string; lease_id: string };
    for (let seed = 1; seed <= 300; seed++) {
      const h = harness();
      const random = rng(seed);
      const pick = <T>(list: T[]): T | undefined => list[Math.floor(random() * list.length)];
      const leased: Claimed[] = [];
      for (let step = 0; step < 150; step++) {
        const r = random();
        const live = [...h.actor.jobs.values()];
        if (r < 0.35) {
          const delay = random() < 0.3 ? Math.floor(random() * 5_000) : 0;
          h.actor.enqueue(h.input({ priority: Math.floor(random() * 4), scheduled_at: delay > 0 ? h.now() + delay : null, max_retries: 2 }), h.fx)(h.commit());
        } else if (r < 0.45) {
          const job = pick(live.filter((j) => j.status === 'pending' || j.status === 'scheduled'));
          if (job) h.actor.setPriority(job.id, Math.floor(random() * 6) - 1, h.fx);
        } else if (r < 0.55) {
          const k = Math.floor(random() * leased.length);
          const c = leased[k];
          if (c) {
            leased.splice(k, 1);
            const input = { id: c.id, worker_id: 'w', lease_id: c.lease_id };
            try {
              if (random() < 0.5) h.actor.complete({ ...input, result: null }, h.fx)(h.commit());
              else h.actor.fail({ ...input, error: 'boom', retryable: true }, h.fx)(h.commit());
            } catch (err) {
              assert.equal((err as { code?: string }).code, 'LEASE_EXPIRED', `seed ${seed}, step ${step}`);
            }
          }
        } else if (r < 0.6) {
          const job = pick(live);
          if (job) h.actor.cancel(job.id, h.fx)?.(h.commit());
        } else if (r < 0.75) {
          h.advance(Math.floor(random() * 4_000));
        } else {
          h.actor.tick(h.fx);
          const now = h.now();
          const claimable = [...h.actor.jobs.values()].filter((j) => !j.blocked && (j.status === 'pending' || (j.status === 'scheduled' && (j.scheduled_at ?? 0) <= now)));
          const want = claimable.sort((a, b) => b.priority - a.priority || (a.id < b.id ? -1 : 1))[0];
          const reply = h.actor.claim({ worker_id: 'w', limit: 1, lease_duration_secs: 5 }, h.fx);
          const got = reply ? (reply(h.commit()).jobs as Claimed[])[0] : undefined;
          assert.equal(got?.id, want?.id, `seed ${seed}, step ${step}`);
          if (got) leased.push(got);
        }
      }
    }
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

describe('QueueActor: blocked workflow jobs', () => {
  function blockedHarness() {
    const h = harness();
    const events: DomainEvent[] = [];
    const fx: Effects = { ...h.fx, emit: (e) => events.push(e) };
    Object.defineProperty(fx, 'now', { get: () => h.now() });
    const claim = (limit = 10) => {
      const r = h.actor.claim({ worker_id: 'w', limit, lease_duration_secs: null }, fx);
      return r ? (r(h.commit()).jobs as Array<{ id: string; lease_id: string }>) : [];
    };
    const blocked = (id: string) => h.actor.enqueue(h.input({ id, workflow_id: 'wf-1', blocked: true }), fx);
    return { ...h, fx, events, claim, blocked };
  }
  const ID = (n: number) => `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`;

  test('a blocked job is live and written pending with dependencies_met false, but not claimable', () => {
    const h = blockedHarness();
    const r = h.blocked(ID(1))(h.commit());
    assert.ok(r.created);
    assert.equal(r.job.id, ID(1));
    assert.equal(r.job.status, 'pending');
    assert.equal(r.job.dependencies_met, false);
    assert.equal(r.job.workflow_id, 'wf-1');
    const ins = h.records.find((x) => x.kind === 'insert');
    assert.ok(ins && ins.kind === 'insert' && ins.job.dependencies_met === false && ins.job.status === 'pending');
    assert.equal(h.actor.jobs.size, 1);
    assert.deepEqual(h.claim(), []);
  });

  test('release makes it claimable, writes dependencies_met true, and is idempotent', () => {
    const h = blockedHarness();
    h.blocked(ID(1));
    h.blocked(ID(2));
    const first = h.actor.release([ID(1), 'not-here'], h.fx)(h.commit());
    assert.deepEqual(first.released, [ID(1)]);
    const upd = h.records.at(-1)!;
    assert.ok(upd.kind === 'update' && upd.id === ID(1) && upd.state.dependencies_met === true && upd.state.status === 'pending');
    assert.deepEqual(h.actor.release([ID(1)], h.fx)(h.commit()).released, [], 'a second release changes nothing');
    assert.deepEqual(h.claim().map((j) => j.id), [ID(1)]);
    assert.deepEqual(h.actor.release([ID(1)], h.fx)(h.commit()).released, [], 'a processing job is not released again');
  });

  test('a release feeds a parked long-poll claim', () => {
    const h = blockedHarness();
    h.blocked(ID(1));
    const answered: Array<(o: CommitResult) => { jobs: unknown[] }> = [];
    assert.equal(h.actor.claim({ worker_id: 'w', limit: 1, lease_duration_secs: null }, h.fx), null);
    h.actor.addWaiter({ input: { worker_id: 'w', limit: 1, lease_duration_secs: null }, respond: (r) => answered.push(r) });
    h.actor.release([ID(1)], h.fx);
    assert.equal(answered.length, 1);
    assert.equal(answered[0]!(h.commit()).jobs.length, 1);
  });

  test('a changed priority keeps a blocked job blocked', () => {
    const h = blockedHarness();
    h.blocked(ID(1));
    assert.ok(h.actor.setPriority(ID(1), 50, h.fx));
    assert.deepEqual(h.claim(), []);
  });

  test('cancel works on a blocked job; its end carries the workflow id', () => {
    const h = blockedHarness();
    h.blocked(ID(1));
    assert.ok(h.actor.cancel(ID(1), h.fx));
    assert.equal(h.actor.jobs.size, 0);
    assert.deepEqual(h.actor.release([ID(1)], h.fx)(h.commit()).released, []);
    const fin = h.events.find((e) => e.type === 'job.finished');
    assert.deepEqual(fin, { type: 'job.finished', organization_id: 'org', queue_name: 'q', job_id: ID(1), status: 'cancelled', workflow_id: 'wf-1' });
  });

  test('a completed workflow job reports its workflow; a plain job does not', () => {
    const h = blockedHarness();
    h.blocked(ID(1));
    h.actor.release([ID(1)], h.fx);
    h.actor.enqueue(h.input(), h.fx);
    for (const j of h.claim()) h.actor.complete({ id: j.id, worker_id: 'w', lease_id: j.lease_id, result: null }, h.fx);
    const ends = h.events.filter((e) => e.type === 'job.finished');
    assert.equal(ends.length, 2);
    assert.deepEqual(ends.map((e) => (e as { workflow_id?: string }).workflow_id), ['wf-1', undefined]);
  });

  test('an actor rebuilt from rows keeps blocked jobs blocked', () => {
    const row = (id: string, blocked: boolean) => ({
      id,
      status: 'pending' as const,
      priority: 0,
      retry_count: 0,
      max_retries: 3,
      timeout_seconds: 60,
      last_error: null,
      scheduled_at: null,
      started_at: null,
      due_at: 0,
      assigned_worker_id: null,
      lease_id: null,
      lease_expires_at: null,
      lease_ms: 60_000,
      idempotency_key: null,
      workflow_id: 'wf-1',
      blocked,
      callback: false,
      concurrency_key: null,
      idempotency_expires_at: null,
      debounce_key: null,
      debounce_until: null,
    });
    const h = blockedHarness();
    const actor = new QueueActor('org', 'q', { retryUnitMs: 1000, defaultMaxRetries: 3, defaultTimeoutSeconds: 60 }, null, [row(ID(1), true), row(ID(2), false)]);
    const c = actor.claim({ worker_id: 'w', limit: 10, lease_duration_secs: null }, h.fx)!(h.commit()).jobs as Array<{ id: string }>;
    assert.deepEqual(c.map((j) => j.id), [ID(2)]);
    assert.deepEqual(actor.release([ID(1)], h.fx)(h.commit()).released, [ID(1)]);
  });

  test('revive can bring a job back blocked', () => {
    const h = blockedHarness();
    const input = { id: ID(9), priority: 0, max_retries: 0, timeout_seconds: 60, last_error: 'x', idempotency_key: null, workflow_id: 'wf-1', callback: false };
    const reply = h.actor.revive([{ ...input, blocked: true }], ['cancelled'], h.fx);
    const out = h.commit();
    out.rows.set(ID(9), { id: ID(9) });
    const [o] = reply(out);
    assert.ok(o!.revived);
    const upd = h.records.find((r) => r.kind === 'update' && r.id === ID(9));
    assert.ok(upd && upd.kind === 'update' && upd.state.dependencies_met === false && upd.onlyFrom?.[0] === 'cancelled');
    assert.deepEqual(h.claim(), []);
    h.actor.release([ID(9)], h.fx);
    assert.deepEqual(h.claim().map((j) => j.id), [ID(9)]);
  });
});
