// Cluster-wide cache invalidation: what one node changed that other nodes may hold in memory (a revoked API
// key, JWT ids ended by logout, an organization's plan, its outgoing webhook endpoints, a schedule). On PostgreSQL it travels over LISTEN/NOTIFY on one
// channel; the embedded store is single-node, so a message is only handed back to this node.
//
// NOTIFY is sent after the change is committed and carries ids, never secrets or bodies (payloads must stay
// under 8000 bytes). Notifications sent while this node's listening connection was down are lost, so every
// (re)connection asks the caches to re-read what they hold (`resync`).
import pg from 'pg';
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

/**
 * PostgreSQL: one listening connection per node, reconnecting until closed (0.5 s doubling to 5 s between tries).
 * A connection can die without an error reaching us (a half-open TCP connection), so it is asked a trivial query
 * every 10 s. Written here rather than taken from a library because closing must also stop a reconnection in
 * progress: a loop left running keeps the process alive and dials a database the node has let go of.
 */
export class PgInvalidations implements InvalidationChannel {
  private client: pg.Client | null = null;
  private handlers: InvalidationHandlers | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  private check: NodeJS.Timeout | null = null;
  private attempt = 0;

  constructor(
    private readonly url: string,
    private readonly store: Store,
    private readonly log: Log,
  ) {}

  async start(handlers: InvalidationHandlers): Promise<void> {
    this.handlers = handlers;
    await this.connect();
    this.check = setInterval(() => this.probe(), 10_000);
    this.check.unref();
  }

  async publish(inv: Invalidation): Promise<void> {
    await this.store.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify(inv)]);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.check) clearInterval(this.check);
    this.retry = this.check = null;
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => {});
  }

  /** Opens a connection and listens; a failed try leaves nothing open. */
  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, keepAlive: true, application_name: 'sluice listen' });
    client.on('notification', (msg) => {
      if (msg.channel !== CHANNEL || !msg.payload) return;
      try {
        this.handlers?.apply(JSON.parse(msg.payload) as Invalidation);
      } catch (err) {
        this.log.error('could not apply a cluster invalidation', err);
      }
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
  }

  private probe(): void {
    const client = this.client;
    client?.query('SELECT 1').catch((err) => this.lost(client, err));
  }

  /** The listening connection is gone: notifications may be missed from now until a new one listens. */
  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client) return;
    this.client = null;
    client.removeAllListeners('end');
    client.end().catch(() => {});
    if (this.closed) return;
    this.log.warn(`cluster invalidation channel lost${err ? `: ${err.message}` : ''}; reconnecting`);
    this.reconnect();
  }

  private reconnect(): void {
    const delay = Math.min(500 * 2 ** this.attempt, 5_000);
    this.retry = setTimeout(() => {
      this.retry = null;
      if (this.closed) return;
      this.connect().then(
        () => {
          if (this.closed) return;
          this.attempt = 0;
          this.log.warn('cluster invalidation channel reconnected; dropping cached credentials');
          this.handlers?.resync();
        },
        () => {
          if (this.closed) return;
          this.attempt++;
          this.reconnect();
        },
      );
    }, delay);
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
