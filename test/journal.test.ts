// The journal's pipelined group commit, driven by hand: each commit the journal starts waits until the test lands
// or fails it, so every interleaving of two groups in flight can be set up exactly. What is checked: groups never
// share a row while in flight, replies and events leave in order once what their actor wrote before them is
// committed (and not before), and a failure in either commit fails exactly the requests that rest on it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CommitResult, DomainEvent, JournalRecord } from '../src/actors/records.js';
import { AppError } from '../src/errors.js';
import { Journal, type Token } from '../src/runtime/journal.js';

interface Flight {
  records: JournalRecord[];
  actors: string[];
  land(rows?: Record<string, unknown>): void;
  fail(err: unknown): void;
}

const turn = () => new Promise((r) => setImmediate(r));
const upd = (id: string): JournalRecord => ({
  kind: 'update',
  id,
  state: {
    status: 'processing',
    priority: 0,
    retry_count: 0,
    last_error: null,
    scheduled_at: null,
    started_at: 1,
    completed_at: null,
    updated_at: 1,
    assigned_worker_id: 'w',
    lease_id: 'l',
    lease_expires_at: 2,
    dependencies_met: true,
  },
  returning: true,
});
const DATA_FAULT = new Error('data fault');

function harness(depth = 2) {
  const flights: Flight[] = [];
  const log: string[] = [];
  const lost: string[][] = [];
  const events: string[] = [];
  const journal = new Journal({
    depth,
    commit: (records, actors) =>
      new Promise<CommitResult>((resolve, reject) => {
        flights.push({
          records,
          actors,
          land: (rows = {}) => resolve({ rows: new Map(Object.entries(rows) as Array<[string, Record<string, unknown>]>), inserted: new Set() }),
          fail: reject,
        });
      }),
    isDataFault: (err) => err === DATA_FAULT,
    onLost: (actors) => lost.push([...actors].sort()),
    publish: (evs: DomainEvent[]) => events.push(...evs.map((e) => (e.type === 'job' ? e.job_id : e.type))),
  });
  let token: Token = 0;
  /** One request of `actor`: its records, then a reply that logs how it ended (and the row it read, if any). */
  const request = (actor: string, ids: string[], name: string, read?: string) => {
    const t = ++token;
    for (const id of ids) journal.write(actor, upd(id), t);
    journal.emit(actor, { type: 'job', event: 'job.started', organization_id: 'o', queue_name: actor, job_id: name, status: 'processing', at: 1 }, t);
    journal.after(
      actor,
      {
        ok: (out) => log.push(`${name} ok${read ? ` ${JSON.stringify(out.rows.get(read) ?? null)}` : ''}`),
        fail: (err) => log.push(`${name} ${err.code}`),
      },
      t,
    );
  };
  return { journal, flights, log, lost, events, request };
}

describe('journal: pipelined group commit', () => {
  test('a second group goes out while the first is in flight; an actor answers in order, another actor does not wait', async () => {
    const h = harness();
    h.request('A', ['a1'], 'r1');
    await turn();
    h.request('A', ['a2'], 'r2', 'a2');
    h.request('B', ['b1'], 'r3');
    await turn();
    assert.equal(h.flights.length, 2, 'two groups in flight');
    assert.deepEqual(h.flights[1]!.records.map((r) => (r.kind === 'update' ? r.id : '')), ['a2', 'b1']);
    h.flights[1]!.land({ a2: { id: 'a2' } });
    await turn();
    assert.deepEqual(h.log, ['r3 ok'], "B's reply leaves; A's waits for A's first record");
    assert.deepEqual(h.events, ['r3']);
    h.flights[0]!.land();
    await turn();
    assert.deepEqual(h.log, ['r3 ok', 'r1 ok', 'r2 ok {"id":"a2"}'], 'r2 still reads the row its own group returned');
    assert.deepEqual(h.events, ['r3', 'r1', 'r2']);
    await h.journal.idle();
  });

  test('a request that writes a row of a group in flight waits for it, and so does every later request touching that row', async () => {
    const h = harness();
    h.request('A', ['j1'], 'claim');
    await turn();
    h.request('A', ['j1'], 'complete');
    h.request('A', ['j2', 'j1'], 'both');
    h.request('A', ['j3'], 'other');
    await turn();
    assert.equal(h.flights.length, 2);
    assert.deepEqual(h.flights[1]!.records.map((r) => (r.kind === 'update' ? r.id : '')), ['j3'], 'only the request free of j1 went out');
    h.flights[1]!.land();
    h.flights[0]!.land();
    await turn();
    assert.equal(h.flights.length, 3);
    assert.deepEqual(h.flights[2]!.records.map((r) => (r.kind === 'update' ? r.id : '')), ['j1', 'j2', 'j1'], 'the held requests, in their order');
    h.flights[2]!.land();
    await turn();
    assert.deepEqual(h.log, ['claim ok', 'complete ok', 'both ok', 'other ok']);
  });

  test('a large queue with no group in flight goes out as two groups of whole requests, side by side; a small one as one', async () => {
    const h = harness();
    const ids = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}${i}`);
    // 300 records in four requests of two actors: about half (150) is reached after the second request.
    h.request('A', ids('a', 100), 'r1');
    h.request('B', ids('b', 100), 'r2', 'b0');
    h.request('A', ids('c', 60), 'r3');
    h.request('B', ids('d', 40), 'r4');
    await turn();
    assert.equal(h.flights.length, 2, 'two groups at once');
    const sizes = h.flights.map((f) => f.records.length);
    assert.deepEqual(sizes, [200, 100], 'cut between requests, never inside one');
    assert.deepEqual(h.flights[1]!.actors.slice(0, 1), ['A']);
    // The second lands first: A's r3 still waits for r1 (its first group), B's r4 for r2.
    h.flights[1]!.land();
    await turn();
    assert.deepEqual(h.log, []);
    h.flights[0]!.land({ b0: { id: 'b0' } });
    await turn();
    assert.deepEqual(h.log, ['r1 ok', 'r3 ok', 'r2 ok {"id":"b0"}', 'r4 ok']);
    // Below the threshold, one group.
    h.request('A', ids('e', 100), 'r5');
    h.request('B', ids('f', 100), 'r6');
    await turn();
    assert.equal(h.flights.length, 3);
    assert.equal(h.flights[2]!.records.length, 200);
    h.flights[2]!.land();
    await h.journal.idle();
  });

  test('depth 1 commits one group at a time', async () => {
    const h = harness(1);
    h.request('A', ['a1'], 'r1');
    await turn();
    h.request('B', ['b1'], 'r2');
    await turn();
    assert.equal(h.flights.length, 1);
    h.flights[0]!.land();
    await turn();
    assert.equal(h.flights.length, 2);
    h.flights[1]!.land();
    await turn();
    assert.deepEqual(h.log, ['r1 ok', 'r2 ok']);
  });

  test('the first of two groups fails after the second committed: its actor fails from there on, the other actor is untouched', async () => {
    const h = harness();
    h.request('A', ['a1'], 'r1');
    await turn();
    h.request('A', ['a2'], 'r2');
    h.request('B', ['b1'], 'r3');
    await turn();
    h.request('A', ['a1'], 'r4'); // held: a1 is in flight
    h.request('B', ['b2'], 'r5');
    await turn();
    h.flights[1]!.land();
    await turn();
    h.flights[0]!.fail(new Error('connection lost'));
    await turn();
    assert.deepEqual(h.lost, [['A']]);
    assert.deepEqual(h.log.slice(0, 4), ['r3 ok', 'r1 UNAVAILABLE', 'r2 UNAVAILABLE', 'r4 UNAVAILABLE']);
    assert.deepEqual(h.events, ['r3'], 'no event of a failed request, nor of one resting on it');
    // A's held record was dropped with it; B's went on.
    const sent = h.flights.slice(2).flatMap((f) => f.records.map((r) => (r.kind === 'update' ? r.id : '')));
    assert.deepEqual(sent, ['b2']);
    h.flights[2]!.land();
    await turn();
    assert.deepEqual(h.log.slice(4), ['r5 ok']);
    await h.journal.idle();
  });

  test('the second of two groups fails while the first is in flight: the first still answers, the second fails', async () => {
    const h = harness();
    h.request('A', ['a1'], 'r1');
    await turn();
    h.request('A', ['a2'], 'r2');
    await turn();
    h.flights[1]!.fail(new AppError('SHARD_MOVED', 'moved'));
    await turn();
    assert.deepEqual(h.log, [], 'r2 answers after r1, even to fail');
    h.flights[0]!.land();
    await turn();
    assert.deepEqual(h.log, ['r1 ok', 'r2 UNAVAILABLE']);
    assert.deepEqual(h.lost, [['A']]);
  });

  test('a group refused for one request’s data fails that request alone', async () => {
    const h = harness();
    h.request('A', ['a1'], 'good1');
    h.request('A', ['bad'], 'bad');
    h.request('A', ['a2'], 'good2');
    h.request('B', ['b1'], 'other');
    await turn();
    const faulty = (f: Flight) => f.records.some((r) => r.kind === 'update' && r.id === 'bad');
    // Every commit that carries the bad record is refused as the data's fault; the others land.
    for (let i = 0; i < 20 && h.log.length < 4; i++) {
      for (const f of h.flights.splice(0)) (faulty(f) ? f.fail(DATA_FAULT) : f.land());
      await turn();
    }
    assert.deepEqual(h.log, ['good1 ok', 'bad VALIDATION_ERROR', 'good2 ok', 'other ok']);
    assert.deepEqual(h.lost, [['A']]);
    assert.deepEqual(h.events, ['good1', 'good2', 'other']);
  });

  test('replies resting on one committed row each read a row of their own', async () => {
    // Two requests writing one job in one group (a claim, its lease run out, a claim again): the store returns the row
    // once, both replies read it, and a reply leaves for the main thread as it is (inline-thread.ts).
    const h = harness();
    const read: Array<Record<string, unknown> | undefined> = [];
    for (const t of [1_001, 1_002]) {
      h.journal.write('A', upd('j1'), t);
      h.journal.after('A', { ok: (out) => read.push(out.rows.get('j1')), fail: () => {} }, t);
    }
    await turn();
    assert.equal(h.flights.length, 1, 'one group');
    h.flights[0]!.land({ j1: { id: 'j1', status: 'processing', payload: { n: 1 } } });
    await turn();
    const [a, b] = read;
    assert.ok(a && b);
    assert.notEqual(a, b);
    a.status = 'changed by its receiver';
    delete a.payload;
    assert.deepEqual(b, { id: 'j1', status: 'processing', payload: { n: 1 } });
  });

  test('after(null) waits for every actor', async () => {
    const h = harness();
    h.request('A', ['a1'], 'r1');
    h.request('B', ['b1'], 'r2');
    let settled = false;
    h.journal.after(null, { ok: () => (settled = true), fail: () => (settled = true) }, 0);
    await turn();
    assert.equal(settled, false);
    h.flights[0]!.land();
    await turn();
    assert.equal(settled, true);
  });
});
