// The open real-time streams of this node (SSE responses and WebSockets alike): at most `perOrg` per
// organization across the cluster (this node's streams plus those the other nodes report: fan-out.ts), each
// listening to its own organization's events on the EventBus, and each ended when its credential is revoked (a
// revoked key ends its own streams and those of JWTs issued from it; logout ends the streams of the logged-out
// tokens). Releasing a stream removes its bus listeners.
import { JobIds } from '../../actors/ids.js';
import type { Clock } from '../../clock.js';
import { AppError } from '../../errors.js';
import type { EventBus, SluiceEvent } from '../../app/events.js';
import type { Authenticator, Principal, Revocation } from '../../app/auth.js';

/** What clients receive: the bus envelope without organization_id (always the caller's own). */
export interface Envelope {
  id: string;
  event: string;
  created_at: string;
  data: Record<string, unknown>;
}

/** `callback` is the outgoing deliveries' cue that a job has a completion callback; it is not for clients. */
export const toEnvelope = (e: SluiceEvent): Envelope => {
  if (!('callback' in e.data)) return { id: e.id, event: e.event, created_at: e.created_at, data: e.data };
  const { callback: _internal, ...data } = e.data;
  return { id: e.id, event: e.event, created_at: e.created_at, data };
};

export class Stream {
  private readonly unsubscribe: Array<() => void> = [];
  private onEnd: (() => void) | null = null;
  private endAsked = false;
  released = false;

  constructor(
    readonly principal: Principal,
    private readonly events: EventBus,
    private readonly free: (s: Stream) => void,
  ) {}

  /** Listens to the organization's events until release. */
  listen(fn: (e: Envelope) => void): void {
    if (this.released) return;
    this.unsubscribe.push(this.events.subscribe(this.principal.organizationId, (e) => fn(toEnvelope(e))));
  }

  /** How the transport ends when the hub ends the stream; runs at once if that was already asked. */
  endWith(fn: () => void): void {
    this.onEnd = fn;
    if (this.endAsked) fn();
  }

  /** Ends the transport (which then releases the stream). */
  end(): void {
    this.endAsked = true;
    this.onEnd?.();
  }

  /** Frees the slot and the bus listeners; idempotent. */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const u of this.unsubscribe.splice(0)) u();
    this.free(this);
  }
}

export class StreamHub {
  private readonly byOrg = new Map<string, Set<Stream>>();
  /** Open streams per organization on each other node, as they last reported them. */
  private readonly elsewhere = new Map<string, Map<string, number>>();
  private readonly countListeners: Array<(organizationId: string) => void> = [];
  private readonly ids = new JobIds();
  private readonly stopRevocations: () => void;

  constructor(
    private readonly events: EventBus,
    private readonly clock: Clock,
    auth: Authenticator,
    readonly perOrg: number,
  ) {
    this.stopRevocations = auth.onRevoke((r) => this.revoked(r));
  }

  /** Takes one of the organization's stream slots, or 429 TOO_MANY_STREAMS. Synchronous, so exact under races. */
  open(principal: Principal): Stream {
    const org = principal.organizationId;
    let set = this.byOrg.get(org);
    if ((set?.size ?? 0) + this.remote(org) >= this.perOrg) {
      throw new AppError('TOO_MANY_STREAMS', `At most ${this.perOrg} streams may be open at once`, { limit: this.perOrg });
    }
    if (!set) this.byOrg.set(org, (set = new Set()));
    const stream = new Stream(principal, this.events, (s) => {
      set.delete(s);
      if (set.size === 0 && this.byOrg.get(org) === set) this.byOrg.delete(org);
      this.counted(org);
    });
    set.add(stream);
    this.counted(org);
    return stream;
  }

  /** This node's open streams per organization (what it reports to the others). */
  counts(): Array<[organizationId: string, streams: number]> {
    return [...this.byOrg].map(([org, set]) => [org, set.size]);
  }

  /** Calls `fn` when this node's count of an organization's streams changes. */
  onCount(fn: (organizationId: string) => void): void {
    this.countListeners.push(fn);
  }

  /** What another node reported of its streams (all of them: an organization it leaves out has none there). */
  setElsewhere(node: string, counts: Array<[string, number]>): void {
    this.elsewhere.set(node, new Map(counts));
  }

  /** Forgets the reports of nodes that are gone. */
  keepElsewhere(live: Set<string>): void {
    for (const node of [...this.elsewhere.keys()]) if (!live.has(node)) this.elsewhere.delete(node);
  }

  private remote(org: string): number {
    let n = 0;
    for (const counts of this.elsewhere.values()) n += counts.get(org) ?? 0;
    return n;
  }

  private counted(org: string): void {
    for (const fn of this.countListeners) fn(org);
  }

  /** Open streams of an organization on this node. */
  count(organizationId: string): number {
    return this.byOrg.get(organizationId)?.size ?? 0;
  }

  /** An envelope for an event the streams make themselves (job.status, queue.stats). */
  envelope(event: string, data: Record<string, unknown>): Envelope {
    const at = this.clock.now();
    return { id: this.ids.next(at), event, created_at: new Date(at).toISOString(), data };
  }

  stop(): void {
    this.stopRevocations();
  }

  private revoked(r: Revocation): void {
    for (const set of this.byOrg.values()) {
      for (const s of [...set]) {
        const p = s.principal;
        const hit =
          (r.keyId !== null && p.apiKeyId === r.keyId) ||
          (p.tokenId !== undefined && r.tokenIds.includes(p.tokenId)) ||
          (p.sessionId !== undefined && r.tokenIds.includes(p.sessionId));
        if (hit) s.end();
      }
    }
  }
}
