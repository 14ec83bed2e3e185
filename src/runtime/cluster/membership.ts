// Membership — this node's place in the cluster: its row in the node registry, the shard leases it holds, the
// leader lease, and the map of who owns every shard (for forwarding). One round every `ttlMs / 4`:
//
//   heartbeat      the node is alive (registered again if the others pruned it)
//   renew          extend every lease it holds; a lease missing from the answer was taken by another node after
//                  it ran out (this node was paused or cut off): its actors are dropped at once (`lost`)
//   read the map   every shard's owner and the live nodes; a fair share is ceil(shards / live nodes)
//   rebalance      over its share (a node joined): hand the excess over (`release` drains them first, then the
//                  rows are freed for the newcomer); under it: take free or expired shards under a new epoch
//   leader         take the leader lease when it is free; `leader` says when this node gains or loses it
//
// A node that stops cleanly hands every shard over before it leaves, so nothing waits for a lease to run out.
// Epochs only grow: the epoch of each lease goes into every group commit of its shard (the fence), so a node
// that lost a shard without noticing yet writes nothing to it.
import type { Store } from '../../io/db/store.js';
import { acquireShards, type ShardLease } from '../../io/db/sql/acquireShards.js';
import { ensureShards } from '../../io/db/sql/ensureShards.js';
import { heartbeatNode } from '../../io/db/sql/heartbeatNode.js';
import { readCluster, type ClusterView } from '../../io/db/sql/readCluster.js';
import { registerNode } from '../../io/db/sql/registerNode.js';
import { releaseShards } from '../../io/db/sql/releaseShards.js';
import { removeNode } from '../../io/db/sql/removeNode.js';
import { renewShards } from '../../io/db/sql/renewShards.js';
import { seizeShards } from '../../io/db/sql/seizeShards.js';
import type { Log } from '../../log.js';

export const LEADER_SHARD = -1;

export interface MembershipOptions {
  store: Store;
  log: Log;
  nodeId: string;
  /** host:port of this node's node-to-node channel; null: it takes no forwarded messages. */
  address: string | null;
  shardCount: number;
  /** A lease runs this long from its last renewal; a node that stops renewing loses its shards after it. */
  ttlMs: number;
  /**
   * Take every shard at start, whoever held it, and never give one up: a node that runs alone (the embedded
   * store; PostgreSQL without CLUSTER_SECRET). Its fairness share is every shard.
   */
  solo: boolean;
}

export interface MembershipHandlers {
  /** The shards this node owns now, with their epochs (strings: bigint). Called on every change. */
  owned(epochs: ReadonlyMap<number, string>): void;
  /** Shards taken by another node behind this node's back: drop their actors, their commits are fenced anyway. */
  lost(shards: number[]): void;
  /** Shards about to be handed over: stop serving them and wait until what they wrote is committed. */
  release(shards: number[]): Promise<void>;
  /** This node became, or stopped being, the leader (cluster-wide singletons). */
  leader(isLeader: boolean): void;
  /** The map of owners changed (forwarding reads it through `ownerOf`). */
  changed?(): void;
  /** This node gained or handed over shards: the other nodes should read the map now rather than at their next round. */
  moved?(): void;
  /** A round ended (every ttlMs / 4): for what is refreshed at that pace (the events gossip). */
  round?(): void;
}

export interface NodeInfo {
  id: string;
  address: string | null;
}

export class Membership {
  private readonly leases = new Map<number, string>();
  private view: ClusterView = { shards: [], nodes: [] };
  private owners: Array<string | null> = [];
  private nodes = new Map<string, NodeInfo>();
  private timer: NodeJS.Timeout | null = null;
  private rounds: Promise<void> = Promise.resolve();
  private stopping = false;
  private isLeader = false;

  constructor(
    private readonly o: MembershipOptions,
    private readonly h: MembershipHandlers,
  ) {}

  get nodeId(): string {
    return this.o.nodeId;
  }

  /** Joins: registers, creates or checks the shards, and takes a first share before the node serves. */
  async start(): Promise<void> {
    await registerNode(this.o.store, this.o.nodeId, this.o.address);
    const count = await ensureShards(this.o.store, this.o.shardCount);
    if (count !== this.o.shardCount) {
      throw new Error(
        `the cluster has ${count} shards but SHARD_COUNT is ${this.o.shardCount}: every node must be started with the same SHARD_COUNT`,
      );
    }
    if (this.o.solo) {
      const others = (await readCluster(this.o.store, this.o.ttlMs)).nodes.filter((n) => n.id !== this.o.nodeId);
      if (others.length > 0) {
        this.o.log.warn(
          `${others.length} other node(s) used this database within the last ${this.o.ttlMs} ms; running alone (no CLUSTER_SECRET), ` +
            'this node takes every shard over: set CLUSTER_SECRET on every node to run them together',
        );
      }
      for (const l of await seizeShards(this.o.store, this.o.nodeId, this.o.ttlMs)) this.leases.set(l.shard, l.epoch);
      this.h.owned(this.shardEpochs());
    }
    await this.tick();
    this.schedule();
  }

  /** Runs a round now (after the one in progress): a commit was fenced, or a peer moved shards. */
  poke(): void {
    void this.nextRound();
  }

  /** The owner of a shard by the last map read, or null while nobody holds it (a lease ran out, a hand-over). */
  ownerOf(shard: number): NodeInfo | null {
    if (this.leases.has(shard)) return { id: this.o.nodeId, address: this.o.address };
    const owner = this.owners[shard] ?? null;
    if (owner === null || owner === this.o.nodeId) return null;
    return this.nodes.get(owner) ?? null;
  }

  owns(shard: number): boolean {
    return this.leases.has(shard);
  }

  /** The live nodes by the last map read, this one included. */
  liveNodes(): NodeInfo[] {
    return [...this.nodes.values()];
  }

  get leader(): boolean {
    return this.isLeader;
  }

  /** Reads the map again now (a peer announced a change, or a forward found a shard elsewhere than expected). */
  async refresh(): Promise<void> {
    await this.readMap();
  }

  /** Hands every shard over and leaves the registry. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.rounds;
    try {
      await heartbeatNode(this.o.store, this.o.nodeId, true);
      const shards = [...this.leases.keys()].filter((s) => s !== LEADER_SHARD);
      if (shards.length > 0) await this.handOver(shards);
      if (this.isLeader) await this.handOver([LEADER_SHARD]);
      await removeNode(this.o.store, this.o.nodeId);
    } catch (err) {
      // The store is gone: the leases run out by themselves and the others take over.
      this.o.log.warn('could not hand the shards over at shutdown; they move when their leases run out', err);
    }
  }

  private schedule(): void {
    if (this.stopping) return;
    this.timer = setTimeout(() => void this.nextRound().finally(() => this.schedule()), Math.max(50, Math.floor(this.o.ttlMs / 4)));
    this.timer.unref();
  }

  /** Rounds run one after the other, whoever asks for them (the timer, a poke). */
  private nextRound(): Promise<void> {
    const round = this.rounds
      .then(() => (this.stopping ? undefined : this.tick()))
      .catch((err) => this.o.log.warn('cluster round failed; the next one retries', err));
    this.rounds = round;
    return round;
  }

  private async tick(): Promise<void> {
    const { store, nodeId, ttlMs } = this.o;
    if (!(await heartbeatNode(store, nodeId, false))) {
      this.o.log.warn('this node was taken for dead and removed from the registry; registering again');
      await registerNode(store, nodeId, this.o.address);
    }
    const renewed = await renewShards(store, nodeId, ttlMs, [...this.leases].map(([shard, epoch]) => ({ shard, epoch })));
    const kept = new Map(renewed.map((l) => [l.shard, l.epoch]));
    const lost = [...this.leases.entries()].filter(([shard, epoch]) => kept.get(shard) !== epoch).map(([shard]) => shard);
    if (lost.length > 0) {
      for (const s of lost) this.leases.delete(s);
      const shards = lost.filter((s) => s !== LEADER_SHARD);
      if (shards.length > 0) {
        this.o.log.warn(`lost ${shards.length} shard(s) to other nodes (leases ran out): ${shards.join(', ')}`);
        this.h.lost(shards);
      }
      this.h.owned(this.shardEpochs());
    }
    await this.readMap();
    await this.rebalance();
    await this.claimLeader();
    this.h.round?.();
  }

  private async readMap(): Promise<void> {
    this.view = await readCluster(this.o.store, this.o.ttlMs);
    this.owners = [];
    for (const s of this.view.shards) if (s.shard >= 0) this.owners[s.shard] = s.owner;
    this.nodes = new Map(this.view.nodes.map((n) => [n.id, { id: n.id, address: n.address }]));
    this.nodes.set(this.o.nodeId, { id: this.o.nodeId, address: this.o.address });
    this.h.changed?.();
  }

  /** ceil(shards / live nodes that are not leaving), at least every shard for a node on its own. */
  private fairShare(): number {
    if (this.o.solo) return this.o.shardCount;
    const live = this.view.nodes.filter((n) => !n.leaving || n.id === this.o.nodeId).length;
    return Math.ceil(this.o.shardCount / Math.max(1, live));
  }

  private async rebalance(): Promise<void> {
    const mine = [...this.leases.keys()].filter((s) => s !== LEADER_SHARD).sort((a, b) => a - b);
    const share = this.fairShare();
    if (mine.length > share) {
      // Only when some live node has room to take them: otherwise they would sit unowned.
      const others = this.view.nodes.filter((n) => n.id !== this.o.nodeId && !n.leaving).length;
      if (others > 0) await this.handOver(mine.slice(share));
      return;
    }
    if (mine.length < share) {
      const gained = await acquireShards(this.o.store, this.o.nodeId, this.o.ttlMs, 'shards', share - mine.length);
      if (gained.length > 0) {
        for (const l of gained) this.leases.set(l.shard, l.epoch);
        this.h.owned(this.shardEpochs());
        await this.readMap();
        this.h.moved?.();
      }
    }
  }

  private async claimLeader(): Promise<void> {
    if (!this.leases.has(LEADER_SHARD)) {
      const [l] = await acquireShards(this.o.store, this.o.nodeId, this.o.ttlMs, 'leader', 1);
      if (l) this.leases.set(LEADER_SHARD, l.epoch);
    }
    const leader = this.leases.has(LEADER_SHARD);
    if (leader !== this.isLeader) {
      this.isLeader = leader;
      this.o.log.info(leader ? 'this node leads the cluster-wide tasks' : 'this node no longer leads the cluster-wide tasks');
      this.h.leader(leader);
    }
  }

  /** Stops serving the shards, waits for their commits, then frees their rows for another node. */
  private async handOver(shards: number[]): Promise<void> {
    const leases: ShardLease[] = shards.filter((s) => this.leases.has(s)).map((s) => ({ shard: s, epoch: this.leases.get(s)! }));
    for (const l of leases) this.leases.delete(l.shard);
    if (shards.includes(LEADER_SHARD) && this.isLeader) {
      this.isLeader = false;
      this.h.leader(false);
    }
    const data = leases.filter((l) => l.shard !== LEADER_SHARD).map((l) => l.shard);
    if (data.length > 0) {
      this.h.owned(this.shardEpochs());
      await this.h.release(data);
    }
    await releaseShards(this.o.store, this.o.nodeId, leases);
    this.h.moved?.();
  }

  private shardEpochs(): Map<number, string> {
    const out = new Map<number, string>();
    for (const [s, e] of this.leases) if (s !== LEADER_SHARD) out.set(s, e);
    return out;
  }
}
