// ActorHost — the actors of one actor thread: hosts the QueueActors and OrgActors of its shards, runs their
// messages one at a time, keeps their timers and commits their journal. The thread entry (actor-thread.ts)
// only connects it to a port; a test can drive a host directly, without a thread.
//
// An actor is rebuilt from the store on first use (messages wait in order while it loads) and at boot for every
// queue with live jobs. When a commit fails, the actors it touched are dropped: the next message rebuilds them
// from what the store really holds.
//
// Bounded queue actors (QUEUE_WINDOW, src/actors/queue/window.ts): a queue actor holds the head of its ready jobs.
// The host reads for it in slices of FILL_SLICE rows with a turn of the event loop between them, after the actor's
// writes are committed. The first slice of its window at rebuild (`fill`) and the paged-out jobs a request names or
// whose expiry came (`adopt`, before the request runs) are read with the actor's own messages waiting in order
// (suspended): nothing else runs on it in between, so what it reads is what it left in the store. A window that runs
// below half (after a rebuild, at once) is topped up while the actor serves on from what it holds (`refill`): the
// jobs it pages out meanwhile are recorded and merged with the rows (QueueActor.refilled); an adoption, or a request
// that finds a window empty, waits for that refill.
//
// Shards: a host serves the shards of its node that map to its thread (`threadOf`), under the epochs the node
// holds them by. A message for any other shard is answered SHARD_MOVED (its sender sends it to the owner), and
// every group commit carries the epochs of the shards it writes: a commit of a shard another node took over writes
// nothing (`Fence`), answers SHARD_MOVED, and drops the actors it touched. A host built without a node id serves
// every shard unfenced (tests that drive a host alone).
//
// Everything an actor does runs "as" that actor (`run`): its journal records are tagged with its key and the
// current request's token, and its timer is re-armed after. That includes the work a reply does once its commit
// lands (a keyed insert that won its key becomes claimable, a revived job is placed): it runs as the actor too.
//
// Per-queue metrics (GET /api/v1/metrics) are counted here, from the events of each commit as it is published, and
// kept per queue while its shard is served here (queue-metrics.ts); the `metrics` operation reads them without
// loading the actor.
import type { Clock } from '../clock.js';
import { actorHosts, type Config } from '../config.js';
import { AppError } from '../errors.js';
import { Heap } from '../actors/heap.js';
import { JobIds } from '../actors/ids.js';
import { QueueActor, RowBudget, type QueueSettings, type Waiter } from '../actors/queue/queue-actor.js';
import { QueueMetricsBook } from '../actors/queue/queue-metrics.js';
import { OrgActor, utcDay } from '../actors/org/org-actor.js';
import type { DomainEvent, Effects, JournalRecord, Reply } from '../actors/records.js';
import type { Store } from '../io/db/store.js';
import { analyzeJobsIfGrown } from '../io/db/sql/analyzeJobsIfGrown.js';
import { commitBatch, FencedError, type Fence } from '../io/db/sql/commitBatch.js';
import { liveQueues } from '../io/db/sql/liveQueues.js';
import { loadOrganization } from '../io/db/sql/loadOrganization.js';
import { countOrganizationJobs } from '../io/db/sql/countOrganizationJobs.js';
import { loadQueue } from '../io/db/sql/loadQueue.js';
import { readyCount } from '../io/db/sql/readyCount.js';
import { readyJobs } from '../io/db/sql/readyJobs.js';
import { readyJobsById } from '../io/db/sql/readyJobsById.js';
import { readyJobsByKey } from '../io/db/sql/readyJobsByKey.js';
import type { Refill } from '../actors/queue/window.js';
import type { LiveJob } from '../actors/queue/queue-actor.js';
import { isDataFault } from '../io/db/faults.js';
import { Journal, type Token } from './journal.js';
import {
  nestsDeeper,
  ORG_ACTOR,
  REPLY_MAX_DEPTH,
  type Ask,
  type CommitStats,
  type OrgAsk,
  type OrgOp,
  type OrgOps,
  type QueueAsk,
  type QueueOp,
  type QueueOps,
  type ThreadIn,
  type ThreadOut,
} from './protocol.js';
import { actorKey, shardOf, threadOf } from './shard.js';

export interface HostOptions {
  index: number;
  threads: number;
  /** This node's id in the cluster, whose shard epochs fence the commits; null: every shard, no fence. */
  nodeId: string | null;
  config: Config;
  store: Store;
  /**
   * Where group commits go (default: `store`): connections of their own, so that reads that take long (a rebuild's
   * million-row counts, a refill) never hold a commit, and every reply of the thread, back waiting for a connection.
   */
  commits?: Store;
  /**
   * Where the counts nobody waits for go (default: `store`): connections without parallel workers, so that counting
   * a million rows keeps one PostgreSQL core busy, not both of a small machine (docs/BENCHMARKS.md).
   */
  background?: Store;
  clock: Clock;
  /** Posts a batch of replies, events and statistics to the main thread. */
  post(batch: ThreadOut[]): void;
}

/** How a queue operation answers: once, after the commit of everything written before the answer. */
interface Call<R> {
  answer(reply: Reply<R>): void;
  /** The message id and the request's token, for a long poll that answers later. */
  id: number;
  token: Token;
  /** The node that forwarded the message, if another did. */
  via?: string;
}

type QueueHandlers = {
  [K in QueueOp]: (actor: QueueActor, args: QueueOps[K]['args'], fx: Effects, call: Call<QueueOps[K]['reply']>) => void;
};
type OrgHandlers = { [K in OrgOp]: (actor: OrgActor, args: OrgOps[K]['args'], fx: Effects) => OrgOps[K]['reply'] };

type Actor = QueueActor | OrgActor;
/** A message waiting for its suspended actor; `adopted`: the jobs it names were read for it already. */
interface Held {
  m: Ask;
  adopted: boolean;
}
/**
 * `busy`: the host reads for the actor; its messages wait here, in order. `tick`: its timer came meanwhile.
 * `refilling`: a refill of its windows is read while it serves on (refillIfLow). `uncounted`: an organization actor's
 * jobs are not counted yet; the messages that wait for the count (countJobs), which `count` starts if it waits its turn.
 */
interface Live {
  actor: Actor;
  busy: Held[] | null;
  tick: boolean;
  refilling?: Promise<void> | null;
  uncounted?: OrgAsk[] | null;
  count?: (() => void) | null;
}
type Slot = Live | { loading: Ask[] };

/** Rows read per statement when a window is filled: a slice, then a turn for the thread's other actors. */
const FILL_SLICE = 500;
/** Queues a thread rebuilds at once at boot or when it takes shards over. */
const BOOT_LOADS = 4;
/** Jobs a thread inserts before it first asks whether the planner's statistics still fit the table (analyzeJobsIfGrown). */
const GROWTH_CHECK = 1_000;

interface Wake {
  at: number;
  key: string;
  actor: QueueActor;
}

const EMPTY_CLAIM: Reply<QueueOps['claim']['reply']> = () => ({ jobs: [] });
const moved = (): AppError => new AppError('SHARD_MOVED', 'This queue is served by another node now');
const MOVED_CLAIM: Reply<QueueOps['claim']['reply']> = () => {
  throw moved();
};

export class ActorHost {
  private readonly actors = new Map<string, Slot>();
  /** Per-queue metrics of the queues served here, from committed events (they outlive a rebuilt actor). */
  private readonly counted = new QueueMetricsBook(actorKey);
  private readonly ids = new JobIds();
  private readonly journal: Journal;
  private readonly fx: Effects;
  private readonly settings: QueueSettings;
  /** The actor running now, and the request it runs for: its records, events and reply share the token. */
  private currentKey = '';
  private currentToken: Token = 0;
  private lastToken: Token = 0;
  /** The node is stopping: its parked claims were answered, and claims that find nothing no longer wait. */
  private unparked = false;
  /**
   * Actors dropped while writes made for them are still queued: their rebuild reads the store only once those
   * are committed (or failed), so it never misses a change the dropped actor already acknowledged.
   */
  private readonly settling = new Map<string, Promise<void>>();
  private outbox: ThreadOut[] = [];
  private stats: CommitStats = { records: [], ms: [], failed: 0 };
  private readonly statsTimer: NodeJS.Timeout;
  // Timers: one heap of wake-ups for all queue actors of the host.
  private readonly wakes = new Heap<Wake>((a, b) => a.at < b.at);
  private readonly armed = new WeakMap<QueueActor, number>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  /** The shards served here, by epoch; null: every shard, unfenced (no node id). */
  private owned: Map<number, string> | null;
  /** Reads in flight for actors: rebuilds, fills, adoptions (a manual clock's tick waits for them). */
  private readonly works = new Set<Promise<void>>();
  /** Rebuilds of the queues this thread serves (boot, shards taken over) in flight: the node is not ready meanwhile. */
  private rebuilding = 0;
  /** Counts nobody waits for, in their turn (later). */
  private readonly counts: Array<() => Promise<void>> = [];
  private counting = false;
  /** Ready counts of rebuilt queues in flight (load): a count that can wait its turn also waits for them. */
  private readyCounts = 0;
  /** Jobs this thread inserted since the statistics were last checked, the rows they counted then, the check running. */
  private inserted = 0;
  private analyzed = 0;
  private analyzing: Promise<void> | null = null;
  private readonly background: Store;

  constructor(private readonly o: HostOptions) {
    const { clock, config } = o;
    this.background = o.background ?? o.store;
    this.owned = o.nodeId === null ? null : new Map();
    this.settings = {
      retryUnitMs: config.retryUnitMs,
      defaultMaxRetries: config.defaultMaxRetries,
      defaultTimeoutSeconds: config.defaultTimeoutSeconds,
      window: config.queueWindow,
      ...(config.rowCacheBytes > 0 ? { rows: new RowBudget(Math.floor(config.rowCacheBytes / actorHosts(config.actorThreads))) } : {}),
    };
    const ids = this.ids;
    const host = this;
    this.fx = {
      get now() {
        return clock.now();
      },
      write: (rec: JournalRecord) => host.journal.write(host.currentKey, rec, host.currentToken),
      emit: (event: DomainEvent) => host.journal.emit(host.currentKey, event, host.currentToken),
      newJobId: () => ids.next(clock.now()),
    };
    this.journal = new Journal({
      depth: config.commitPipeline,
      commit: (records, actors) => {
        const done = commitBatch(o.commits ?? o.store, records, this.fence(actors));
        // Counted once written, so that the statistics taken next see them.
        done.then(() => this.grew(records), () => {});
        return done;
      },
      failure: (err) => {
        if (!(err instanceof FencedError)) return new AppError('UNAVAILABLE', 'The store did not accept the write; nothing was changed');
        this.send({ id: -3, ok: true, fenced: err.shards });
        return new AppError('SHARD_MOVED', 'Another node took this queue over; nothing was written');
      },
      isDataFault,
      onLost: (lost, cause) => this.lose(lost, cause),
      publish: (events) => {
        this.counted.observe(events);
        this.send({ id: -1, ok: true, events });
      },
      observe: (records, ms, committed) => {
        if (!committed) this.stats.failed++;
        else {
          this.stats.records.push(records);
          this.stats.ms.push(ms);
        }
      },
    });
    // Commit sizes and durations go to the main thread (metrics) once a second, not once per commit.
    this.statsTimer = setInterval(() => {
      if (this.stats.records.length === 0 && this.stats.failed === 0) return;
      this.send({ id: -2, ok: true, stats: this.stats });
      this.stats = { records: [], ms: [], failed: 0 };
    }, 1_000);
    this.statsTimer.unref();
  }

  /** A host serving every shard loads its queues with live jobs now; one of a cluster, when its shards come. */
  async boot(): Promise<void> {
    if (this.owned === null) await this.loadLive(() => true);
    else this.send({ id: -4, ok: true, loading: false });
  }

  /**
   * Loads every queue of the given shards that has live jobs, so that their timers (lease expiries, delayed
   * jobs) run without waiting for a message: at boot, and when this node takes a shard over.
   */
  private loadLive(wanted: (shard: number) => boolean): Promise<void> {
    // A manual clock's tick waits for the rebuild, as for any read in flight (`quiet`).
    return this.track(this.rebuildLive(wanted));
  }

  private async rebuildLive(wanted: (shard: number) => boolean): Promise<void> {
    this.rebuilt(+1);
    try {
      const mine = (await liveQueues(this.o.store)).filter((q) => {
        const shard = this.shardOfKey(actorKey(q.organization_id, q.queue_name));
        return threadOf(shard, this.o.threads) === this.o.index && wanted(shard);
      });
      // A few at a time: ten thousand queues loading at once queued their statements past the pool's wait limit
      // (503s, rebuilds again). A request for a queue not reached yet loads it at once, like every first use.
      let next = 0;
      const loader = async (): Promise<void> => {
        while (next < mine.length) {
          const q = mine[next++]!;
          const key = actorKey(q.organization_id, q.queue_name);
          if (this.serves(this.shardOfKey(key)) && !this.actors.has(key)) await this.load(key, q.organization_id, q.queue_name, null);
        }
      };
      // Not awaited by boot: the thread serves (other queues, and these once loaded) while they load.
      this.rebuilt(+1);
      void this.track(Promise.allSettled(Array.from({ length: BOOT_LOADS }, loader)).then(() => this.rebuilt(-1)));
    } finally {
      this.rebuilt(-1);
    }
  }

  /** Counts rebuilds in flight; the main thread hears when the thread starts and stops rebuilding. */
  private rebuilt(delta: number): void {
    const before = this.rebuilding;
    this.rebuilding += delta;
    if ((before === 0) !== (this.rebuilding === 0)) this.send({ id: -4, ok: true, loading: this.rebuilding > 0 });
    this.nextCount();
  }

  /**
   * Runs a count that no message waits for once the thread has no rebuild and no ready count in flight, one at a
   * time: counting a million rows keeps a PostgreSQL core busy for half a second, and two of them beside a rebuild's
   * reads made every other queue of the node wait for the store (docs/BENCHMARKS.md). Returns what starts it at
   * once, for when a message comes to wait for it.
   */
  private later(count: () => Promise<void>): () => void {
    let started: Promise<void> | null = null;
    const start = (): Promise<void> => (started ??= count().catch(() => {}));
    void this.track(new Promise<void>((resolve) => this.counts.push(() => start().then(resolve))));
    this.nextCount();
    return () => void start();
  }

  private nextCount(): void {
    if (this.counting || this.rebuilding > 0 || this.readyCounts > 0) return;
    const next = this.counts.shift();
    if (!next) return;
    this.counting = true;
    void next().then(() => {
      this.counting = false;
      this.nextCount();
    });
  }

  private shardOfKey(key: string): number {
    return shardOf(key, this.o.config.shardCount);
  }

  private serves(shard: number): boolean {
    return this.owned === null || this.owned.has(shard);
  }

  /** The fence of a commit: the epochs of the shards its records belong to. */
  private fence(actors: string[]): Fence | null {
    if (this.owned === null || this.o.nodeId === null) return null;
    const shards = [...new Set(actors.map((k) => this.shardOfKey(k)))];
    // A shard no longer served here fences under epoch -1, which no shard row has: the commit writes nothing.
    return { node: this.o.nodeId, shards, epochs: shards.map((s) => this.owned!.get(s) ?? '-1') };
  }

  /** The shards of this node now: drop what was lost (or taken again under a new epoch), load what was gained. */
  private setShards(epochs: Array<[number, string]>): void {
    const next = new Map(epochs.filter(([s]) => threadOf(s, this.o.threads) === this.o.index));
    const prev = this.owned ?? new Map<number, string>();
    const gone = [...prev.entries()].filter(([s, e]) => next.get(s) !== e).map(([s]) => s);
    const gained = new Set([...next.entries()].filter(([s, e]) => prev.get(s) !== e).map(([s]) => s));
    this.owned = next;
    if (gone.length > 0) this.dropShards(new Set(gone));
    if (gained.size > 0) {
      void this.loadLive((s) => gained.has(s)).catch((err) => console.error(`[actor-thread ${this.o.index}] could not load the queues of new shards:`, err));
    }
  }

  /** Stops serving the shards, waits for what was written for them, then drops their actors. */
  private async release(shards: number[]): Promise<void> {
    for (const s of shards) this.owned?.delete(s);
    await this.journal.idle();
    this.dropShards(new Set(shards));
  }

  /**
   * Drops the actors of shards this host no longer serves. Their parked claims are answered SHARD_MOVED: they
   * claimed nothing, so the node that sent them asks the new owner.
   */
  private dropShards(shards: Set<number>): void {
    // Their next owner counts them from 0 (a counter reset to Prometheus).
    this.counted.forget((key) => shards.has(this.shardOfKey(key)));
    for (const [key, slot] of [...this.actors]) {
      if (!shards.has(this.shardOfKey(key))) continue;
      this.actors.delete(key);
      if ('actor' in slot && slot.actor instanceof QueueActor) {
        slot.actor.dispose();
        for (const w of slot.actor.drainWaiters()) w.respond(MOVED_CLAIM);
      }
      for (const m of this.waitingOn(slot)) this.fail(m.id, moved());
    }
  }

  receive(batch: ThreadIn[]): void {
    for (const m of batch) {
      switch (m.t) {
        case 'queue':
        case 'org':
          this.onAsk(m);
          break;
        case 'tick':
          // Reads in flight first (a window being filled, a job adopted): the tick sees the actors as they are after.
          void this.quiet()
            .then(() => {
              this.fireDue();
              return this.quiet();
            })
            .then(() => this.journal.idle())
            .then(() => this.ok(m.id, null));
          break;
        case 'shards':
          this.setShards(m.epochs);
          this.ok(m.id, null);
          break;
        case 'release':
          void this.release(m.shards).then(() => this.ok(m.id, null));
          break;
        case 'unpark':
          // This node stops (no `via`): every parked claim, and none parks from now on. Another node stops: the claims
          // it forwarded here.
          if (m.via === undefined) this.unparked = true;
          for (const slot of this.actors.values()) {
            if (!('actor' in slot && slot.actor instanceof QueueActor)) continue;
            for (const w of m.via === undefined ? slot.actor.drainWaiters() : slot.actor.waitersVia(m.via)) w.respond(EMPTY_CLAIM);
          }
          this.ok(m.id, null);
          break;
        case 'stop':
          if (this.timer) clearTimeout(this.timer);
          clearInterval(this.statsTimer);
          this.journal
            .idle()
            .then(() => this.analyzing)
            .then(() => Promise.all([this.o.store.close(), this.o.commits?.close(), this.o.background?.close()]))
            .then(
              () => this.ok(m.id, null),
              (err) => this.fail(m.id, err),
            );
          break;
      }
    }
  }

  // --- replies, batched per turn ---

  private send(msg: ThreadOut): void {
    if (this.outbox.length === 0) {
      setImmediate(() => {
        const batch = this.outbox;
        this.outbox = [];
        this.o.post(batch);
      });
    }
    this.outbox.push(msg);
  }

  /** A tell (id 0) has nobody waiting for its answer. */
  private ok(id: number, value: unknown): void {
    if (id !== 0) this.send({ id, ok: true, value });
  }

  private fail(id: number, err: unknown): void {
    // Unexpected errors are logged here and leave as the catalog's generic 500: no SQL or stack text for clients.
    const e = err instanceof AppError ? err : new AppError('INTERNAL');
    if (!(err instanceof AppError)) console.error(`[actor-thread ${this.o.index}]`, err);
    if (id !== 0) this.send({ id, ok: false, error: e.toWire() });
  }

  /**
   * Answers once everything its actor wrote so far is committed. The reply runs as `actor` (when given): the work
   * it does after the commit is that actor's.
   */
  private replyAfterCommit<T>(id: number, reply: Reply<T>, token: Token, as: { key: string; actor: QueueActor } | null): void {
    this.journal.after(
      as?.key ?? this.currentKey,
      {
        ok: (out) => {
          try {
            const value = as ? this.run(as.key, as.actor, () => reply(out)) : reply(out);
            this.ok(id, value);
          } catch (err) {
            this.fail(id, err);
          }
          if (as?.actor.diverged) this.diverged(as.key);
        },
        fail: (err) => this.fail(id, err),
      },
      token,
    );
  }

  // --- actors ---

  private onAsk(m: Ask): void {
    const key = actorKey(m.org, m.t === 'org' ? ORG_ACTOR : m.queue);
    if (!this.serves(this.shardOfKey(key))) return this.fail(m.id, moved());
    // Counted by the thread, not the actor: read at once, and a cold queue is not loaded to say it counted nothing.
    if (m.t === 'queue' && m.op === 'metrics') return this.ok(m.id, this.counted.snapshot(key));
    const slot = this.actors.get(key);
    // Tells adjust counters of loaded actors only: an actor built from rows already counts every committed change
    // (and one being built may or may not: dropping the tell then errs on the side of a higher count).
    if (m.id === 0 && (!slot || 'loading' in slot)) return;
    if (!slot) {
      void this.load(key, m.org, m.t === 'org' ? ORG_ACTOR : m.queue, m);
      return;
    }
    if ('loading' in slot) {
      slot.loading.push(m);
      return;
    }
    if (slot.busy) {
      slot.busy.push({ m, adopted: false });
      return;
    }
    this.dispatch(m, slot.actor);
  }

  /** The messages a slot holds back (loading, or suspended). */
  private waitingOn(slot: Slot): Ask[] {
    if ('loading' in slot) return slot.loading;
    return [...(slot.busy?.map((h) => h.m) ?? []), ...(slot.uncounted ?? [])];
  }

  /** Resolves once the actor serves (or could not be built): its window is filled and its messages dispatched. */
  private load(key: string, organizationId: string, queueName: string, first: Ask | null): Promise<void> {
    const pending: Ask[] = first ? [first] : [];
    const slot: Slot = { loading: pending };
    this.actors.set(key, slot);
    return this.track((this.settling.get(key) ?? Promise.resolve())
      .then(() => this.build(organizationId, queueName))
      .then(
        (actor) => {
          // Dropped while it loaded (its shard went to another node): its messages were answered then.
          if (this.actors.get(key) !== slot) return;
          const live: Live = { actor, busy: pending.map((m) => ({ m, adopted: false })), tick: true };
          this.actors.set(key, live);
          if (actor instanceof OrgActor && !actor.jobsCounted) this.countJobs(key, live, actor);
          // Its window's first slice is read before any message runs; leases that ran out while nobody owned the
          // queue are given up once it is (the resume's tick).
          return this.suspend(key, live, () =>
            actor instanceof QueueActor ? this.fill(key, live, actor).then(() => this.countReady(key, live, actor)) : Promise.resolve(),
          );
        },
        (err) => {
          if (this.actors.get(key) !== slot) return;
          this.actors.delete(key);
          for (const m of pending) {
            this.fail(m.id, err instanceof AppError ? err : new AppError('UNAVAILABLE', `could not load ${key}: ${(err as Error).message}`));
          }
        },
      ));
  }

  /**
   * Has a rebuilt queue's ready jobs counted, not waited for: the count only makes the actor's bookkeeping exact.
   * Asked once its window's first slice is read, so that the read the first claim waits for runs alone, and before
   * its first message runs, so that the count's snapshot comes before any write of the actor lands (sent first, it
   * starts first in practice; nothing orders the two connections, and QueueActor.counted says what holds if it does
   * not). The counts that can wait their turn (later) wait for it.
   */
  private countReady(key: string, live: Live, actor: QueueActor): void {
    if (!actor.estimating || this.actors.get(key) !== live) return;
    this.readyCounts++;
    readyCount(this.background, actor.organizationId, actor.name)
      .then(
        (n) => this.actors.get(key) === live && actor.counted(n),
        (err: unknown) => console.error(`[actor-thread ${this.o.index}] could not count the ready jobs of ${key}:`, (err as Error)?.message ?? err),
      )
      .finally(() => {
        this.readyCounts--;
        this.nextCount();
      });
  }

  /**
   * Counts an organization's jobs while its actor already answers everything else (the request rate, resource
   * quotas), then runs the messages that waited for the count, in order. A count that fails drops the actor (rebuilt
   * at its next message) and what waited answers 503.
   */
  private countJobs(key: string, live: Live, actor: OrgActor): void {
    live.uncounted = [];
    const settle = (): OrgAsk[] => {
      const held = live.uncounted ?? [];
      live.uncounted = null;
      live.count = null;
      return held;
    };
    const count = async (store: Store): Promise<void> => {
      if (this.actors.get(key) !== live) return;
      const day = utcDay(this.o.clock.now());
      let c: { activeJobs: number; createdToday: number };
      try {
        c = await countOrganizationJobs(store, actor.organizationId, day);
      } catch (err) {
        const held = settle();
        if (this.actors.get(key) !== live) return;
        console.error(`[actor-thread ${this.o.index}] could not count the jobs of ${key}; rebuilding it:`, (err as Error)?.message ?? err);
        this.drop(new Set([key]));
        const e = new AppError('UNAVAILABLE', 'The organization could not be read from the store; retry');
        for (const m of held) this.fail(m.id, e);
        return;
      }
      const held = settle();
      if (this.actors.get(key) !== live) return;
      actor.countedJobs(day, c.activeJobs, c.createdToday);
      for (const m of held) this.dispatch(m, actor);
    };
    // Under a plan that limits jobs every admission waits for the count: it runs now (such a plan caps the backlog,
    // so the count is small). Otherwise only a usage report waits for it, and starts it if it has not run yet.
    if (actor.waitsForCount('admit')) void this.track(count(this.o.store));
    else live.count = this.later(() => count(this.background));
  }

  /**
   * Counts the jobs a commit inserts and, once they could outnumber the rows the planner's statistics counted, has
   * the statistics checked (one check at a time, off every actor's path). Each thread counts its own inserts, so
   * with several threads a table is analyzed a little later than it doubles.
   */
  private grew(records: readonly JournalRecord[]): void {
    for (const r of records) if (r.kind === 'insert') this.inserted++;
    if (this.analyzing !== null || this.inserted < Math.max(GROWTH_CHECK, this.analyzed)) return;
    const seen = this.inserted;
    this.analyzing = analyzeJobsIfGrown(this.o.store, seen)
      .then(
        (rows) => {
          this.analyzed = rows;
        },
        () => {},
      )
      .finally(() => {
        // A failed check is not retried at once: the next one waits for as many inserts again.
        this.inserted -= seen;
        this.analyzing = null;
      });
  }

  /** Keeps a read for actors in `works` while it runs (a manual clock's tick waits for them: `quiet`). */
  private track<T>(p: Promise<T>): Promise<T> {
    const done = p.then(() => undefined, () => undefined);
    this.works.add(done);
    void done.then(() => this.works.delete(done));
    return p;
  }

  /**
   * Holds the actor's messages back while `work` reads for it, then runs what came meanwhile, in order (a message
   * may suspend the actor again: the rest wait on). A read that fails drops the actor (rebuilt at its next
   * message) and its waiting messages answer 503.
   */
  private suspend(key: string, slot: Live, work: () => Promise<void>): Promise<void> {
    slot.busy ??= [];
    const done = work().then(
      () => {
        if (this.actors.get(key) === slot) this.resume(key, slot);
      },
      (err: unknown) => {
        if (this.actors.get(key) !== slot) return;
        console.error(`[actor-thread ${this.o.index}] could not read for ${key}; rebuilding it:`, (err as Error)?.message ?? err);
        const waiting = this.waitingOn(slot);
        slot.busy = null;
        this.drop(new Set([key]));
        const e = err instanceof AppError ? err : new AppError('UNAVAILABLE', 'The queue could not be read from the store; retry');
        for (const m of waiting) this.fail(m.id, e);
      },
    );
    return this.track(done);
  }

  private resume(key: string, slot: Live): void {
    const queued = slot.busy ?? [];
    slot.busy = null;
    const actor = slot.actor;
    if (slot.tick && actor instanceof QueueActor) {
      slot.tick = false;
      this.tickActor(key, slot, actor);
    }
    // What ran while it was suspended (a tick after an adoption) may have drained a window: filled first.
    if (actor instanceof QueueActor) this.refillIfLow(key, actor);
    for (let i = 0; i < queued.length; i++) {
      if (this.actors.get(key) !== slot) {
        // Dropped meanwhile (a commit failed): the rest go through a rebuild, in order.
        for (const h of queued.slice(i)) this.onAsk(h.m);
        return;
      }
      // A message may have suspended the actor again (TS cannot see dispatch set it).
      const busy = slot.busy as Held[] | null;
      if (busy) {
        busy.push(...queued.slice(i));
        return;
      }
      this.dispatch(queued[i]!.m, actor, queued[i]!.adopted);
    }
  }

  /** Resolves once no refill of the actor is being read (its failure is the refill's to handle). */
  private async refilled(key: string): Promise<void> {
    for (let slot = this.actors.get(key); slot && 'actor' in slot && slot.refilling; slot = this.actors.get(key)) {
      await slot.refilling.catch(() => {});
    }
  }

  /** Resolves once no read for a suspended actor is in flight. */
  private async quiet(): Promise<void> {
    while (this.works.size > 0) await Promise.allSettled([...this.works]);
  }

  /** Resolves once everything the actor wrote so far is committed (or failed: then it is dropped anyway). */
  private committed(key: string): Promise<void> {
    return new Promise((resolve, reject) => this.journal.after(key, { ok: () => resolve(), fail: reject }, 0));
  }

  /**
   * Reads the first slice of the rebuilt actor's windows: enough for its first messages, which wait for it. The rest
   * comes as a refill while it serves (`resume` starts it), so a queue of a million jobs holds its messages, and the
   * node's readiness, for one read instead of half a window of them.
   */
  private fill(key: string, slot: Live, actor: QueueActor): Promise<void> {
    return this.readInto(key, slot, actor, (first) => (first ? actor.refills(FILL_SLICE, 'due') : []));
  }

  /**
   * Reads the refills `next` names into the actor, a slice at a time with a turn of the event loop between slices,
   * until it names none (or the actor is dropped). Each slice starts once what the actor wrote so far is committed;
   * what it pages out from then on is recorded until the rows come (beginRefill, refilled).
   */
  private async readInto(key: string, slot: Live, actor: QueueActor, next: (first: boolean) => Refill[]): Promise<void> {
    for (let refills = next(true), first = true; refills.length > 0; first = false, refills = next(first)) {
      actor.beginRefill(refills);
      await this.committed(key);
      const pages = await this.readPages(actor, refills);
      if (this.actors.get(key) !== slot) return;
      this.run(key, actor, () => {
        refills.forEach((r, i) => actor.refilled(r, pages[i]!, this.fx));
      });
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.actors.get(key) !== slot) return;
    }
  }

  /** The rows of each refill, in claim order. */
  private async readPages(actor: QueueActor, refills: Refill[]): Promise<Array<Omit<LiveJob, 'ver'>[]>> {
    const { store } = this.o;
    const org = actor.organizationId;
    const name = actor.name;
    const pages: Array<Omit<LiveJob, 'ver'>[]> = refills.map(() => []);
    const keyed: number[] = [];
    await Promise.all(
      refills.map(async (r, i) => {
        if (r.keyed && r.key !== null) keyed.push(i);
        else pages[i] = await readyJobs(store, org, name, { key: r.keyed ? null : undefined, after: r.after, limit: r.limit });
      }),
    );
    if (keyed.length > 0) {
      const rows = await readyJobsByKey(store, org, name, keyed.map((i) => refills[i]!).map((r) => ({ key: r.key, after: r.after, limit: r.limit })));
      const byKey = new Map(keyed.map((i) => [refills[i]!.key, pages[i]!]));
      for (const row of rows) byKey.get(row.concurrency_key)?.push(row);
      // One statement for many lanes: each lane's rows are put back in claim order.
      for (const i of keyed) pages[i]!.sort((a, b) => (a.priority !== b.priority ? b.priority - a.priority : a.id < b.id ? -1 : 1));
    }
    return pages;
  }

  /** Reads the paged-out jobs a request names (or whose expiry came) and hands them to the actor. */
  private async adopt(key: string, actor: QueueActor, ids: string[]): Promise<void> {
    // A refill being read could bring back a row of one of these jobs as it was before this request changes it.
    await this.refilled(key);
    await this.committed(key);
    actor.adopt(await readyJobsById(this.o.store, actor.organizationId, actor.name, ids));
  }

  /** The paged-out jobs a queue request names, which the actor must hold before it runs. */
  private adoptionsFor(m: QueueAsk, actor: QueueActor): string[] {
    switch (m.op) {
      case 'cancel':
      case 'priority':
      case 'explain':
        return actor.unheld([(m.args as QueueOps['cancel']['args']).id]);
      case 'enqueue':
        return actor.debouncedUnheld([m.args as QueueOps['enqueue']['args']]);
      case 'enqueueMany':
        return actor.debouncedUnheld((m.args as QueueOps['enqueueMany']['args']).inputs);
      default:
        return [];
    }
  }

  /** A window ran low: topped up while the actor serves on (see refill). */
  private refillIfLow(key: string, actor: QueueActor): void {
    const slot = this.actors.get(key);
    if (!slot || !('actor' in slot) || slot.actor !== actor || slot.busy || slot.refilling) return;
    if (actor.refills(FILL_SLICE).length === 0) return;
    const refilling = this.track(this.refill(key, slot, actor)).then(
      () => {
        if (slot.refilling === refilling) slot.refilling = null;
        // Claims went on meanwhile: the window may be low again.
        if (this.actors.get(key) === slot) this.refillIfLow(key, actor);
      },
      (err: unknown) => {
        if (slot.refilling === refilling) slot.refilling = null;
        if (this.actors.get(key) !== slot) return;
        // Rebuilt from rows at its next message; messages waiting for it meanwhile run on the rebuilt one.
        console.error(`[actor-thread ${this.o.index}] could not refill ${key}; rebuilding it:`, (err as Error)?.message ?? err);
        this.drop(new Set([key]));
      },
    );
    slot.refilling = refilling;
  }

  /**
   * Tops the windows up, slice by slice, while the actor serves on: a refill that held its messages stalled every
   * claim of a busy queue for the read (a p99 of half a second at 3,000 jobs/s). It goes on while a window has room
   * for a whole slice; the last top-ups are left to the next refill.
   */
  private refill(key: string, slot: Live, actor: QueueActor): Promise<void> {
    return this.readInto(key, slot, actor, (first) => {
      const refills = actor.refills(FILL_SLICE, first ? 'due' : 'room');
      return !first && refills.every((r) => r.limit < FILL_SLICE) ? [] : refills;
    });
  }

  /** The actor's timer: paged-out jobs whose expiry came are read back first, then everything due fires. */
  private tickActor(key: string, slot: Live, actor: QueueActor): void {
    const due = actor.dueUnheld(this.o.clock.now());
    if (due.length === 0) {
      this.run(key, actor, () => actor.tick(this.fx));
      return;
    }
    void this.suspend(key, slot, async () => {
      await this.adopt(key, actor, due);
      if (this.actors.get(key) !== slot) return;
      this.run(key, actor, () => actor.tick(this.fx));
    });
  }

  private async build(organizationId: string, queueName: string): Promise<Actor> {
    const { store, clock, config } = this.o;
    if (queueName === ORG_ACTOR) {
      const snapshot = await loadOrganization(store, organizationId, clock.now());
      if (!snapshot) throw new AppError('NOT_FOUND', 'Organization not found');
      this.send({ id: -1, ok: true, events: [{ type: 'org.loaded', organization_id: organizationId }] });
      return new OrgActor(organizationId, config.planOverrides, snapshot);
    }
    // Its ready jobs come after, page by page (load → fill).
    const snapshot = await loadQueue(store, organizationId, queueName, config.queueWindow);
    const actor = new QueueActor(organizationId, queueName, this.settings, snapshot.queue, snapshot.held, clock.now());
    const ready = snapshot.unkeyed !== null ? [...snapshot.ready, { key: null, count: snapshot.unkeyed }] : snapshot.ready;
    actor.page(ready, snapshot.marks, snapshot.unkeyed === null ? 'unknown' : 'none');
    return actor;
  }

  /** An actor whose write did not find the state it believed: rebuilt from rows at its next message. */
  private diverged(key: string): void {
    const slot = this.actors.get(key);
    if (!slot || !('actor' in slot)) return;
    console.error(`[actor-thread ${this.o.index}] ${key} found a row in another state than it believed; rebuilding it from the store`);
    this.drop(new Set([key]));
  }

  /** The actors a failed commit touched no longer match the store: drop them, to be rebuilt from rows. */
  private lose(lost: Set<string>, cause: unknown): void {
    console.error(`[actor-thread ${this.o.index}] commit failed, rebuilding ${lost.size} actor(s):`, (cause as Error)?.message ?? cause);
    this.drop(lost);
  }

  private drop(keys: Set<string>): void {
    const rerun: Ask[] = [];
    for (const key of keys) {
      const slot = this.actors.get(key);
      this.actors.delete(key);
      if (slot && 'actor' in slot && slot.actor instanceof QueueActor) {
        slot.actor.dispose();
        for (const w of slot.actor.drainWaiters()) w.respond(EMPTY_CLAIM);
      }
      // Messages that waited for a suspended actor (or for an organization's count) never ran: they run on the rebuilt one.
      if (slot && 'actor' in slot) rerun.push(...this.waitingOn(slot));
      const settled = new Promise<void>((resolve) => this.journal.after(null, { ok: () => resolve(), fail: () => resolve() }, 0));
      this.settling.set(key, settled);
      void settled.then(() => {
        if (this.settling.get(key) === settled) this.settling.delete(key);
      });
    }
    for (const m of rerun) this.onAsk(m);
  }

  private dispatch(m: Ask, actor: Actor, adopted = false): void {
    if (m.t === 'org') {
      if (!(actor instanceof OrgActor)) return this.fail(m.id, new AppError('INTERNAL', 'not an organization actor'));
      // A finished-job tell while the jobs are counted is dropped: the count may already leave the job out (erring
      // high, as a rebuild does).
      if (!actor.jobsCounted && m.op === 'jobsFinished') return;
      if (actor.waitsForCount(m.op)) {
        const slot = this.actors.get(actorKey(m.org, ORG_ACTOR));
        if (slot && 'actor' in slot) {
          slot.uncounted?.push(m);
          slot.count?.();
        }
        return;
      }
      this.currentKey = actorKey(m.org, ORG_ACTOR);
      this.currentToken = ++this.lastToken;
      try {
        // Quota answers need no commit: they acknowledge nothing durable by themselves (see org-actor.ts).
        this.ok(m.id, this.orgOp(m, actor));
      } catch (err) {
        this.fail(m.id, err);
      }
      return;
    }
    if (!(actor instanceof QueueActor)) return this.fail(m.id, new AppError('INTERNAL', 'not a queue actor'));
    const key = actorKey(m.org, m.queue);
    if (m.op === 'claim' && actor.starving) {
      // A window ran out while its refill is read: its next job is unknown until the rows come, so the claim waits.
      const slot = this.actors.get(key);
      if (slot && 'actor' in slot && slot.actor === actor && slot.refilling) {
        slot.busy = [{ m, adopted }, ...(slot.busy ?? [])];
        void this.suspend(key, slot, () => this.refilled(key));
        return;
      }
    }
    if (!adopted) {
      const ids = this.adoptionsFor(m, actor);
      const slot = this.actors.get(key);
      if (ids.length > 0 && slot && 'actor' in slot && slot.actor === actor) {
        slot.busy = [{ m, adopted: true }, ...(slot.busy ?? [])];
        void this.suspend(key, slot, () => this.adopt(key, actor, ids));
        return;
      }
    }
    const as = { key, actor };
    this.run(key, actor, () => {
      const token = this.currentToken;
      try {
        this.queueOp(m, actor, { id: m.id, token, via: m.via, answer: (reply) => this.replyAfterCommit(m.id, reply, token, as) });
      } catch (err) {
        // Errors also wait for the commit: they may describe state an in-flight batch has not made durable yet.
        this.replyAfterCommit(
          m.id,
          () => {
            throw err;
          },
          token,
          null,
        );
      }
    });
  }

  private queueOp<K extends QueueOp>(m: QueueAsk<K>, actor: QueueActor, call: Call<QueueOps[K]['reply']>): void {
    // The op map is the contract: a message from elsewhere (another build, another node) naming no operation is refused.
    if (!Object.hasOwn(this.queueHandlers, m.op)) throw new AppError('INTERNAL', `unknown queue operation ${String(m.op)}`);
    const handler: QueueHandlers[K] = this.queueHandlers[m.op];
    handler(actor, m.args, this.fx, call);
  }

  private orgOp<K extends OrgOp>(m: OrgAsk<K>, actor: OrgActor): OrgOps[K]['reply'] {
    if (!Object.hasOwn(ORG_HANDLERS, m.op)) throw new AppError('INTERNAL', `unknown organization operation ${String(m.op)}`);
    const handler: OrgHandlers[K] = ORG_HANDLERS[m.op];
    return handler(actor, m.args, this.fx);
  }

  private readonly queueHandlers: QueueHandlers = {
    enqueue: (actor, a, fx, call) => call.answer(actor.enqueue(a, fx)),
    enqueueMany: (actor, a, fx, call) => call.answer(actor.enqueueMany(a.inputs, fx)),
    claim: (actor, a, fx, call) => this.claim(actor, a, fx, { ...call, answer: (r) => call.answer(this.encodable(r, (v) => v.jobs)) }),
    complete: (actor, a, fx, call) => call.answer(actor.complete(a, fx)),
    completeMany: (actor, a, fx, call) => call.answer(actor.completeMany(a.items, fx)),
    fail: (actor, a, fx, call) => call.answer(actor.fail(a, fx)),
    heartbeat: (actor, a, fx, call) => call.answer(actor.heartbeat(a, fx)),
    progress: (actor, a, fx, call) => call.answer(actor.progress(a, fx)),
    explain: (actor, a, fx, call) => {
      const facts = actor.explain(a.id, fx.now);
      call.answer(() => facts);
    },
    cancel: (actor, a, fx, call) => call.answer(actor.cancel(a.id, fx) ?? (() => null)),
    priority: (actor, a, fx, call) => call.answer(actor.setPriority(a.id, a.priority, fx) ?? (() => null)),
    revive: (actor, a, fx, call) => call.answer(this.encodable(actor.revive(a.jobs, a.from, fx), (v) => v.flatMap((o) => (o.revived ? [o.job] : [])))),
    release: (actor, a, fx, call) => call.answer(actor.release(a.ids, fx)),
    unclaim: (actor, a, fx, call) => call.answer(actor.unclaim(a.items, fx)),
    createQueue: (actor, a, fx, call) => call.answer(actor.createQueue(a, fx)),
    pause: (actor, a, fx, call) => call.answer(actor.pause(a.reason, fx)),
    resume: (actor, _a, fx, call) => call.answer(actor.resume(fx)),
    configure: (actor, a, fx, call) => call.answer(actor.configure(a, fx)),
    deleteQueue: (actor, _a, fx, call) => call.answer(actor.deleteQueue(fx)),
    // Answered in onAsk before any actor is loaded; here for completeness of the op map.
    metrics: (actor, _a, _fx, call) => {
      const snapshot = this.counted.snapshot(actorKey(actor.organizationId, actor.name));
      call.answer(() => snapshot);
    },
  };

  /**
   * A reply carrying job rows as the store returned them (a claim's, a revive's): the one part of any reply that is
   * not built from the actor's own strings and numbers or from request data that crossed the request copy, and so the
   * one that may hold what the edge refuses now (a payload stored before the edge refused deep values). A row nesting
   * deeper than REPLY_MAX_DEPTH fails its own request, after the reply did its work, as a reply that could not be
   * copied to the main thread does (host-start.ts, postEach); checked here, so that it holds in every mode, the
   * actors on the main thread handing their replies over without a copy (inline-thread.ts).
   */
  private encodable<T>(reply: Reply<T>, rows: (value: T) => Iterable<Record<string, unknown>>): Reply<T> {
    return (out) => {
      const value = reply(out);
      for (const row of rows(value)) {
        if (!nestsDeeper(row, REPLY_MAX_DEPTH)) continue;
        console.error(`[actor-thread ${this.o.index}] job ${String(row.id)} holds a value nested deeper than ${REPLY_MAX_DEPTH} levels; its reply fails`);
        throw new AppError('INTERNAL', 'The reply could not be encoded');
      }
      return value;
    };
  }

  /** A claim that finds nothing and may wait is parked on the actor until jobs come or `wait_ms` runs out. */
  private claim(actor: QueueActor, a: QueueOps['claim']['args'], fx: Effects, call: Call<QueueOps['claim']['reply']>): void {
    const reply = actor.claim(a, fx);
    if (reply) return call.answer(reply);
    // A stopping node parks nothing (unpark): a claim arriving during its stop would otherwise wait out the grace.
    if (!a.wait_ms || actor.paused || this.unparked) return call.answer(EMPTY_CLAIM);
    // Whoever's message later feeds the waiter, the answer belongs to this request (its token) and runs as this actor.
    const key = this.currentKey;
    let timer: NodeJS.Timeout | undefined;
    const w: Waiter = {
      input: a,
      respond: (r) => {
        clearTimeout(timer);
        call.answer(r);
      },
      ...(call.via !== undefined ? { via: call.via } : {}),
    };
    actor.addWaiter(w);
    // Long-poll time is network time: real timers, whatever the clock.
    timer = setTimeout(() => {
      const slot = this.actors.get(key);
      if (slot && 'actor' in slot && slot.actor === actor && actor.removeWaiter(w)) call.answer(EMPTY_CLAIM);
    }, a.wait_ms);
  }

  /** Runs fn as the given actor: its records are tagged with its key and a new token, and its timer re-armed after. */
  private run<T>(key: string, actor: QueueActor, fn: () => T): T {
    // A reply may run inside another run (a journal with nothing pending answers at once): restore the outer one.
    const [outerKey, outerToken] = [this.currentKey, this.currentToken];
    this.currentKey = key;
    this.currentToken = ++this.lastToken;
    try {
      return fn();
    } finally {
      // Jobs adopted for this request go back to the store; a window it drained is filled before the next one.
      actor.repage();
      this.arm(key, actor);
      this.currentKey = outerKey;
      this.currentToken = outerToken;
      this.refillIfLow(key, actor);
    }
  }

  // --- timers ---

  private arm(key: string, actor: QueueActor): void {
    const at = actor.nextWake(this.o.clock.now());
    if (at === null || this.armed.get(actor) === at) return;
    this.armed.set(actor, at);
    this.wakes.push({ at, key, actor });
    if (!this.o.clock.manual && at < this.timerAt) {
      if (this.timer) clearTimeout(this.timer);
      this.timerAt = at;
      this.timer = setTimeout(() => this.fireDue(), Math.min(Math.max(0, at - this.o.clock.now()), 2 ** 31 - 1));
    }
  }

  private fireDue(): void {
    this.timer = null;
    this.timerAt = Infinity;
    const now = this.o.clock.now();
    const due: Wake[] = [];
    while (this.wakes.size > 0 && this.wakes.peek()!.at <= now) due.push(this.wakes.pop()!);
    for (const w of due) {
      const slot = this.actors.get(w.key);
      if (!slot || !('actor' in slot) || slot.actor !== w.actor) continue;
      if (this.armed.get(w.actor) === w.at) this.armed.delete(w.actor);
      // A suspended actor ticks when it resumes.
      if (slot.busy) slot.tick = true;
      else this.tickActor(w.key, slot, w.actor);
    }
    // A tick above may have armed a timer already (arm, with timerAt at Infinity): replaced, not left running, or
    // every due round that re-armed left one more timer behind, each firing fireDue again at every later wake.
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const next = this.wakes.peek();
    if (next && !this.o.clock.manual) {
      this.timerAt = next.at;
      this.timer = setTimeout(() => this.fireDue(), Math.min(Math.max(0, next.at - this.o.clock.now()), 2 ** 31 - 1));
    }
  }
}

const ORG_HANDLERS: OrgHandlers = {
  admit: (actor, a, fx) => {
    actor.admitJobs(a.n, a.payloadBytes, fx);
    return { day: actor.today(fx.now), granted: actor.grant(a.credit, fx), payloadCap: actor.payloadCap };
  },
  releaseJobs: (actor, a, fx) => {
    actor.releaseJobs(a.n, a.day, fx);
    return null;
  },
  jobsFinished: (actor, a) => {
    actor.jobsFinished(a.n);
    return null;
  },
  reserve: (actor, a) => {
    actor.reserve(a.resource);
    return null;
  },
  counted: (actor, a) => {
    actor.counted(a.resource, a.delta);
    return null;
  },
  setPlan: (actor, a) => {
    actor.setPlan(a.plan, a.overrides);
    return null;
  },
  resetUsage: (actor, _a, fx) => {
    actor.resetUsage(fx);
    return null;
  },
  usage: (actor, _a, fx) => actor.usage(fx.now),
  permits: (actor, a, fx) => actor.permits(a.want, a.holdMs, fx.now),
};
