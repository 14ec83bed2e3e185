// ActorHost — the actors of one actor thread: hosts the QueueActors and OrgActors of its shards, runs their
// messages one at a time, keeps their timers and commits their journal. The thread entry (actor-thread.ts)
// only connects it to a port; a test can drive a host directly, without a thread.
//
// An actor is rebuilt from the store on first use (messages wait in order while it loads) and at boot for every
// queue with live jobs. When a commit fails, the actors it touched are dropped: the next message rebuilds them
// from what the store really holds.
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
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { Heap } from '../actors/heap.js';
import { JobIds } from '../actors/ids.js';
import { QueueActor, type Waiter } from '../actors/queue/queue-actor.js';
import { QueueMetricsBook } from '../actors/queue/queue-metrics.js';
import { OrgActor } from '../actors/org/org-actor.js';
import type { DomainEvent, Effects, JournalRecord, Reply } from '../actors/records.js';
import type { Store } from '../io/db/store.js';
import { commitBatch, FencedError, type Fence } from '../io/db/sql/commitBatch.js';
import { liveQueues } from '../io/db/sql/liveQueues.js';
import { loadOrganization } from '../io/db/sql/loadOrganization.js';
import { loadQueue } from '../io/db/sql/loadQueue.js';
import { isDataFault } from '../io/db/faults.js';
import { Journal, type Token } from './journal.js';
import { ORG_ACTOR, type Ask, type CommitStats, type OrgAsk, type OrgOp, type OrgOps, type QueueAsk, type QueueOp, type QueueOps, type ThreadIn, type ThreadOut } from './protocol.js';
import { actorKey, shardOf, threadOf } from './shard.js';

export interface HostOptions {
  index: number;
  threads: number;
  /** This node's id in the cluster, whose shard epochs fence the commits; null: every shard, no fence. */
  nodeId: string | null;
  config: Config;
  store: Store;
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
}

type QueueHandlers = {
  [K in QueueOp]: (actor: QueueActor, args: QueueOps[K]['args'], fx: Effects, call: Call<QueueOps[K]['reply']>) => void;
};
type OrgHandlers = { [K in OrgOp]: (actor: OrgActor, args: OrgOps[K]['args'], fx: Effects) => OrgOps[K]['reply'] };

type Actor = QueueActor | OrgActor;
type Slot = { actor: Actor } | { loading: Ask[] };

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
  private readonly settings: { retryUnitMs: number; defaultMaxRetries: number; defaultTimeoutSeconds: number };
  /** The actor running now, and the request it runs for: its records, events and reply share the token. */
  private currentKey = '';
  private currentToken: Token = 0;
  private lastToken: Token = 0;
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

  constructor(private readonly o: HostOptions) {
    const { clock, config } = o;
    this.owned = o.nodeId === null ? null : new Map();
    this.settings = {
      retryUnitMs: config.retryUnitMs,
      defaultMaxRetries: config.defaultMaxRetries,
      defaultTimeoutSeconds: config.defaultTimeoutSeconds,
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
      commit: (records, actors) => commitBatch(o.store, records, this.fence(actors)),
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
  }

  /**
   * Loads every queue of the given shards that has live jobs, so that their timers (lease expiries, delayed
   * jobs) run without waiting for a message: at boot, and when this node takes a shard over.
   */
  private async loadLive(wanted: (shard: number) => boolean): Promise<void> {
    for (const q of await liveQueues(this.o.store)) {
      const key = actorKey(q.organization_id, q.queue_name);
      const shard = this.shardOfKey(key);
      if (threadOf(shard, this.o.threads) === this.o.index && wanted(shard) && this.serves(shard) && !this.actors.has(key)) {
        this.load(key, q.organization_id, q.queue_name, null);
      }
    }
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
      if ('actor' in slot && slot.actor instanceof QueueActor) for (const w of slot.actor.drainWaiters()) w.respond(MOVED_CLAIM);
      if ('loading' in slot) for (const m of slot.loading) this.fail(m.id, moved());
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
          this.fireDue();
          void this.journal.idle().then(() => this.ok(m.id, null));
          break;
        case 'shards':
          this.setShards(m.epochs);
          this.ok(m.id, null);
          break;
        case 'release':
          void this.release(m.shards).then(() => this.ok(m.id, null));
          break;
        case 'stop':
          if (this.timer) clearTimeout(this.timer);
          clearInterval(this.statsTimer);
          this.journal
            .idle()
            .then(() => this.o.store.close())
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
    if (!slot) return this.load(key, m.org, m.t === 'org' ? ORG_ACTOR : m.queue, m);
    if ('loading' in slot) {
      slot.loading.push(m);
      return;
    }
    this.dispatch(m, slot.actor);
  }

  private load(key: string, organizationId: string, queueName: string, first: Ask | null): void {
    const pending: Ask[] = first ? [first] : [];
    const slot: Slot = { loading: pending };
    this.actors.set(key, slot);
    (this.settling.get(key) ?? Promise.resolve())
      .then(() => this.build(organizationId, queueName))
      .then(
        (actor) => {
          // Dropped while it loaded (its shard went to another node): its messages were answered then.
          if (this.actors.get(key) !== slot) return;
          this.actors.set(key, { actor });
          // Leases that ran out while nobody owned the queue are given up now.
          if (actor instanceof QueueActor) this.run(key, actor, () => actor.tick(this.fx));
          for (const m of pending) this.dispatch(m, actor);
        },
        (err) => {
          if (this.actors.get(key) !== slot) return;
          this.actors.delete(key);
          for (const m of pending) {
            this.fail(m.id, err instanceof AppError ? err : new AppError('UNAVAILABLE', `could not load ${key}: ${(err as Error).message}`));
          }
        },
      );
  }

  private async build(organizationId: string, queueName: string): Promise<Actor> {
    const { store, clock, config } = this.o;
    if (queueName === ORG_ACTOR) {
      const snapshot = await loadOrganization(store, organizationId, clock.now());
      if (!snapshot) throw new AppError('NOT_FOUND', 'Organization not found');
      this.send({ id: -1, ok: true, events: [{ type: 'org.loaded', organization_id: organizationId }] });
      return new OrgActor(organizationId, config.planOverrides, snapshot);
    }
    const { queue, live } = await loadQueue(store, organizationId, queueName);
    return new QueueActor(organizationId, queueName, this.settings, queue, live, clock.now());
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
    for (const key of keys) {
      const slot = this.actors.get(key);
      this.actors.delete(key);
      if (slot && 'actor' in slot && slot.actor instanceof QueueActor) {
        for (const w of slot.actor.drainWaiters()) w.respond(EMPTY_CLAIM);
      }
      const settled = new Promise<void>((resolve) => this.journal.after(null, { ok: () => resolve(), fail: () => resolve() }, 0));
      this.settling.set(key, settled);
      void settled.then(() => {
        if (this.settling.get(key) === settled) this.settling.delete(key);
      });
    }
  }

  private dispatch(m: Ask, actor: Actor): void {
    if (m.t === 'org') {
      if (!(actor instanceof OrgActor)) return this.fail(m.id, new AppError('INTERNAL', 'not an organization actor'));
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
    const as = { key, actor };
    this.run(key, actor, () => {
      const token = this.currentToken;
      try {
        this.queueOp(m, actor, { id: m.id, token, answer: (reply) => this.replyAfterCommit(m.id, reply, token, as) });
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
    claim: (actor, a, fx, call) => this.claim(actor, a, fx, call),
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
    revive: (actor, a, fx, call) => call.answer(actor.revive(a.jobs, a.from, fx)),
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

  /** A claim that finds nothing and may wait is parked on the actor until jobs come or `wait_ms` runs out. */
  private claim(actor: QueueActor, a: QueueOps['claim']['args'], fx: Effects, call: Call<QueueOps['claim']['reply']>): void {
    const reply = actor.claim(a, fx);
    if (reply) return call.answer(reply);
    if (!a.wait_ms || actor.paused) return call.answer(EMPTY_CLAIM);
    // Whoever's message later feeds the waiter, the answer belongs to this request (its token) and runs as this actor.
    const key = this.currentKey;
    let timer: NodeJS.Timeout | undefined;
    const w: Waiter = {
      input: a,
      respond: (r) => {
        clearTimeout(timer);
        call.answer(r);
      },
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
      this.arm(key, actor);
      this.currentKey = outerKey;
      this.currentToken = outerToken;
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
      this.run(w.key, w.actor, () => w.actor.tick(this.fx));
    }
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
