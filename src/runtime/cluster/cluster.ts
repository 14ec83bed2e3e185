// This node's part in the cluster, put together: its id, the node-to-node channel (when CLUSTER_SECRET makes it
// one of several), its shard leases (Membership) and the forwarding of messages to the owner of their shard.
//
// Alone (the embedded store, or PostgreSQL without CLUSTER_SECRET) a node seizes every shard at start and
// forwards nothing; with CLUSTER_SECRET on PostgreSQL it takes a fair share, hands shards over when another node
// joins or when it stops, and sends messages of the shards it does not own to their owners.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Config } from '../../config.js';
import { Peers } from '../../io/cluster/peers.js';
import type { Store } from '../../io/db/store.js';
import type { Log } from '../../log.js';
import type { ActorPool } from '../actor-pool.js';
import type { Routed } from '../protocol.js';
import { Forwarding } from './forwarding.js';
import { Membership } from './membership.js';

/** The node-to-node method by which a node tells the others that it moved shards: they read the map at once. */
const MOVED = 'moved';
/** A stopping node's cast: answer the long polls it forwarded here. */
const UNPARK = 'unpark';

export interface ClusterOptions {
  config: Config;
  store: Store;
  log: Log;
}

export class Cluster {
  readonly nodeId = randomUUID();
  private readonly leaderListeners: Array<(leader: boolean) => void> = [];
  private readonly roundListeners: Array<() => void> = [];
  private peers: Peers | null = null;
  private membership: Membership | null = null;

  constructor(private readonly o: ClusterOptions) {}

  /** One of several nodes (PostgreSQL and CLUSTER_SECRET), rather than a node alone. */
  get shared(): boolean {
    return this.o.config.databaseUrl !== null && this.o.config.clusterSecret !== null;
  }

  get leader(): boolean {
    return this.membership?.leader ?? false;
  }

  /** Calls `fn` when this node becomes or stops being the one that runs the cluster-wide tasks. */
  onLeader(fn: (leader: boolean) => void): void {
    this.leaderListeners.push(fn);
  }

  /** Joins: listens for peers, takes this node's shards, and routes every message of `pool` by its shard. */
  async start(pool: ActorPool): Promise<void> {
    const { config, store, log } = this.o;
    let address: string | null = null;
    if (this.shared) {
      const peers = (this.peers = new Peers({ nodeId: this.nodeId, secret: config.clusterSecret!, log }));
      const port = await peers.listen(config.clusterHost, config.clusterPort);
      address = config.clusterAdvertise ?? `${advertisedHost(config.clusterHost)}:${port}`;
    }
    const membership = (this.membership = new Membership(
      { store, log, nodeId: this.nodeId, address, shardCount: config.shardCount, ttlMs: config.clusterLeaseMs, solo: !this.shared },
      {
        owned: (epochs) => void pool.setShards(epochs).catch((err) => log.error('could not tell the actor threads their shards', err)),
        lost: () => {},
        release: (shards) => pool.release(shards),
        leader: (leader) => {
          for (const fn of this.leaderListeners) fn(leader);
        },
        moved: () => this.announce(),
        round: () => {
          for (const fn of this.roundListeners) fn();
        },
      },
    ));
    const forwarding = new Forwarding<Routed>({
      membership,
      peers: this.peers,
      local: (shard, message, from) => pool.local(shard, from !== undefined && message.t === 'queue' ? { ...message, via: from } : message),
      // A shard between owners (a lease running out after a node died) is waited for up to a lease's length.
      patienceMs: config.clusterLeaseMs,
    });
    forwarding.serve();
    this.peers?.handle(MOVED, () => membership.poke());
    this.peers?.handle(UNPARK, (_payload, from) => pool.unpark(from));
    pool.onFenced(() => membership.poke());
    pool.routeWith((shard, message) => forwarding.send(shard, message));
    await membership.start();
  }

  /** Hands this node's shards over (their commits drained first), leaves the registry, closes the channel. */
  async stop(): Promise<void> {
    await this.membership?.stop();
    await this.peers?.close();
  }

  /** Calls `fn` after every membership round (about every CLUSTER_LEASE_MS / 4). */
  onRound(fn: () => void): void {
    this.roundListeners.push(fn);
  }

  /** The other live nodes that can be reached (none for a node alone). */
  others(): Array<{ id: string; address: string }> {
    if (!this.peers || !this.membership) return [];
    return this.membership.liveNodes().flatMap((n) => (n.id !== this.nodeId && n.address !== null ? [{ id: n.id, address: n.address }] : []));
  }

  /** What this node does when another casts or calls `method` (a node alone receives nothing). */
  handle(method: string, fn: (payload: unknown, from: string) => unknown): void {
    this.peers?.handle(method, fn);
  }

  /** Calls `method` on another node and waits for its answer. */
  call<T>(node: { id: string; address: string }, method: string, payload: unknown): Promise<T> {
    if (!this.peers) return Promise.reject(new Error('this node runs alone'));
    return this.peers.call<T>(node.id, node.address, method, payload);
  }

  /** Sends `method` to one other node, without waiting; lost if it cannot be reached. */
  cast(node: { id: string; address: string }, method: string, payload: unknown): void {
    this.peers?.cast(node.id, node.address, method, payload);
  }

  /**
   * This node stops: the other live nodes answer the long polls it forwarded to them now, with no jobs (its clients
   * are answered instead of cut at the end of the grace, and no job goes to a claim whose client is leaving).
   */
  unparkElsewhere(): void {
    for (const n of this.others()) this.cast(n, UNPARK, null);
  }

  /** Tells the other live nodes to read the map of owners now. */
  private announce(): void {
    for (const n of this.others()) this.cast(n, MOVED, null);
  }
}

/** The address peers reach this node at when CLUSTER_ADVERTISE is not set: the bound host, or this machine's first external IPv4. */
function advertisedHost(host: string): string {
  if (host !== '0.0.0.0' && host !== '::') return host;
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
