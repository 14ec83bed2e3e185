// The main thread's side of the actor threads: routes each ask to the thread that owns its shard, batches
// posts per turn, resolves replies, and restarts a thread that dies (its actors rebuild from the store;
// asks in flight to it fail with 503 rather than hang).
import type { TransferListItem, Worker } from 'node:worker_threads';
import type { DomainEvent } from '../actors/records.js';
import type { Clock } from '../clock.js';
import { ManualClock } from '../clock.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import type { StoreLink } from '../io/db/store.js';
import type { ThreadInit } from './actor-thread.js';
import { ORG_ACTOR, type CommitStats, type OrgOp, type OrgOps, type QueueOp, type QueueOps, type ThreadIn, type ThreadOut } from './protocol.js';
import { actorKey, shardOf } from './shard.js';
import { spawnWorker } from './spawn.js';

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
}

interface Thread {
  index: number;
  worker: Worker;
  pending: Map<number, Pending>;
  outbox: ThreadIn[];
  ready: Promise<void>;
}

/** Makes a StoreLink for a new thread (a fresh pg pool, or a new port to the PGlite storage thread). */
export type LinkFactory = () => { link: StoreLink; transfer: TransferListItem[] };

export class ActorPool {
  private threads: Thread[] = [];
  private nextId = 1;
  private stopping = false;
  private readonly listeners: Array<(events: DomainEvent[]) => void> = [];
  private readonly statsListeners: Array<(stats: CommitStats) => void> = [];
  private unhook: () => void = () => {};

  constructor(
    private readonly config: Config,
    private readonly clock: Clock,
    private readonly makeLink: LinkFactory,
  ) {
    if (clock instanceof ManualClock) this.unhook = clock.onAdvance(() => this.tick());
  }

  async start(): Promise<void> {
    for (let i = 0; i < this.config.actorThreads; i++) this.threads.push(this.spawn(i));
    await Promise.all(this.threads.map((t) => t.ready));
  }

  /** A queue actor's operation; the reply once what it wrote is committed. */
  ask<K extends QueueOp>(org: string, queue: string, op: K, args: QueueOps[K]['args']): Promise<QueueOps[K]['reply']> {
    const t = this.threadOf(org, queue);
    return this.post<QueueOps[K]['reply']>(t, (id) => ({ t: 'queue', id, org, queue, op, args }));
  }

  /** An operation of the organization's quota actor. */
  askOrg<K extends OrgOp>(org: string, op: K, args: OrgOps[K]['args']): Promise<OrgOps[K]['reply']> {
    const t = this.threadOf(org, ORG_ACTOR);
    return this.post<OrgOps[K]['reply']>(t, (id) => ({ t: 'org', id, org, op, args }));
  }

  /** A quota-actor message nobody waits on (counters fed by events). */
  tellOrg<K extends OrgOp>(org: string, op: K, args: OrgOps[K]['args']): void {
    this.enqueue(this.threadOf(org, ORG_ACTOR), { t: 'org', id: 0, org, op, args });
  }

  /** Subscribes to the threads' commit statistics (about once a second per busy thread). */
  onStats(fn: (stats: CommitStats) => void): void {
    this.statsListeners.push(fn);
  }

  /** Subscribes to the events of committed groups, from every thread. */
  onEvents(fn: (events: DomainEvent[]) => void): void {
    this.listeners.push(fn);
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

  private threadOf(org: string, queue: string): Thread {
    return this.threads[shardOf(actorKey(org, queue), this.threads.length)]!;
  }

  /** The reply arrives as plain data typed by the op map of the message that asked for it. */
  private post<R>(t: Thread, make: (id: number) => ThreadIn): Promise<R> {
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
      threads: this.config.actorThreads,
      config: this.config,
      store: link,
      clock: this.clock instanceof ManualClock ? this.clock.buffer : null,
    };
    const worker = spawnWorker(new URL('./actor-thread.ts', import.meta.url), { workerData, transferList: transfer });
    let ready!: { resolve(): void; reject(e: Error): void };
    const t: Thread = {
      index,
      worker,
      pending: new Map(),
      outbox: [],
      ready: new Promise<void>((resolve, reject) => (ready = { resolve, reject })),
    };
    t.ready.catch(() => {}); // awaited by start(); a later death must not become an unhandled rejection
    worker.on('message', (batch: ThreadOut[]) => {
      for (const m of batch) {
        if ('events' in m) {
          for (const fn of this.listeners) fn(m.events);
          continue;
        }
        if ('stats' in m) {
          for (const fn of this.statsListeners) fn(m.stats);
          continue;
        }
        if (m.id === 0) {
          if (m.ok) ready.resolve();
          else ready.reject(AppError.fromWire(m.error));
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
