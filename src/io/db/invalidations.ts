// Cluster-wide cache invalidation: what one node changed that other nodes may hold in memory (a revoked API
// key, JWT ids ended by logout, an organization's plan, its outgoing webhook endpoints, a schedule). On PostgreSQL it travels over LISTEN/NOTIFY on one
// channel; the embedded store is single-node, so a message is only handed back to this node.
//
// NOTIFY is sent after the change is committed and carries ids, never secrets or bodies (payloads must stay
// under 8000 bytes). Notifications sent while this node's listening connection was down are lost, so every
// (re)connection asks the caches to re-read what they hold (`resync`).
import pgListen, { type Subscriber } from 'pg-listen';
import type { Log } from '../../log.js';
import type { Store } from './store.js';

export type Invalidation =
  | { kind: 'api_key'; id: string }
  /** A key's permissions changed: cached copies are read again. */
  | { kind: 'api_key_changed'; id: string }
  | { kind: 'tokens'; tokens: Array<{ jti: string; expiresAt: number }> }
  | { kind: 'org'; id: string }
  /** An organization's outgoing webhook endpoints changed (created, updated, deleted, auto-disabled). */
  | { kind: 'webhooks'; id: string }
  /** A schedule changed (created, updated, paused, resumed, deleted): the leader's scheduler reads it again. */
  | { kind: 'schedule'; organizationId: string; id: string };

export interface InvalidationHandlers {
  apply(inv: Invalidation): void;
  /** Messages may have been missed: drop or re-read every cached entry that a message could have changed. */
  resync(): void;
}

export interface InvalidationChannel {
  start(handlers: InvalidationHandlers): Promise<void>;
  /** Tells every node, this one included, once the change it describes is committed. */
  publish(inv: Invalidation): Promise<void>;
  close(): Promise<void>;
}

const CHANNEL = 'sluice_invalidate';

/** PostgreSQL: one listening connection per node, reconnecting forever. */
export class PgInvalidations implements InvalidationChannel {
  private subscriber: Subscriber | null = null;

  constructor(
    private readonly url: string,
    private readonly store: Store,
    private readonly log: Log,
  ) {}

  async start(handlers: InvalidationHandlers): Promise<void> {
    // pg-listen is CommonJS with a `default` export.
    const sub = pgListen.default({ connectionString: this.url }, { retryTimeout: Infinity, paranoidChecking: 10_000 });
    this.subscriber = sub;
    let connectedOnce = false;
    sub.notifications.on(CHANNEL, (payload: unknown) => {
      try {
        handlers.apply(payload as Invalidation);
      } catch (err) {
        this.log.error('could not apply a cluster invalidation', err);
      }
    });
    sub.events.on('connected', () => {
      if (connectedOnce) {
        this.log.warn('cluster invalidation channel reconnected; dropping cached credentials');
        handlers.resync();
      }
      connectedOnce = true;
    });
    sub.events.on('error', (err: Error) => this.log.error('cluster invalidation channel failed', err));
    await sub.connect();
    await sub.listenTo(CHANNEL);
  }

  async publish(inv: Invalidation): Promise<void> {
    await this.store.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify(inv)]);
  }

  async close(): Promise<void> {
    const sub = this.subscriber;
    this.subscriber = null;
    if (sub) await sub.close().catch(() => {});
  }
}

/** The embedded store: one node, so the message comes straight back. */
export class LocalInvalidations implements InvalidationChannel {
  private handlers: InvalidationHandlers | null = null;

  async start(handlers: InvalidationHandlers): Promise<void> {
    this.handlers = handlers;
  }

  async publish(inv: Invalidation): Promise<void> {
    this.handlers?.apply(inv);
  }

  async close(): Promise<void> {
    this.handlers = null;
  }
}
