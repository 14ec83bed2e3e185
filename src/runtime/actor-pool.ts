// The main thread's side of the actor threads: routes each ask by its shard, to the thread that hosts the shard
// on this node or (through the router, src/runtime/cluster/forwarding.ts) to the node that owns it; batches posts
// per turn, resolves replies, and restarts a thread that dies (its actors rebuild from the store; asks in flight
// to it fail with 503 rather than hang, and it is told this node's shards again).
import type { TransferListItem, Worker } from 'node:worker_threads';
import type { DomainEvent } from '../actors/records.js';
import type { Clock } from '../clock.js';
import { ManualClock } from '../clock.js';
import { actorHosts, type Config } from '../config.js';
import { AppError } from '../errors.js';
import type { StoreLink } from '../io/db/store.js';
import type { ThreadInit } from './host-start.js';
import { InlineThread } from './inline-thread.js';
import { ORG_ACTOR, type CommitStats, type OrgOp, type OrgOps, type QueueOp, type QueueOps, type Routed, type ThreadIn, type ThreadOut } from './protocol.js';
import { actorKey, shardOf, threadOf } from './shard.js';
import { spawnWorker } from './spawn.js';

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
}

interface Thread {
  index: number;
  worker: Worker | InlineThread;
  pending: Map<number, Pending>;
  outbox: ThreadIn[];
  ready: Promise<void>;
  /** The thread is rebuilding the queues of its shards (boot, a shard taken over). */
  loading: boolean;
}

/** Makes a StoreLink for a new thread (a fresh pg pool, or a new port to the PGlite storage thread). */
export type LinkFactory = () => { link: StoreLink; transfer: TransferListItem[] };

/** Sends a message to the owner of its shard (this node or another) and resolves to the owner's reply. */
export type Router = (shard: number, message: Routed) => Promise<unknown>;

export class ActorPool {
  private threads: Thread[] = [];
  private nextId = 1;
  private stopping = false;
  private readonly listeners: Array<(events: DomainEvent[]) => void> = [];
  private readonly statsListeners: Array<(stats: CommitStats) => void> = [];
  private readonly fencedListeners: Array<(shards: number[]) => void> = [];
  private unhook: () => void = () => {};
  /** null: every shard is this node's (no cluster wiring yet, or tests). */
  private router: Router | null = null;
  /** The shards this node owns, told again to a thread that restarts. */
  private shards: Array<[number, string]> | null = null;
  /** Organizations whose events reach no listener: the node's own warm-up (src/warm-up.ts). */
  private readonly quiet = new Set<string>();

  constructor(
    private readonly config: Config,
    private readonly clock: Clock,
    private readonly makeLink: LinkFactory,
    /** This node's cluster id: its threads fence their commits with its shard epochs. null: unfenced. */
    private readonly nodeId: string | null = null,
  ) {
    if (clock instanceof ManualClock) this.unhook = clock.onAdvance(() => this.tick());
  }

  async start(): Promise<void> {
    // ACTOR_THREADS=0: one host on the main thread (inline-thread.ts).
    for (let i = 0; i < actorHosts(this.config.actorThreads); i++) this.threads.push(this.spawn(i));
    await Promise.all(this.threads.map((t) => t.ready));
  }

  /** A queue actor's operation; the reply once what it wrote is committed. */
  ask<K extends QueueOp>(org: string, queue: string, op: K, args: QueueOps[K]['args']): Promise<QueueOps[K]['reply']> {
    return this.route<QueueOps[K]['reply']>(this.shardOf(org, queue), { t: 'queue', org, queue, op, args });
  }

  /** An operation of the organization's quota actor. */
  askOrg<K extends OrgOp>(org: string, op: K, args: OrgOps[K]['args']): Promise<OrgOps[K]['reply']> {
    return this.route<OrgOps[K]['reply']>(this.shardOf(org, ORG_ACTOR), { t: 'org', org, op, args });
  }

  /** A quota-actor message nobody waits on (counters fed by events). */
  tellOrg<K extends OrgOp>(org: string, op: K, args: OrgOps[K]['args']): void {
    this.route(this.shardOf(org, ORG_ACTOR), { t: 'org', org, op, args, tell: true }).catch(() => {});
  }

  /** From now on a message goes to its shard's owner through `router` (which calls `local` for this node's). */
  routeWith(router: Router): void {
    this.router = router;
  }

  /**
   * Runs a message on this node's thread for its shard. A tell is answered at once (null) and dropped by the
   * thread unless the actor is loaded; an ask resolves to the actor's reply.
   */
  local(shard: number, message: Routed): Promise<unknown> {
    const t = this.threads[threadOf(shard, this.threads.length)]!;
    if (message.tell) {
      this.enqueue(t, { ...message, id: 0 });
      return Promise.resolve(null);
    }
    return this.post(t, (id) => ({ ...message, id }));
  }

  /** The shards this node owns now, with their epochs: every thread serves those that map to it. */
  async setShards(epochs: ReadonlyMap<number, string>): Promise<void> {
    const list = [...epochs.entries()];
    this.shards = list;
    await Promise.all(this.threads.map((t) => this.post<null>(t, (id) => ({ t: 'shards', id, epochs: list }))));
  }

  /** Shards handed over: their threads stop serving them and answer once what was written for them is committed. */
  async release(shards: number[]): Promise<void> {
    await Promise.all(this.threads.map((t) => this.post<null>(t, (id) => ({ t: 'release', id, shards }))));
  }

  /** Subscribes to fenced commits: another node holds these shards now. */
  onFenced(fn: (shards: number[]) => void): void {
    this.fencedListeners.push(fn);
  }

  /** Subscribes to the threads' commit statistics (about once a second per busy thread). */
  /** Every thread has rebuilt the queues it serves: the node can answer for all of them (/health/ready). */
  get loaded(): boolean {
    return this.threads.length > 0 && this.threads.every((t) => !t.loading);
  }

  onStats(fn: (stats: CommitStats) => void): void {
    this.statsListeners.push(fn);
  }

  /** Subscribes to the events of committed groups, from every thread. */
  onEvents(fn: (events: DomainEvent[]) => void): void {
    this.listeners.push(fn);
  }

  /**
   * The actor host (thread) of this node that runs the actor, or null when another node owns its shard (every
   * shard is this node's outside a cluster).
   */
  hostOf(org: string, queue: string): number | null {
    const shard = this.shardOf(org, queue);
    if (this.shards !== null && !this.shards.some(([s]) => s === shard)) return null;
    return threadOf(shard, this.threads.length);
  }

  /** The actor hosts (threads) of this node. */
  get hosts(): number {
    return this.threads.length;
  }

  /**
   * The organization's events reach no listener from now on: a node's own warm-up is neither counted in its
   * metrics nor delivered to anyone (it is deleted afterwards, so the set holds one id per warm-up).
   */
  silence(org: string): void {
    this.quiet.add(org);
  }

  /**
   * Answers every long poll parked on this node's actors now, with no jobs, and parks none from then on: a stopping
   * node's workers (and the peers that forwarded claims to it) are answered at once instead of at the end of their
   * wait or of the stop's grace, those whose claim was still on its way included. With `via`, only the long polls
   * that node forwarded here (it is the one stopping).
   */
  async unpark(via?: string): Promise<void> {
    await Promise.all(this.threads.map((t) => this.post<null>(t, (id) => ({ t: 'unpark', id, ...(via !== undefined ? { via } : {}) })).catch(() => {})));
  }

  /** Fires due timers on every thread (manual clock) and waits for what they wrote to commit. */
  async tick(): Promise<void> {
    await Promise.all(this.threads.map((t) => this.post<null>(t, (id) => ({ t: 'tick', id }))));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    // A stopped pool's threads answer no more ticks: advancing a clock shared with a later node must not wait on them.
    this.unhook();
    await Promise.all(
      this.threads.map(async (t) => {
        await this.post<null>(t, (id) => ({ t: 'stop', id })).catch(() => {});
        await t.worker.terminate();
      }),
    );
  }

  private shardOf(org: string, queue: string): number {
    return shardOf(actorKey(org, queue), this.config.shardCount);
  }

  /** The one place a reply's type is taken from the op map of the message that asked for it. */
  private route<R>(shard: number, message: Routed): Promise<R> {
    return (this.router ? this.router(shard, message) : this.local(shard, message)) as Promise<R>;
  }

  /** The reply arrives as plain data typed by the op map of the message that asked for it. */
  private post<R = unknown>(t: Thread, make: (id: number) => ThreadIn): Promise<R> {
    const id = this.nextId++;
    return new Promise<R>((resolve, reject) => {
      t.pending.set(id, { resolve: (v) => resolve(v as R), reject });
      this.enqueue(t, make(id));
    });
  }

  /** One postMessage per thread per turn, whatever was asked during it. */
  private enqueue(t: Thread, m: ThreadIn): void {
    if (t.outbox.length === 0) {
      setImmediate(() => {
        const batch = t.outbox;
        t.outbox = [];
        this.send(t, batch);
      });
    }
    t.outbox.push(m);
  }

  /**
   * Posts a batch. Structured clone throws on what it cannot copy (a value nested deep enough to exhaust its
   * stack); the edge refuses such input, but should one get this far it fails its own request, not the batch
   * and never the process: the batch is then posted message by message.
   */
  private send(t: Thread, batch: ThreadIn[]): void {
    try {
      t.worker.postMessage(batch);
      return;
    } catch {
      // fall through: find the message that cannot be copied
    }
    for (const m of batch) {
      try {
        t.worker.postMessage([m]);
      } catch (err) {
        const p = t.pending.get(m.id);
        t.pending.delete(m.id);
        p?.reject(new AppError('VALIDATION_ERROR', `The request holds data that cannot be passed on: ${(err as Error).message}`));
      }
    }
  }

  private spawn(index: number): Thread {
    const { link, transfer } = this.makeLink();
    const workerData: ThreadInit = {
      index,
      threads: actorHosts(this.config.actorThreads),
      nodeId: this.nodeId,
      config: this.config,
      store: link,
      clock: this.clock instanceof ManualClock ? this.clock.buffer : null,
    };
    const worker = this.config.actorThreads === 0
      ? new InlineThread(workerData)
      : spawnWorker(new URL('./actor-thread.ts', import.meta.url), { workerData, transferList: transfer });
    let ready!: { resolve(): void; reject(e: Error): void };
    const t: Thread = {
      index,
      worker,
      pending: new Map(),
      outbox: [],
      // Until the thread says otherwise: it rebuilds its queues first.
      loading: true,
      ready: new Promise<void>((resolve, reject) => (ready = { resolve, reject })),
    };
    t.ready.catch(() => {}); // awaited by start(); a later death must not become an unhandled rejection
    worker.on('message', (batch: ThreadOut[]) => {
      for (const m of batch) {
        if ('events' in m) {
          const events = this.quiet.size === 0 ? m.events : m.events.filter((e) => !this.quiet.has(e.organization_id));
          if (events.length > 0) for (const fn of this.listeners) fn(events);
          continue;
        }
        if ('stats' in m) {
          for (const fn of this.statsListeners) fn(m.stats);
          continue;
        }
        if ('fenced' in m) {
          for (const fn of this.fencedListeners) fn(m.fenced);
          continue;
        }
        if ('loading' in m) {
          t.loading = m.loading;
          continue;
        }
        if (m.id === 0) {
          if (!m.ok) return ready.reject(AppError.fromWire(m.error));
          ready.resolve();
          // A restarted thread serves this node's shards like the one it replaces.
          if (this.shards !== null) {
            const epochs = this.shards;
            this.post(t, (id) => ({ t: 'shards', id, epochs })).catch(() => {});
          }
          continue;
        }
        const p = t.pending.get(m.id);
        if (!p) continue;
        t.pending.delete(m.id);
        if (m.ok) p.resolve(m.value);
        else p.reject(AppError.fromWire(m.error));
      }
    });
    const died = (why: string) => {
      const err = new AppError('UNAVAILABLE', `actor thread ${index} stopped: ${why}`);
      ready.reject(err);
      for (const p of t.pending.values()) p.reject(err);
      t.pending.clear();
      if (this.stopping || this.threads[index] !== t) return;
      console.error(`[actor-pool] thread ${index} died (${why}); restarting`);
      this.threads[index] = this.spawn(index);
    };
    worker.on('error', (err) => died(err.message));
    worker.on('exit', (code) => died(`exit ${code}`));
    return t;
  }
}
