// Forwarding: a message for a shard this node does not own goes to the node that does, over the node-to-node
// channel, and its answer comes back. Any node accepts any request; only the owner runs it.
//
// When may a message be sent again? Only when it certainly did not run: the owner answered SHARD_MOVED (it no
// longer holds the shard, or its commit was fenced and wrote nothing), or the owner could not be reached at
// all. Then the map is read again and the message goes to the new owner, for up to `patienceMs` (a shard
// between owners: a lease running out, a hand-over). A connection lost while the message was out may have run
// it: that is a 503, never a second attempt.
import { AppError } from '../../errors.js';
import { PeerError, type Peers } from '../../io/cluster/peers.js';
import type { Membership } from './membership.js';

export interface Forwarded<M> {
  shard: number;
  message: M;
}

export interface ForwardingOptions<M> {
  membership: Membership;
  peers: Peers | null;
  /** Runs a message for a shard this node owns (on its actor threads); `from`: the node that forwarded it. */
  local(shard: number, message: M, from?: string): Promise<unknown>;
  /** How long a message waits for a shard that has no reachable owner before it is a 503. */
  patienceMs: number;
}

/** The node-to-node method that carries actor messages. */
export const ASK = 'ask';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Forwarding<M> {
  constructor(private readonly o: ForwardingOptions<M>) {}

  /** Registers the receiving side: a peer's message for a shard this node owns. */
  serve(): void {
    this.o.peers?.handle(ASK, (payload, from) => {
      const { shard, message } = payload as Forwarded<M>;
      if (!this.o.membership.owns(shard)) throw moved(shard);
      return this.o.local(shard, message, from);
    });
  }

  async send(shard: number, message: M): Promise<unknown> {
    const deadline = Date.now() + this.o.patienceMs;
    for (let attempt = 0; ; attempt++) {
      try {
        if (this.o.membership.owns(shard)) return await this.o.local(shard, message);
        const owner = this.o.membership.ownerOf(shard);
        if (owner === null || owner.address === null || this.o.peers === null) throw moved(shard);
        return await this.o.peers.call(owner.id, owner.address, ASK, { shard, message } satisfies Forwarded<M>);
      } catch (err) {
        const again = (err instanceof AppError && err.code === 'SHARD_MOVED') || (err instanceof PeerError && err.kind === 'unreachable');
        if (err instanceof PeerError && err.kind === 'lost') {
          throw new AppError('UNAVAILABLE', 'The node that owns this queue went away while it handled the request; it may or may not have run');
        }
        if (!again) throw err;
        if (Date.now() >= deadline) throw new AppError('UNAVAILABLE', 'The queue is moving between nodes; retry shortly');
        await sleep(Math.min(25 * 2 ** attempt, 250));
        await this.o.membership.refresh().catch(() => {});
      }
    }
  }
}

export const moved = (shard: number): AppError => new AppError('SHARD_MOVED', `Shard ${shard} is not served by this node`);
