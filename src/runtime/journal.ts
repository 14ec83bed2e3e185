// The write-ahead journal of one actor thread, with group commit.
//
// Actors write records as they change state; replies wait with `after`. While a commit is in flight, every
// new record and reply joins the next group, which is committed as one statement when the flight lands, so
// the batch grows with the load instead of the commit count. A reply is released only once everything
// written before it is committed (a reply that wrote nothing still waits: it may describe state an
// in-flight batch has not made durable yet).
//
// Every record, reply and event carries the token of the request it belongs to. A group the store refuses
// because of one request's data (the store says whose fault it is: `isDataFault`) is committed again without
// that request, split in halves in order until the offending requests are found (each attempt keeps the
// relative order of requests, so a later request's write never lands before an earlier one's). Only those
// requests fail (422), their events are dropped, and the actors they touched are rebuilt from the store; every
// other request in the group, whatever its tenant, is answered as if nothing happened.
//
// Any other failure (the connection, the server, a fence: another node took a shard over) fails the group and
// the group queued behind it (which may build on it) with 503, or SHARD_MOVED for a fence (`failure`); the
// actors they touched are handed to `onLost` to be dropped and rebuilt from the store, which is the roll-back.
import { AppError } from '../errors.js';
import type { CommitOutput, DomainEvent, JournalRecord } from '../actors/records.js';

export interface Waiting {
  ok(out: CommitOutput): void;
  fail(err: AppError): void;
}

/** Requests are numbered by the thread; 0 belongs to no request (timers, replies of nobody's making). */
export type Token = number;

interface Group {
  records: JournalRecord[];
  /** Per record: the request that wrote it, and the actor whose state it describes. */
  owners: Token[];
  keys: string[];
  replies: Array<{ w: Waiting; token: Token }>;
  /** Published once the group is committed; dropped with it when the commit fails. */
  events: Array<{ event: DomainEvent; token: Token }>;
}

export interface JournalOptions {
  /** Commits the records; `actors[i]` is the actor whose state `records[i]` describes (its shard fences it). */
  commit: (records: JournalRecord[], actors: string[]) => Promise<CommitOutput>;
  /** The answer of a group the store did not take for a reason other than its data (default: 503, retry). */
  failure?: (err: unknown) => AppError;
  /** True when the store refused the statement because of the data in it, not because of itself. */
  isDataFault: (err: unknown) => boolean;
  /** Actors whose memory no longer matches the store: drop them, rebuild from rows. */
  onLost: (actors: Set<string>, cause: unknown) => void;
  publish: (events: DomainEvent[]) => void;
  /** Each commit's size and duration, for metrics. */
  observe?: (records: number, ms: number, ok: boolean) => void;
}

const EMPTY: CommitOutput = { rows: new Map(), inserted: new Set() };
const newGroup = (): Group => ({ records: [], owners: [], keys: [], replies: [], events: [] });

export class Journal {
  private current = newGroup();
  private inflight: Group | null = null;
  private flushQueued = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly o: JournalOptions) {}

  emit(event: DomainEvent, token: Token): void {
    this.current.events.push({ event, token });
  }

  write(actor: string, rec: JournalRecord, token: Token): void {
    this.current.records.push(rec);
    this.current.owners.push(token);
    this.current.keys.push(actor);
    this.kick();
  }

  after(w: Waiting, token: Token): void {
    if (this.inflight === null && this.current.records.length === 0) {
      w.ok(EMPTY);
      return;
    }
    this.current.replies.push({ w, token });
    this.kick();
  }

  /** Resolves once nothing is queued or in flight (shutdown, clock ticks in tests). */
  idle(): Promise<void> {
    if (this.inflight === null && this.current.records.length === 0 && this.current.replies.length === 0) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private kick(): void {
    if (this.flushQueued || this.inflight !== null) return;
    this.flushQueued = true;
    // setImmediate lets every message already delivered to this thread join the batch.
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.inflight !== null) return;
    const g = this.current;
    if (g.records.length === 0) {
      if (g.replies.length > 0 || g.events.length > 0) {
        this.current = newGroup();
        for (const r of g.replies) r.w.ok(EMPTY);
        if (g.events.length > 0) this.publish(g.events, EMPTY, new Set());
      }
      this.settleIdle();
      return;
    }
    this.current = newGroup();
    this.inflight = g;
    this.commitGroup(g).then(
      ({ out, culprits }) => {
        this.inflight = null;
        if (culprits.size > 0) {
          const lost = new Set<string>();
          g.owners.forEach((t, i) => culprits.has(t) && lost.add(g.keys[i]!));
          this.o.onLost(lost, 'a request held data the store refused');
        }
        const refused = new AppError('VALIDATION_ERROR', 'The request holds data the store cannot keep; nothing of it was written', {
          details: [{ field: '(body)', message: 'holds data the store cannot keep' }],
        });
        for (const r of g.replies) {
          if (culprits.has(r.token)) r.w.fail(refused);
          else r.w.ok(out);
        }
        this.publish(g.events, out, culprits);
        this.flush();
      },
      (err: unknown) => {
        this.inflight = null;
        const next = this.current;
        this.current = newGroup();
        const lost = new Set([...g.keys, ...next.keys]);
        const error = this.o.failure?.(err) ?? new AppError('UNAVAILABLE', 'The store did not accept the write; nothing was changed');
        this.o.onLost(lost, err);
        for (const r of [...g.replies, ...next.replies]) r.w.fail(error);
        this.flush();
      },
    );
  }

  /** Commits a group whole, or, when one request's data sinks it, without the requests at fault. */
  private async commitGroup(g: Group): Promise<{ out: CommitOutput; culprits: Set<Token> }> {
    try {
      return { out: await this.timed(g.records, g.keys), culprits: new Set() };
    } catch (err) {
      if (!this.o.isDataFault(err)) throw err;
    }
    const order: Token[] = [];
    const byToken = new Map<Token, { records: JournalRecord[]; keys: string[] }>();
    g.records.forEach((rec, i) => {
      const t = g.owners[i]!;
      let part = byToken.get(t);
      if (!part) {
        byToken.set(t, (part = { records: [], keys: [] }));
        order.push(t);
      }
      part.records.push(rec);
      part.keys.push(g.keys[i]!);
    });
    const out: CommitOutput = { rows: new Map(), inserted: new Set() };
    const culprits = new Set<Token>();
    const attempt = async (tokens: Token[], knownBad: boolean): Promise<void> => {
      if (tokens.length === 0) return;
      if (!knownBad) {
        try {
          const parts = tokens.map((t) => byToken.get(t)!);
          const o = await this.timed(
            parts.flatMap((p) => p.records),
            parts.flatMap((p) => p.keys),
          );
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

  private async timed(records: JournalRecord[], actors: string[]): Promise<CommitOutput> {
    const started = performance.now();
    try {
      const out = await this.o.commit(records, actors);
      this.o.observe?.(records.length, performance.now() - started, true);
      return out;
    } catch (err) {
      this.o.observe?.(records.length, performance.now() - started, false);
      throw err;
    }
  }

  private publish(events: Group['events'], out: CommitOutput, culprits: Set<Token>): void {
    const kept: DomainEvent[] = [];
    for (const { event, token } of events) {
      if (culprits.has(token)) continue;
      if (event.type === 'job' && event.ifInserted && !out.inserted.has(event.job_id)) continue;
      kept.push(event);
    }
    if (kept.length > 0) this.o.publish(kept);
  }

  private settleIdle(): void {
    if (this.inflight !== null || this.current.records.length > 0) return;
    const ws = this.idleWaiters;
    this.idleWaiters = [];
    for (const r of ws) r();
  }
}
