// Events and stream counts between the nodes of a cluster, over the node-to-node channel.
//
// Each node tells the others, in one small message, which organizations it has subscribers of (its streams
// and stream feeds) and how many streams each has open: at once when that changes (at most once per turn), and
// after every membership round, so a node that joined or lost a message learns it within a round. An event
// committed on a node is then sent to exactly the nodes that have subscribers of its organization, once each;
// the stream cap of an organization counts the streams every node reported. A node that is gone is forgotten:
// its reports no longer count.
//
// Every event a node sends to another carries the next number of that pair's sequence, and the sender keeps the
// last RESEND_MAX it sent each node (for RESEND_MS). A receiver that sees a number skipped (a message lost while a
// connection was down), or hears in a round's interest message that more were sent than it received, asks for
// what it missed and delivers it, in order, before what came after: every subscriber sees each event once. Only
// events older than what the sender keeps can be lost, and then the receiver says so in its log.
import type { EventBus, SluiceEvent } from '../../app/events.js';
import type { Cluster } from '../../runtime/cluster/cluster.js';
import type { StreamHub } from './hub.js';

const EVENTS = 'events';
const INTEREST = 'interest';
const SINCE = 'events.since';
const RESEND_MAX = 5_000;
const RESEND_MS = 120_000;

interface Interest {
  /** Organizations with subscribers on the sending node, with its open stream count (0: feeds only). */
  orgs: Array<[organizationId: string, streams: number]>;
  /** How many events the sending node has sent the receiving one. */
  sent: number;
}

/** Events sent to another node, numbered from `seq` on. */
interface Batch {
  seq: number;
  events: SluiceEvent[];
}

/** What one node sent another: the count, and the last of them, to send again if asked. */
interface Outgoing {
  sent: number;
  recent: Array<{ seq: number; at: number; e: SluiceEvent }>;
}

/** What one node received from another: the last number delivered, and what arrived while a gap was fetched. */
interface Incoming {
  got: number;
  fetching: Promise<void> | null;
  waiting: Batch[];
}

export class EventFanOut {
  /** Per organization, the nodes that have its subscribers. */
  private readonly wanted = new Map<string, Set<string>>();
  /** Per node, what it last reported. */
  private readonly reports = new Map<string, Set<string>>();
  private readonly listening = new Set<string>();
  private announceQueued = false;
  private readonly outgoing = new Map<string, Outgoing>();
  private readonly incoming = new Map<string, Incoming>();

  constructor(
    private readonly cluster: Pick<Cluster, 'others' | 'handle' | 'cast' | 'call' | 'onRound'>,
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
    this.cluster.handle(EVENTS, (payload, from) => this.received(from, payload as Batch));
    this.cluster.handle(SINCE, (payload, from) => this.resend(from, payload as number));
    this.cluster.handle(INTEREST, (payload, from) => {
      const interest = payload as Interest;
      this.heard(from, interest);
      this.behind(from, interest.sent);
    });
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
        for (const n of others) if (nodes.has(n.id)) this.cluster.cast(n, EVENTS, this.numbered(n.id, e));
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

  /** The next number of the sequence to `node`, kept to send again. */
  private numbered(node: string, e: SluiceEvent): Batch {
    let out = this.outgoing.get(node);
    if (!out) this.outgoing.set(node, (out = { sent: 0, recent: [] }));
    const seq = ++out.sent;
    const now = Date.now();
    out.recent.push({ seq, at: now, e });
    while (out.recent.length > RESEND_MAX || (out.recent.length > 0 && out.recent[0]!.at < now - RESEND_MS)) out.recent.shift();
    return { seq, events: [e] };
  }

  /** What `node` asks for again: every event sent to it after number `after` that is still kept. */
  private resend(node: string, after: number): Batch {
    const out = this.outgoing.get(node);
    const recent = out?.recent ?? [];
    const from = recent.findIndex((r) => r.seq > after);
    const kept = from < 0 ? [] : recent.slice(from);
    // Nothing kept: numbered from after the last one sent, so the asker learns what it cannot get.
    return { seq: kept[0]?.seq ?? Math.max(after, out?.sent ?? 0) + 1, events: kept.map((r) => r.e) };
  }

  private received(from: string, batch: Batch): void {
    const inc = this.incomingOf(from);
    if (inc.fetching) {
      inc.waiting.push(batch);
      return;
    }
    if (batch.seq > inc.got + 1) {
      inc.waiting.push(batch);
      this.fetch(from, inc);
      return;
    }
    this.deliver(inc, batch);
  }

  /** A round's interest message says how many were sent: fewer received means some were lost. */
  private behind(from: string, sent: number): void {
    const inc = this.incomingOf(from);
    if (sent > inc.got && !inc.fetching) this.fetch(from, inc);
  }

  private fetch(from: string, inc: Incoming): void {
    const node = this.cluster.others().find((n) => n.id === from);
    if (!node) return;
    const after = inc.got;
    inc.fetching = this.cluster
      .call<Batch>(node, SINCE, after)
      .then((missed) => {
        if (missed.seq > after + 1) console.error(`[events] events ${after + 1} to ${missed.seq - 1} from node ${from} are no longer kept there: its subscribers here missed them`);
        inc.got = Math.max(inc.got, missed.seq - 1);
        this.deliver(inc, missed);
      })
      .then(
        () => {
          inc.fetching = null;
          this.drain(from, inc);
        },
        () => {
          // The node cannot be reached now: what waits is held, and asked for again a second later.
          setTimeout(() => {
            inc.fetching = null;
            this.drain(from, inc);
          }, 1_000).unref();
        },
      );
  }

  /** What arrived while a gap was fetched, in order. */
  private drain(from: string, inc: Incoming): void {
    const waiting = inc.waiting.sort((a, b) => a.seq - b.seq);
    inc.waiting = [];
    for (const b of waiting) this.received(from, b);
  }

  /** Delivers the events of a batch not delivered yet, in order. */
  private deliver(inc: Incoming, batch: Batch): void {
    batch.events.forEach((e, i) => {
      const seq = batch.seq + i;
      if (seq <= inc.got) return;
      inc.got = seq;
      this.bus.fromPeer(e);
    });
  }

  private incomingOf(from: string): Incoming {
    let inc = this.incoming.get(from);
    if (!inc) this.incoming.set(from, (inc = { got: 0, fetching: null, waiting: [] }));
    return inc;
  }

  private forgetGone(): void {
    const live = new Set(this.cluster.others().map((n) => n.id));
    for (const node of [...this.outgoing.keys()]) if (!live.has(node)) this.outgoing.delete(node);
    for (const node of [...this.incoming.keys()]) if (!live.has(node)) this.incoming.delete(node);
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
    const list: Interest['orgs'] = [...orgs].map((org) => [org, streams.get(org) ?? 0]);
    for (const n of this.cluster.others()) this.cluster.cast(n, INTEREST, { orgs: list, sent: this.outgoing.get(n.id)?.sent ?? 0 } satisfies Interest);
  }
}
