// The bounded QueueActor (QUEUE_WINDOW, src/actors/queue/window.ts) alone: a pure state machine driven with a
// hand-moved clock, its journal applied to an in-memory table that stands for the store, and refills and adoptions
// served from that table the way readyJobs / readyJobsByKey / readyJobsById serve them. No timing: orders and counts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JobIds } from '../src/actors/ids.js';
import { QueueActor, type EnqueueInput, type LiveJob } from '../src/actors/queue/queue-actor.js';
import type { CommitResult, Effects, JobRow, JournalRecord } from '../src/actors/records.js';
import { enqueueInput } from './fixtures/enqueue-input.js';

type Live = Omit<LiveJob, 'ver'>;

/** A row as the store has it, in the shape the actor reads back (loadQueue's liveJob). */
function live(r: JobRow): Live {
  return {
    id: r.id,
    status: r.status as Live['status'],
    priority: r.priority,
    retry_count: r.retry_count,
    max_retries: r.max_retries,
    timeout_seconds: r.timeout_seconds,
    last_error: r.last_error,
    scheduled_at: r.scheduled_at,
    started_at: r.started_at,
    due_at: r.scheduled_at ?? r.created_at,
    assigned_worker_id: r.assigned_worker_id,
    lease_id: r.lease_id,
    lease_expires_at: r.lease_expires_at,
    lease_ms: r.timeout_seconds * 1000,
    idempotency_key: r.idempotency_key,
    callback: r.completion_webhook !== null,
    workflow_id: r.workflow_id,
    blocked: r.status === 'pending' && !r.dependencies_met,
    concurrency_key: r.concurrency_key,
    idempotency_expires_at: r.idempotency_expires_at,
    debounce_key: r.debounce_key,
    debounce_until: r.debounce_until,
    expires_at: r.expires_at ?? null,
  };
}

const claimOrder = (a: Live, b: Live): number => (a.priority !== b.priority ? b.priority - a.priority : a.id < b.id ? -1 : 1);

function harness(window: number) {
  const ids = new JobIds();
  let now = Date.UTC(2030, 0, 1);
  const table = new Map<string, JobRow>();
  let pending: JournalRecord[] = [];
  const fx: Effects = {
    get now() {
      return now;
    },
    write: (r) => pending.push(r),
    emit: () => {},
    newJobId: () => ids.next(now),
  };
  const actor = new QueueActor('org', 'q', { retryUnitMs: 1000, defaultMaxRetries: 3, defaultTimeoutSeconds: 60, window }, null);
  /** Applies what was written, as a group commit does, and hands back what it returns. */
  const commit = (): CommitResult => {
    const out: CommitResult = { rows: new Map(), inserted: new Set() };
    for (const r of pending) {
      if (r.kind === 'insert') {
        table.set(r.job.id, { ...r.job });
        out.inserted.add(r.job.id);
      } else if (r.kind === 'update') {
        const row = table.get(r.id)!;
        if (r.onlyFrom && !r.onlyFrom.includes(row.status)) continue;
        Object.assign(row, r.state);
        if (r.returning) out.rows.set(r.id, { id: r.id, lease_id: r.state.lease_id });
      }
    }
    pending = [];
    return out;
  };
  const ready = (): Live[] =>
    [...table.values()].filter((r) => r.status === 'pending' && r.dependencies_met).map(live).sort(claimOrder);
  /** What the host does after every message: the windows that ran low are filled from the table. */
  const pump = (): void => {
    commit();
    for (let refills = actor.refills(7); refills.length > 0; refills = actor.refills(7)) {
      for (const r of refills) {
        const rows = ready()
          .filter((j) => !r.keyed || j.concurrency_key === r.key)
          .filter((j) => r.after === null || j.priority < r.after.priority || (j.priority === r.after.priority && j.id > r.after.id))
          .slice(0, r.limit);
        actor.refilled(r, rows, fx);
      }
      commit();
    }
  };
  /** A request that names a job: a paged-out one is read back first (the host's adopt), let go after. */
  const naming = <T>(id: string, fn: () => T): T => {
    commit();
    if (actor.unheld([id]).length > 0) actor.adopt(ready().filter((j) => j.id === id));
    try {
      return fn();
    } finally {
      actor.repage();
      pump();
    }
  };
  const input = enqueueInput;
  const enqueue = (over: Partial<EnqueueInput> = {}): string => {
    const r = actor.enqueue(input(over), fx)(commit());
    pump();
    assert.ok(r.created);
    return r.job.id;
  };
  const claim = (limit = 1): string[] => {
    const reply = actor.claim({ worker_id: 'w', limit, lease_duration_secs: null }, fx);
    const jobs = reply ? reply(commit()).jobs.map((j) => j.id as string) : [];
    pump();
    return jobs;
  };
  /** The actor's counts agree with the table: held + paged out = ready rows. */
  const counts = (): void => {
    assert.equal(actor.heldReady + actor.pagedOut, ready().length, 'held + paged out = ready jobs in the store');
  };
  return { actor, fx, table, ready, pump, naming, enqueue, claim, counts, commit, input, advance: (ms: number) => (now += ms), now: () => now };
}

describe('QueueActor window', () => {
  test('claims in exact priority and FIFO order across refills; the window stays bounded', () => {
    const h = harness(10);
    const prios = [0, 10, -10, 0, 5];
    const all: Array<{ id: string; priority: number }> = [];
    for (let i = 0; i < 120; i++) {
      const priority = prios[i % prios.length]!;
      all.push({ id: h.enqueue({ priority }), priority });
      assert.ok(h.actor.heldReady <= 20, `held ${h.actor.heldReady}`);
    }
    h.counts();
    assert.ok(h.actor.pagedOut >= 100, 'most of the backlog is paged out');
    const got: string[] = [];
    for (let i = 0; i < 40; i++) got.push(...h.claim(i % 3 === 0 ? 3 : 1));
    // A high-priority job enqueued while the lower backlog is paged out is claimed first.
    const urgent = h.enqueue({ priority: 50 });
    assert.deepEqual(h.claim(), [urgent]);
    h.counts();
    for (let batch = h.claim(4); batch.length > 0; batch = h.claim(4)) got.push(...batch);
    const expected = [...all].sort((a, b) => (a.priority !== b.priority ? b.priority - a.priority : a.id < b.id ? -1 : 1)).map((j) => j.id);
    assert.deepEqual(got, expected);
    assert.equal(h.actor.pagedOut, 0);
    h.counts();
  });

  test('scheduled jobs that fall due take their place in the order among paged-out jobs', () => {
    const h = harness(10);
    const low = Array.from({ length: 40 }, () => h.enqueue({ priority: 0 }));
    const later = Array.from({ length: 3 }, () => h.enqueue({ priority: 5, scheduled_at: h.now() + 1_000 }));
    const tail = Array.from({ length: 3 }, () => h.enqueue({ priority: -5, scheduled_at: h.now() + 1_000 }));
    assert.deepEqual(h.claim(2), low.slice(0, 2));
    h.advance(1_000);
    h.actor.tick(h.fx);
    h.pump();
    h.counts();
    const got: string[] = [];
    for (let batch = h.claim(5); batch.length > 0; batch = h.claim(5)) got.push(...batch);
    assert.deepEqual(got, [...later, ...low.slice(2), ...tail]);
  });

  test('key lanes stay fair with a paged-out backlog: a key with 10 jobs is not hidden behind one with 200', () => {
    const h = harness(20);
    const a = Array.from({ length: 200 }, () => h.enqueue({ concurrency_key: 'a' }));
    const b = Array.from({ length: 10 }, () => h.enqueue({ concurrency_key: 'b' }));
    h.counts();
    const got: string[] = [];
    for (let i = 0; i < 20; i++) got.push(...h.claim());
    // Turns alternate within the priority level: b's ten come within the first twenty claims, each in FIFO order.
    assert.deepEqual(got.filter((id) => b.includes(id)), b);
    assert.deepEqual(got.filter((id) => a.includes(id)), a.slice(0, 10));
    // A higher-priority job of a key whose backlog is paged out comes first.
    const urgent = h.enqueue({ concurrency_key: 'a', priority: 10 });
    assert.deepEqual(h.claim(), [urgent]);
    for (let batch = h.claim(7); batch.length > 0; batch = h.claim(7)) got.push(...batch);
    assert.deepEqual(got.filter((id) => a.includes(id)), a);
    h.counts();
  });

  test('a rebuilt actor pages its backlog in from the start and claims in order', () => {
    const h = harness(10);
    const all = Array.from({ length: 60 }, (_, i) => ({ id: h.enqueue({ priority: i % 2 === 0 ? 0 : 3, concurrency_key: i % 3 === 0 ? 'k' : null }), i }));
    h.commit();
    const rebuilt = new QueueActor('org', 'q', { retryUnitMs: 1000, defaultMaxRetries: 3, defaultTimeoutSeconds: 60, window: 10 }, null);
    const ready = h.ready();
    rebuilt.page(
      [...new Set(ready.map((r) => r.concurrency_key))].map((key) => ({ key, count: ready.filter((r) => r.concurrency_key === key).length })),
      [],
    );
    assert.equal(rebuilt.heldReady, 0);
    assert.equal(rebuilt.pagedOut, 60);
    assert.equal(rebuilt.claim({ worker_id: 'w', limit: 1, lease_duration_secs: null }, h.fx), null, 'nothing is claimed before the head is read');
    for (let refills = rebuilt.refills(1000); refills.length > 0; refills = rebuilt.refills(1000)) {
      for (const r of refills) {
        rebuilt.refilled(r, h.ready().filter((j) => !r.keyed || j.concurrency_key === r.key).slice(0, r.limit), h.fx);
      }
    }
    assert.ok(rebuilt.heldReady <= 20);
    assert.equal(rebuilt.heldReady + rebuilt.pagedOut, 60);
    assert.equal(all.length, 60);
  });

  test('cancel, priority and explain reach a paged-out job; counts stay exact', () => {
    const h = harness(10);
    const ids = Array.from({ length: 50 }, () => h.enqueue());
    const deep = ids[40]!;
    assert.deepEqual(h.actor.unheld([deep]), [deep], 'paged out');
    const facts = h.naming(deep, () => h.actor.explain(deep, h.now()));
    assert.ok(facts.live && facts.paged);
    assert.deepEqual(h.actor.unheld([deep]), [deep], 'paged out again after the request');
    h.counts();
    const cancelled = ids[30]!;
    const r = h.naming(cancelled, () => h.actor.cancel(cancelled, h.fx));
    assert.ok(r);
    h.commit();
    assert.equal(h.table.get(cancelled)!.status, 'cancelled');
    h.counts();
    // Raised above the rest: held, and claimed first.
    h.naming(deep, () => h.actor.setPriority(deep, 9, h.fx));
    h.counts();
    assert.deepEqual(h.claim(), [deep]);
    const rest: string[] = [];
    for (let batch = h.claim(6); batch.length > 0; batch = h.claim(6)) rest.push(...batch);
    assert.deepEqual(rest, ids.filter((id) => id !== deep && id !== cancelled));
  });

  test('an expiry of a paged-out job is found without holding it', () => {
    const h = harness(10);
    Array.from({ length: 30 }, () => h.enqueue());
    const doomed = h.enqueue({ expires_at: h.now() + 5_000 });
    assert.deepEqual(h.actor.unheld([doomed]), [doomed]);
    assert.equal(h.actor.nextWake(h.now()), h.now() + 5_000, 'its expiry arms the timer');
    h.advance(5_000);
    const due = h.actor.dueUnheld(h.now());
    assert.deepEqual(due, [doomed]);
    h.actor.adopt(h.ready().filter((j) => due.includes(j.id)));
    h.actor.tick(h.fx);
    h.actor.repage();
    h.commit();
    assert.equal(h.table.get(doomed)!.status, 'cancelled');
    assert.equal(h.table.get(doomed)!.last_error, 'expired');
    h.counts();
  });

  test('a debounce key whose waiting job is paged out updates that job', () => {
    const h = harness(10);
    Array.from({ length: 30 }, () => h.enqueue());
    const first = h.enqueue({ debounce: { key: 'd', delay_ms: 0, max_delay_ms: null } });
    assert.deepEqual(h.actor.unheld([first]), [first]);
    const next = h.input({ debounce: { key: 'd', delay_ms: 0, max_delay_ms: null }, payload: { v: 2 } });
    const wanted = h.actor.debouncedUnheld([next]);
    assert.deepEqual(wanted, [first]);
    h.actor.adopt(h.ready().filter((j) => wanted.includes(j.id)));
    const reply = h.actor.enqueue(next, h.fx)(h.commit());
    h.actor.repage();
    assert.deepEqual(reply, { created: false, debounced: true, id: first });
    h.counts();
  });
});

describe('QueueActor window, rebuilt before its count is known', () => {
  test('claims go on while the count of ready jobs without a key is read; then the count is exact', () => {
    const h = harness(10);
    const ids = Array.from({ length: 40 }, () => h.enqueue());
    h.commit();
    const rebuilt = new QueueActor('org', 'q', { retryUnitMs: 1000, defaultMaxRetries: 3, defaultTimeoutSeconds: 60, window: 10 }, null);
    rebuilt.page([], [], 'unknown');
    assert.ok(rebuilt.estimating);
    const fill = () => {
      for (let refills = rebuilt.refills(4); refills.length > 0; refills = rebuilt.refills(4)) {
        for (const r of refills) rebuilt.refilled(r, h.ready().filter((j) => r.after === null || j.id > r.after.id).slice(0, r.limit), h.fx);
      }
    };
    fill();
    const got = rebuilt.claim({ worker_id: 'w', limit: 3, lease_duration_secs: null }, h.fx)!(h.commit()).jobs.map((j) => j.id);
    assert.deepEqual(got, ids.slice(0, 3));
    rebuilt.counted(40);
    assert.equal(rebuilt.estimating, false);
    assert.equal(rebuilt.heldReady + rebuilt.pagedOut, 37);
  });
});
