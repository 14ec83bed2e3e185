// The node's event bus: the public events of every organization (job and queue activity from the actor
// threads, worker, schedule and workflow changes from the main thread), in the one envelope of DESIGN.md
// §4, handed to whoever listens (SSE and WebSocket hubs, outgoing webhooks). Events are published after the
// change they describe is committed.
//
// Subscribers are kept per organization, so fan-out costs nothing for organizations nobody watches; a
// subscriber for all organizations (outgoing webhook deliveries, deliveries.ts) sees everything that happens on
// this node.
//
// Many nodes: an event is published on the node where its change was committed. Subscribers of one
// organization (streams) must see it whichever node they are on, so the bus hands an event to `remote` when
// another node has such subscribers (`connect`), and delivers the events other nodes send (`fromPeer`) to its
// own subscribers of that organization only. Subscribers of every organization act on an event (webhook
// deliveries) and hear only this node's: each event is acted on once in the cluster.
import type { DomainEvent } from '../actors/records.js';
import { JobIds } from '../actors/ids.js';
import type { Clock } from '../clock.js';

export interface SluiceEvent {
  id: string;
  event: string;
  created_at: string;
  organization_id: string;
  data: Record<string, unknown>;
}

export type EventListener = (e: SluiceEvent) => void;

/** Asked before an event is built for a listener: false skips it for that listener (and builds nothing if none wants it). */
export type EventInterest = (organizationId: string, event: string, data: Record<string, unknown>) => boolean;

const accepts = (wants: EventInterest | null, organizationId: string, event: string, data: Record<string, unknown>): boolean =>
  wants === null || wants(organizationId, event, data);

/** Where events go for subscribers on other nodes: `wants` says whether any has one for the organization. */
export interface RemoteSubscribers {
  wants(organizationId: string): boolean;
  send(e: SluiceEvent): void;
}

export class EventBus {
  private readonly byOrg = new Map<string, Map<EventListener, EventInterest | null>>();
  private readonly everyOrg = new Map<EventListener, EventInterest | null>();
  private readonly ids = new JobIds();
  private remote: RemoteSubscribers | null = null;
  private readonly interestListeners: Array<(organizationId: string, listening: boolean) => void> = [];

  constructor(
    private readonly clock: Clock,
    private readonly onError: (err: unknown) => void = (err) => console.error('[events]', err),
  ) {}

  /**
   * Listens to one organization's events (null: every organization's), optionally only those `wants` accepts, so
   * that events nobody wants cost no envelope (a gRPC stream listens for cancels only). Returns the unsubscribe.
   */
  subscribe(organizationId: string | null, fn: EventListener, wants: EventInterest | null = null): () => void {
    if (organizationId === null) {
      this.everyOrg.set(fn, wants);
      return () => this.everyOrg.delete(fn);
    }
    let set = this.byOrg.get(organizationId);
    if (!set) {
      this.byOrg.set(organizationId, (set = new Map()));
      for (const l of this.interestListeners) l(organizationId, true);
    }
    set.set(fn, wants);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.byOrg.get(organizationId) === set) {
        this.byOrg.delete(organizationId);
        for (const l of this.interestListeners) l(organizationId, false);
      }
    };
  }

  /** Sends events to the subscribers of other nodes from now on. */
  connect(remote: RemoteSubscribers): void {
    this.remote = remote;
  }

  /** The organizations this node has subscribers of, and a call whenever one starts or stops having any. */
  interests(onChange: (organizationId: string, listening: boolean) => void): string[] {
    this.interestListeners.push(onChange);
    return [...this.byOrg.keys()];
  }

  /** An event published on another node: for this node's subscribers of its organization, nobody else. */
  fromPeer(e: SluiceEvent): void {
    const set = this.byOrg.get(e.organization_id);
    if (set) for (const [fn, wants] of set) if (accepts(wants, e.organization_id, e.event, e.data)) this.deliver(fn, e);
  }

  /** How many listen to this organization's events in particular (not counting those of every organization). */
  listeners(organizationId: string): number {
    return this.byOrg.get(organizationId)?.size ?? 0;
  }

  publish(organizationId: string, event: string, data: Record<string, unknown>, at: number = this.clock.now()): void {
    let to: EventListener[] | null = null;
    for (const [fn, wants] of this.everyOrg) if (accepts(wants, organizationId, event, data)) (to ??= []).push(fn);
    const set = this.byOrg.get(organizationId);
    if (set) for (const [fn, wants] of set) if (accepts(wants, organizationId, event, data)) (to ??= []).push(fn);
    const elsewhere = this.remote !== null && this.remote.wants(organizationId);
    if (to === null && !elsewhere) return;
    const e: SluiceEvent = { id: this.ids.next(at), event, created_at: new Date(at).toISOString(), organization_id: organizationId, data };
    if (to) for (const fn of to) this.deliver(fn, e);
    if (elsewhere) this.remote!.send(e);
  }

  /** The actor threads' committed events, in the public envelope. */
  fromActors(events: DomainEvent[]): void {
    for (const e of events) {
      if (e.type === 'job') {
        this.publish(e.organization_id, e.event, { job_id: e.job_id, queue_name: e.queue_name, status: e.status, ...e.data }, e.at);
      } else if (e.type === 'queue') {
        this.publish(e.organization_id, e.event, { queue_name: e.queue_name, ...e.data }, e.at);
      }
    }
  }

  private deliver(fn: EventListener, e: SluiceEvent): void {
    try {
      fn(e);
    } catch (err) {
      this.onError(err);
    }
  }
}
