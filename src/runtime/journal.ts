// The write-ahead journal of one actor thread, with pipelined group commit.
//
// Actors write records as they change state; replies and events wait for them (`after`, `emit`). Records queue up
// and go out as one group, one statement, as soon as the thread's turn ends; while `depth` groups are in flight
// the next waits, so the batch grows with the load instead of the commit count. Up to `depth` groups are in
// flight at once, each on its own connection: the actors' CPU, the store's work and the fsync of consecutive
// groups overlap instead of running in series (docs/BENCHMARKS.md says what that bought). A large queue found with
// no group in flight goes out as two groups at once, of whole requests, so that its halves commit side by side.
//
// Two groups in flight at once may commit in either order, so a group never carries a write to a row that a
// group in flight writes too (a job, a queue row, an idempotency key, a day of usage): the request that wants
// to write it waits in the queue, with every later request that touches the same rows, until that group lands.
// Requests are never split: all the records of one request go in one group.
//
// A reply, or an event, is released once every record its actor wrote before it is committed, whichever group
// carried them (a reply that wrote nothing still waits: it may describe state a group in flight has not made
// durable yet). Replies and events of one actor leave in the order they were made; those of different actors
// do not wait for each other. `after(null, …)` waits for everything written so far, by any actor.
//
// Failures. A group the store refuses because of one request's data (the store says whose fault it is:
// `isDataFault`) is committed again without that request, split in halves in order until the offending requests
// are found: only those fail (422), their events are dropped, and their actors are rebuilt from the store; every
// other request of the group, whatever its tenant, is answered as if nothing happened. Any other failure (the
// connection, the server, a fence: another node took a shard over) fails the group with 503, or what `failure`
// says; its actors no longer match the store and what they said since their first record in it may rest on what
// was lost, so their later replies fail too and the records they queued meanwhile are dropped. The actors lost
// either way are handed to `onLost` to be dropped and rebuilt from the store, which is the roll-back; other
// actors' requests are not touched.
import { AppError } from '../errors.js';
import type { CommitOutput, CommitResult, DomainEvent, JournalRecord } from '../actors/records.js';

export interface Waiting {
  ok(out: CommitOutput): void;
  fail(err: AppError): void;
}

/** Requests are numbered by the thread; 0 belongs to no request (timers, replies of nobody's making). */
export type Token = number;

export interface JournalOptions {
  /** Commits the records; `actors[i]` is the actor whose state `records[i]` describes (its shard fences it). */
  commit: (records: JournalRecord[], actors: string[]) => Promise<CommitResult>;
  /** The answer of a group the store did not take for a reason other than its data (default: 503, retry). */
  failure?: (err: unknown) => AppError;
  /** True when the store refused the statement because of the data in it, not because of itself. */
  isDataFault: (err: unknown) => boolean;
  /** Actors whose memory no longer matches the store: drop them, rebuild from rows. */
  onLost: (actors: Set<string>, cause: unknown) => void;
  publish: (events: DomainEvent[]) => void;
  /** Each commit's size and duration, for metrics. */
  observe?: (records: number, ms: number, ok: boolean) => void;
  /** Groups in flight at once (default 2; 1 commits one group at a time). */
  depth?: number;
}

/** A record, numbered in the order it was written. */
interface Rec {
  rec: JournalRecord;
  token: Token;
  actor: string;
  seq: number;
  rows: string[];
}

interface Group {
  recs: Rec[];
  rows: Set<string>;
  actors: Set<string>;
}

/** A reply or an event waiting for the records written before it (`need`: the last of them). */
interface Entry {
  need: number;
  token: Token;
  w: Waiting | null;
  event: DomainEvent | null;
  /** Set when what it rests on was lost: a reply fails with it, an event is dropped. */
  error: AppError | null;
}

/** The records of one actor not yet committed, in order (a group may land before an earlier one). */
class Outstanding {
  private seqs: number[] = [];
  private head = 0;
  private readonly done = new Set<number>();

  add(seq: number): void {
    this.seqs.push(seq);
  }

  settle(seq: number): void {
    this.done.add(seq);
    while (this.head < this.seqs.length && this.done.delete(this.seqs[this.head]!)) this.head++;
    if (this.head > 1024 && this.head * 2 > this.seqs.length) {
      this.seqs = this.seqs.slice(this.head);
      this.head = 0;
    }
  }

  /** The first record not committed yet; Infinity when none is left. */
  get first(): number {
    return this.head < this.seqs.length ? this.seqs[this.head]! : Infinity;
  }
}

/** Whatever actor: `after(null, …)` waits on every actor's records. */
const ANY = '\u0000any';
const EMPTY: CommitOutput = { rows: new Map(), inserted: new Set() };

/** The rows a record writes, which no two groups in flight may share. */
function rowsOf(rec: JournalRecord): string[] {
  switch (rec.kind) {
    case 'queue':
      return [`q\u0000${rec.organization_id}\u0000${rec.name}`];
    case 'usage':
      return [`u\u0000${rec.organization_id}\u0000${rec.day}`];
    case 'insert':
      // A keyed insert also takes over the key of an older row (commitBatch's `fr`): keyed inserts keep their order.
      return rec.conflictKey && rec.job.idempotency_key !== null
        ? [`j\u0000${rec.job.id}`, `k\u0000${rec.job.organization_id}\u0000${rec.job.idempotency_key}`]
        : [`j\u0000${rec.job.id}`];
    case 'update':
      return [`j\u0000${rec.id}`];
  }
}

/** Records queued, with no group in flight, from which the first group takes only half (see flush). */
const SPLIT_RECORDS = 256;

export class Journal {
  private readonly depth: number;
  private seq = 0;
  private current: Rec[] = [];
  private readonly inflight = new Set<Group>();
  /** Rows written by the groups in flight (a row may be in only one of them). */
  private readonly busy = new Set<string>();
  private readonly outstanding = new Map<string, Outstanding>();
  private readonly waiting = new Map<string, Entry[]>();
  /** What committed groups returned, kept until every reply that may read it has been released. */
  private readonly rows = new Map<string, { row: Record<string, unknown>; group: Settled }>();
  private readonly inserted = new Map<string, Settled>();
  private settled: Settled[] = [];
  private readonly view: CommitOutput;
  private flushQueued = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly o: JournalOptions) {
    this.depth = Math.max(1, o.depth ?? 2);
    const rows = this.rows;
    const inserted = this.inserted;
    // Replies read the rows of the groups they rest on through this one view (claims: the claimed rows). Each read
    // is a row of its own: two replies may rest on one committed row (a job claimed, its lease run out and claimed
    // again before the group went out), the map keeps it for the others, and a reply is handed to the main thread
    // as it is (inline-thread.ts). Shallow: a row's JSON values (payload, result, errors, tags, progress) are never
    // changed in place, here, by the actors or by the main thread.
    const own = (row: Record<string, unknown> | undefined) => (row === undefined ? undefined : { ...row });
    this.view = { rows: { get: (id: string) => own(rows.get(id)?.row) }, inserted: { has: (id: string) => inserted.has(id) } };
  }

  emit(actor: string, event: DomainEvent, token: Token): void {
    this.wait(actor, { need: this.seq, token, w: null, event, error: null });
  }

  write(actor: string, rec: JournalRecord, token: Token): void {
    const seq = ++this.seq;
    this.current.push({ rec, token, actor, seq, rows: rowsOf(rec) });
    let o = this.outstanding.get(actor);
    if (!o) this.outstanding.set(actor, (o = new Outstanding()));
    o.add(seq);
    this.kick();
  }

  /** Answers once everything `actor` wrote so far is committed (null: everything any actor wrote so far). */
  after(actor: string | null, w: Waiting, token: Token): void {
    this.wait(actor ?? ANY, { need: this.seq, token, w, event: null, error: null });
  }

  /** Resolves once nothing is queued, in flight or waiting (shutdown, clock ticks in tests). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return this.inflight.size === 0 && this.current.length === 0 && this.waiting.size === 0;
  }

  private wait(actor: string, e: Entry): void {
    const list = this.waiting.get(actor);
    if (list) {
      list.push(e);
      return;
    }
    if (this.firstOutstanding(actor) > e.need) {
      // Nothing it rests on is pending: answered now (an event still goes out with the turn's others).
      if (e.w) e.w.ok(EMPTY);
      else this.o.publish([e.event!]);
      return;
    }
    this.waiting.set(actor, [e]);
  }

  private firstOutstanding(actor: string): number {
    if (actor !== ANY) return this.outstanding.get(actor)?.first ?? Infinity;
    let first = Infinity;
    for (const o of this.outstanding.values()) first = Math.min(first, o.first);
    return first;
  }

  private kick(): void {
    if (this.flushQueued || this.inflight.size >= this.depth) return;
    this.flushQueued = true;
    // setImmediate lets every message already delivered to this thread join the group.
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  /**
   * Sends groups while there is room in flight and records that touch no row in flight. With every slot free and
   * a large queue (a burst of batches after a quiet moment, or a stream's completes and its claim landing together),
   * the first group takes about half of it, so that the two halves commit side by side on two connections instead
   * of one after the other: a commit of a thousand records is tens of milliseconds of the store's work, during which
   * nothing else would be written.
   */
  private flush(): void {
    while (this.inflight.size < this.depth && this.current.length > 0) {
      const split = this.inflight.size === 0 && this.depth > 1 && this.current.length >= SPLIT_RECORDS;
      const g = this.take(split ? Math.ceil(this.current.length / 2) : Infinity);
      if (g === null) break;
      this.send(g);
    }
    if (this.isIdle()) this.settleIdle();
  }

  /**
   * The next group: every queued request whose rows no group in flight (nor an earlier queued request kept back)
   * writes, in order, until the group holds `limit` records or more (whole requests: a request is never split).
   */
  private take(limit: number): Group | null {
    const recs: Rec[] = [];
    const kept: Rec[] = [];
    const held = new Set<string>();
    const rows = new Set<string>();
    const actors = new Set<string>();
    let i = 0;
    const all = this.current;
    while (i < all.length) {
      if (recs.length >= limit) {
        for (; i < all.length; i++) kept.push(all[i]!);
        break;
      }
      // One request's records are consecutive: an actor runs one request at a time, synchronously.
      let j = i + 1;
      while (j < all.length && all[j]!.token === all[i]!.token && all[j]!.actor === all[i]!.actor) j++;
      let blocked = false;
      for (let k = i; k < j && !blocked; k++) for (const r of all[k]!.rows) if (this.busy.has(r) || held.has(r)) blocked = true;
      for (let k = i; k < j; k++) {
        const r = all[k]!;
        if (blocked) {
          kept.push(r);
          for (const row of r.rows) held.add(row);
        } else {
          recs.push(r);
          for (const row of r.rows) rows.add(row);
          actors.add(r.actor);
        }
      }
      i = j;
    }
    if (recs.length === 0) return null;
    this.current = kept;
    return { recs, rows, actors };
  }

  private send(g: Group): void {
    this.inflight.add(g);
    for (const r of g.rows) this.busy.add(r);
    this.commitGroup(g).then(
      ({ out, culprits }) => this.landed(g, out, culprits),
      (err: unknown) => this.failed(g, err),
    );
  }

  private landed(g: Group, out: CommitResult, culprits: Set<Token>): void {
    this.release(g);
    const kept: Settled = { firstSeq: new Map(), ids: [] };
    for (const r of g.recs) if (!kept.firstSeq.has(r.actor)) kept.firstSeq.set(r.actor, r.seq);
    for (const [id, row] of out.rows) {
      this.rows.set(id, { row, group: kept });
      kept.ids.push(id);
    }
    for (const id of out.inserted) {
      this.inserted.set(id, kept);
      kept.ids.push(id);
    }
    this.settled.push(kept);
    if (culprits.size > 0) {
      // Only the offenders fail: every other request of the group was committed without them, whatever its actor.
      const refused = new AppError('VALIDATION_ERROR', 'The request holds data the store cannot keep; nothing of it was written', {
        details: [{ field: '(body)', message: 'holds data the store cannot keep' }],
      });
      const lost = new Set<string>();
      for (const r of g.recs) if (culprits.has(r.token)) lost.add(r.actor);
      for (const actor of lost) for (const e of this.waiting.get(actor) ?? []) if (culprits.has(e.token)) e.error = refused;
      this.o.onLost(lost, 'a request held data the store refused');
    }
    this.afterSettle(g.actors);
  }

  /**
   * Nothing of the group was written. Its actors no longer match the store, and everything they said since their
   * first record in it may rest on what was lost: their replies made since then fail too, and the records they
   * queued since then are dropped (their requests fail with them).
   */
  private failed(g: Group, err: unknown): void {
    this.release(g);
    const error = this.o.failure?.(err) ?? new AppError('UNAVAILABLE', 'The store did not accept the write; nothing was changed');
    const since = new Map<string, number>();
    for (const r of g.recs) if (!since.has(r.actor)) since.set(r.actor, r.seq);
    for (const [actor, from] of since) for (const e of this.waiting.get(actor) ?? []) if (e.need >= from && e.error === null) e.error = error;
    const lostFrom = (r: Rec) => (since.get(r.actor) ?? Infinity) <= r.seq;
    if (this.current.some(lostFrom)) {
      for (const r of this.current) if (lostFrom(r)) this.outstanding.get(r.actor)?.settle(r.seq);
      this.current = this.current.filter((r) => !lostFrom(r));
    }
    this.o.onLost(new Set(since.keys()), err);
    this.afterSettle(g.actors);
  }

  /** The group is no longer in flight: its rows are free, its records no longer outstanding. */
  private release(g: Group): void {
    this.inflight.delete(g);
    for (const r of g.rows) this.busy.delete(r);
    for (const r of g.recs) this.outstanding.get(r.actor)?.settle(r.seq);
  }

  /** Releases what the settled group let through, forgets rows nobody can read any more, and sends what is next. */
  private afterSettle(actors: Set<string>): void {
    const events: DomainEvent[] = [];
    for (const actor of [...actors, ANY]) this.releaseReady(actor, events);
    for (const actor of actors) if (this.outstanding.get(actor)?.first === Infinity) this.outstanding.delete(actor);
    if (events.length > 0) this.o.publish(events);
    this.prune();
    this.flush();
  }

  private releaseReady(actor: string, events: DomainEvent[]): void {
    const list = this.waiting.get(actor);
    if (!list) return;
    const first = this.firstOutstanding(actor);
    let n = 0;
    while (n < list.length && list[n]!.need < first) n++;
    if (n === 0) return;
    let ready = list;
    if (n === list.length) this.waiting.delete(actor);
    else ready = list.splice(0, n);
    for (const e of ready) {
      if (e.w) {
        if (e.error) e.w.fail(e.error);
        else e.w.ok(this.view);
      } else if (e.error === null && !(e.event!.type === 'job' && e.event!.ifInserted && !this.inserted.has(e.event!.job_id))) {
        events.push(e.event!);
      }
    }
  }

  /**
   * A settled group's rows go once no reply that may read them is waiting: a reply reads only rows written in the
   * turn that made it (its claim, the waiter it fed), so only a reply of one of the group's actors made after the
   * group's first record of that actor can.
   */
  private prune(): void {
    if (this.settled.length === 0) return;
    const keep: Settled[] = [];
    for (const s of this.settled) {
      let readable = false;
      for (const [actor, seq] of s.firstSeq) {
        const list = this.waiting.get(actor);
        if (list !== undefined && list[list.length - 1]!.need >= seq) readable = true;
      }
      if (readable) {
        keep.push(s);
        continue;
      }
      for (const id of s.ids) {
        if (this.rows.get(id)?.group === s) this.rows.delete(id);
        if (this.inserted.get(id) === s) this.inserted.delete(id);
      }
    }
    this.settled = keep;
  }

  /** Commits a group whole, or, when one request's data sinks it, without the requests at fault. */
  private async commitGroup(g: Group): Promise<{ out: CommitResult; culprits: Set<Token> }> {
    try {
      return { out: await this.timed(g.recs), culprits: new Set() };
    } catch (err) {
      if (!this.o.isDataFault(err)) throw err;
    }
    const order: Token[] = [];
    const byToken = new Map<Token, Rec[]>();
    for (const r of g.recs) {
      let part = byToken.get(r.token);
      if (!part) {
        byToken.set(r.token, (part = []));
        order.push(r.token);
      }
      part.push(r);
    }
    const out: CommitResult = { rows: new Map(), inserted: new Set() };
    const culprits = new Set<Token>();
    const attempt = async (tokens: Token[], knownBad: boolean): Promise<void> => {
      if (tokens.length === 0) return;
      if (!knownBad) {
        try {
          const o = await this.timed(tokens.flatMap((t) => byToken.get(t)!));
          for (const [id, row] of o.rows) out.rows.set(id, row);
          for (const id of o.inserted) out.inserted.add(id);
          return;
        } catch (err) {
          if (!this.o.isDataFault(err)) throw err;
        }
      }
      if (tokens.length === 1) {
        culprits.add(tokens[0]!);
        return;
      }
      const mid = tokens.length >> 1;
      await attempt(tokens.slice(0, mid), false);
      await attempt(tokens.slice(mid), false);
    };
    await attempt(order, true);
    return { out, culprits };
  }

  private async timed(recs: Rec[]): Promise<CommitResult> {
    const started = performance.now();
    try {
      const out = await this.o.commit(
        recs.map((r) => r.rec),
        recs.map((r) => r.actor),
      );
      this.o.observe?.(recs.length, performance.now() - started, true);
      return out;
    } catch (err) {
      this.o.observe?.(recs.length, performance.now() - started, false);
      throw err;
    }
  }

  private settleIdle(): void {
    const ws = this.idleWaiters;
    this.idleWaiters = [];
    for (const r of ws) r();
  }
}

/** A committed group's output, kept while replies may read it: its first record per actor, and the ids it returned. */
interface Settled {
  firstSeq: Map<string, number>;
  ids: string[];
}
