// Events and stream counts between the nodes of a cluster, over the node-to-node channel.
//
// Each node tells the others, in one small message, which organizations it has subscribers of (its streams
// and stream feeds) and how many streams each has open: at once when that changes (at most once per turn), and
// after every membership round, so a node that joined or lost a message learns it within a round. An event
// committed on a node is then sent to exactly the nodes that have subscribers of its organization, once each;
// the stream cap of an organization counts the streams every node reported. A node that is gone is forgotten:
// its reports no longer count.
//
// An event sent while the connection to a node is down is lost for that node's subscribers (the connection
// comes back at the next message); the stream itself stays open.
import type { EventBus, SluiceEvent } from '../../app/events.js';
import type { Cluster } from '../../runtime/cluster/cluster.js';
import type { StreamHub } from './hub.js';

const EVENTS = 'events';
const INTEREST = 'interest';

interface Interest {
  /** Organizations with subscribers on the sending node, with its open stream count (0: feeds only). */
  orgs: Array<[organizationId: string, streams: number]>;
}

export class EventFanOut {
  /** Per organization, the nodes that have its subscribers. */
  private readonly wanted = new Map<string, Set<string>>();
  /** Per node, what it last reported. */
  private readonly reports = new Map<string, Set<string>>();
  private readonly listening = new Set<string>();
  private announceQueued = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly bus: EventBus,
    private readonly hub: StreamHub,
  ) {}

  start(): void {
    for (const org of this.bus.interests((org, on) => {
      if (on) this.listening.add(org);
      else this.listening.delete(org);
      this.announceSoon();
    })) {
      this.listening.add(org);
    }
    this.hub.onCount(() => this.announceSoon());
    this.cluster.handle(EVENTS, (payload) => {
      for (const e of payload as SluiceEvent[]) this.bus.fromPeer(e);
    });
    this.cluster.handle(INTEREST, (payload, from) => this.heard(from, payload as Interest));
    this.cluster.onRound(() => {
      this.forgetGone();
      this.announce();
    });
    this.bus.connect({
      wants: (org) => (this.wanted.get(org)?.size ?? 0) > 0,
      send: (e) => {
        const nodes = this.wanted.get(e.organization_id);
        if (!nodes) return;
        const others = this.cluster.others();
        for (const n of others) if (nodes.has(n.id)) this.cluster.cast(n, EVENTS, [e]);
      },
    });
  }

  private heard(from: string, interest: Interest): void {
    const orgs = new Set(interest.orgs.map(([org]) => org));
    for (const org of this.reports.get(from) ?? []) if (!orgs.has(org)) this.unwant(org, from);
    for (const org of orgs) {
      let set = this.wanted.get(org);
      if (!set) this.wanted.set(org, (set = new Set()));
      set.add(from);
    }
    this.reports.set(from, orgs);
    this.hub.setElsewhere(from, interest.orgs);
  }

  private forgetGone(): void {
    const live = new Set(this.cluster.others().map((n) => n.id));
    for (const [node, orgs] of [...this.reports]) {
      if (live.has(node)) continue;
      this.reports.delete(node);
      for (const org of orgs) this.unwant(org, node);
    }
    this.hub.keepElsewhere(live);
  }

  private unwant(org: string, node: string): void {
    const set = this.wanted.get(org);
    set?.delete(node);
    if (set?.size === 0) this.wanted.delete(org);
  }

  private announceSoon(): void {
    if (this.announceQueued) return;
    this.announceQueued = true;
    setImmediate(() => {
      this.announceQueued = false;
      this.announce();
    });
  }

  private announce(): void {
    const streams = new Map(this.hub.counts());
    const orgs = new Set([...this.listening, ...streams.keys()]);
    const interest: Interest = { orgs: [...orgs].map((org) => [org, streams.get(org) ?? 0]) };
    for (const n of this.cluster.others()) this.cluster.cast(n, INTEREST, interest);
  }
}
