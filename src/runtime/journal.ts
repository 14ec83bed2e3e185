// The write-ahead journal of one actor thread, with group commit.
//
// Actors write records as they change state; replies wait with `after`. While a commit is in flight, every
// new record and reply joins the next group, which is committed as one statement when the flight lands, so
// the batch grows with the load instead of the commit count. A reply is released only once everything
// written before it is committed (a reply that wrote nothing still waits: it may describe state an
// in-flight batch has not made durable yet).
//
// A failed commit fails its group and the group queued behind it (which may build on it) with 503; the
// actors they touched are handed to `onLost` to be dropped and rebuilt from the store, which is the roll-back.
import { AppError } from '../errors.js';
import type { CommitOutput, DomainEvent, JournalRecord } from '../actors/records.js';

export interface Waiting {
  ok(out: CommitOutput): void;
  fail(err: AppError): void;
}

interface Group {
  records: JournalRecord[];
  actors: Set<string>;
  replies: Waiting[];
  /** Published once the group is committed; dropped with it when the commit fails. */
  events: DomainEvent[];
}

const EMPTY: CommitOutput = { rows: new Map(), inserted: new Set() };
const newGroup = (): Group => ({ records: [], actors: new Set(), replies: [], events: [] });

export class Journal {
  private current = newGroup();
  private inflight: Group | null = null;
  private flushQueued = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly commit: (records: JournalRecord[]) => Promise<CommitOutput>,
    private readonly onLost: (actors: Set<string>, cause: unknown) => void,
    private readonly publish: (events: DomainEvent[]) => void,
    /** Each commit's size and duration, for metrics. */
    private readonly observe: (records: number, ms: number, ok: boolean) => void = () => {},
  ) {}

  emit(event: DomainEvent): void {
    this.current.events.push(event);
  }

  write(actor: string, rec: JournalRecord): void {
    this.current.records.push(rec);
    this.current.actors.add(actor);
    this.kick();
  }

  after(w: Waiting): void {
    if (this.inflight === null && this.current.records.length === 0) {
      w.ok(EMPTY);
      return;
    }
    this.current.replies.push(w);
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
        for (const w of g.replies) w.ok(EMPTY);
        if (g.events.length > 0) this.publish(g.events);
      }
      this.settleIdle();
      return;
    }
    this.current = newGroup();
    this.inflight = g;
    const started = performance.now();
    this.commit(g.records).then(
      (out) => {
        this.inflight = null;
        this.observe(g.records.length, performance.now() - started, true);
        for (const w of g.replies) w.ok(out);
        if (g.events.length > 0) {
          const events = g.events.filter((e) => !(e.type === 'job' && e.ifInserted && !out.inserted.has(e.job_id)));
          if (events.length > 0) this.publish(events);
        }
        this.flush();
      },
      (err: unknown) => {
        this.inflight = null;
        this.observe(g.records.length, performance.now() - started, false);
        const next = this.current;
        this.current = newGroup();
        const lost = new Set([...g.actors, ...next.actors]);
        const error = new AppError('UNAVAILABLE', 'The store did not accept the write; nothing was changed');
        this.onLost(lost, err);
        for (const w of [...g.replies, ...next.replies]) w.fail(error);
        this.flush();
      },
    );
  }

  private settleIdle(): void {
    if (this.inflight !== null || this.current.records.length > 0) return;
    const ws = this.idleWaiters;
    this.idleWaiters = [];
    for (const r of ws) r();
  }
}
