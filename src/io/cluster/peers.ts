// The node-to-node channel: persistent TCP connections between the nodes of one cluster, carrying calls (a
// request and its answer) and casts (one-way messages) as JSON frames. Each node listens once; it opens one
// connection to each peer it calls, on first use, and keeps it.
//
// Frame: 4-byte big-endian length, then UTF-8 JSON. Call {i, m, p} → answer {i, r} or {i, e: WireError};
// cast {m, p}. Frames written during one turn go out in one write.
//
// Authentication: every node of a cluster shares CLUSTER_SECRET. On connect the listener sends a random nonce;
// the caller answers HMAC-SHA256(secret, "sluice-peer/1 " + nonce + " " + its node id) and a nonce of its own,
// which the listener answers the same way: each side proves it knows the secret without sending it, and nothing
// else is read before that. The channel is not encrypted: run the nodes on a private network, or inside a
// mesh or VPN that encrypts (docs/operations.md).
//
// What a lost connection means: a call whose frame may have reached the peer fails with `PeerError` ('lost':
// it may have run); a call that could not be sent at all fails with 'unreachable' (it did not run), so the
// caller may try it elsewhere.
//
// A node that stops cleanly says goodbye ({h: 'bye'}) on each connection peers opened to it, and goes on
// answering on them until each peer closes its side: a peer that hears it sends nothing more there (its next
// call opens a new connection, refused: 'unreachable') and closes once its calls in flight are answered. So a
// clean stop loses no call, and a rolling restart answers no 503 for it (cutting the connections at once
// turned the calls they carried into 'lost').
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import { AppError, type WireError } from '../../errors.js';
import type { Log } from '../../log.js';

const MAX_FRAME = 64 * 1024 * 1024;
const HANDSHAKE_MS = 5_000;
const PROTOCOL = 'sluice-peer/1';

export type PeerHandler = (payload: unknown, from: string) => unknown | Promise<unknown>;

export class PeerError extends Error {
  constructor(
    readonly kind: 'unreachable' | 'lost',
    message: string,
  ) {
    super(message);
    this.name = 'PeerError';
  }
}

type Frame = { i: number; m: string; p: unknown } | { i: number; r: unknown } | { i: number; e: WireError } | { m: string; p: unknown } | Handshake;
type Handshake = { h: 'nonce'; nonce: string; node: string } | { h: 'proof'; node: string; mac: string; nonce: string } | { h: 'ok'; mac: string } | { h: 'bye' };

/** How long a stopping node waits for peers to close the connections it said goodbye on. */
const GOODBYE_MS = 2_000;

const mac = (secret: string, nonce: string, node: string): string => createHmac('sha256', secret).update(`${PROTOCOL} ${nonce} ${node}`).digest('hex');

function sameMac(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** One TCP connection, framed, writes batched per turn. */
class Wire {
  private buffered: Buffer[] = [];
  private flushQueued = false;
  private pending: Buffer<ArrayBufferLike> = Buffer.alloc(0);
  private ended: () => void = () => {};
  closed = false;
  /** Resolves once the connection is closed (by either side). */
  readonly done = new Promise<void>((resolve) => (this.ended = resolve));

  constructor(
    readonly socket: net.Socket,
    private readonly onFrame: (f: Frame) => void,
    private readonly onClose: (err?: Error) => void,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.read(chunk));
    socket.on('error', (err) => this.close(err));
    socket.on('close', () => this.close());
  }

  send(f: Frame): void {
    if (this.closed) return;
    const body = Buffer.from(JSON.stringify(f), 'utf8');
    const head = Buffer.allocUnsafe(4);
    head.writeUInt32BE(body.length, 0);
    this.buffered.push(head, body);
    if (!this.flushQueued) {
      this.flushQueued = true;
      setImmediate(() => {
        this.flushQueued = false;
        const out = this.buffered;
        this.buffered = [];
        if (!this.closed && out.length > 0) this.socket.write(Buffer.concat(out));
      });
    }
  }

  close(err?: Error): void {
    if (this.closed) return;
    this.ended();
    this.closed = true;
    this.socket.destroy();
    this.onClose(err);
  }

  private read(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 4) {
      const len = this.pending.readUInt32BE(0);
      if (len > MAX_FRAME) return this.close(new Error(`a frame of ${len} bytes is over the limit`));
      if (this.pending.length < 4 + len) break;
      const body = this.pending.subarray(4, 4 + len);
      this.pending = this.pending.subarray(4 + len);
      let f: Frame;
      try {
        f = JSON.parse(body.toString('utf8')) as Frame;
      } catch {
        return this.close(new Error('a frame is not JSON'));
      }
      this.onFrame(f);
      if (this.closed) return;
    }
  }
}

export interface PeersOptions {
  nodeId: string;
  secret: string;
  log: Log;
}

interface Outbound {
  address: string;
  wire: Wire | null;
  ready: Promise<Wire>;
  calls: Map<number, { resolve(v: unknown): void; reject(e: Error): void }>;
  /** The peer said goodbye: nothing more is sent on this connection. */
  leaving?: boolean;
}

export class Peers {
  private server: net.Server | null = null;
  private readonly handlers = new Map<string, PeerHandler>();
  private readonly outbound = new Map<string, Outbound>();
  private readonly inbound = new Set<Wire>();
  private nextId = 1;
  private stopped = false;
  port = 0;

  constructor(private readonly o: PeersOptions) {}

  /** What a method does when a peer calls or casts it. A thrown AppError goes back as it is. */
  handle(method: string, fn: PeerHandler): this {
    this.handlers.set(method, fn);
    return this;
  }

  listen(host: string, port: number): Promise<number> {
    const server = net.createServer((socket) => this.accept(socket));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        this.port = (server.address() as net.AddressInfo).port;
        resolve(this.port);
      });
    });
  }

  /** Calls `method` on the node at `address` and waits for its answer. */
  async call<T = unknown>(node: string, address: string, method: string, payload: unknown): Promise<T> {
    const out = this.connection(node, address);
    let wire: Wire;
    try {
      wire = await out.ready;
    } catch (err) {
      throw new PeerError('unreachable', `node ${node} at ${address} cannot be reached: ${(err as Error).message}`);
    }
    if (wire.closed || out.leaving) throw new PeerError('unreachable', `the connection to node ${node} is closed`);
    const i = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      out.calls.set(i, { resolve: resolve as (v: unknown) => void, reject });
      wire.send({ i, m: method, p: payload });
    });
  }

  /** Sends `method` to the node without waiting; lost if the peer cannot be reached. */
  cast(node: string, address: string, method: string, payload: unknown): void {
    this.connection(node, address).ready.then(
      (wire) => wire.send({ m: method, p: payload }),
      () => {},
    );
  }

  /** Forgets a node (it left the cluster): its connection is closed, its calls in flight fail as lost. */
  forget(node: string): void {
    const out = this.outbound.get(node);
    if (!out) return;
    this.outbound.delete(node);
    out.wire?.close();
    this.failCalls(out, new PeerError('lost', `node ${node} left the cluster`));
  }

  /**
   * Stops listening, says goodbye on every connection peers opened to this node and answers what they still
   * send there until they close them (at most `graceMs`), then closes what is left.
   */
  async close(graceMs = GOODBYE_MS): Promise<void> {
    this.stopped = true;
    const server = this.server;
    this.server = null;
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const node of [...this.outbound.keys()]) this.forget(node);
    const inbound = [...this.inbound];
    for (const w of inbound) w.send({ h: 'bye' });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(inbound.map((w) => w.done)), new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    for (const w of [...this.inbound]) w.close();
    await closed;
  }

  private connection(node: string, address: string): Outbound {
    let out = this.outbound.get(node);
    if (out && (out.address !== address || out.wire?.closed)) {
      this.forget(node);
      out = undefined;
    }
    if (!out) {
      const created: Outbound = { address, wire: null, ready: Promise.resolve(null as unknown as Wire), calls: new Map() };
      created.ready = this.connect(node, address, created);
      created.ready.catch(() => {
        if (this.outbound.get(node) === created) this.outbound.delete(node);
      });
      this.outbound.set(node, created);
      out = created;
    }
    return out;
  }

  private connect(node: string, address: string, out: Outbound): Promise<Wire> {
    if (this.stopped) return Promise.reject(new Error('stopping'));
    const { host, port } = parseAddress(address);
    return new Promise<Wire>((resolve, reject) => {
      const socket = net.connect(port, host);
      const myNonce = randomBytes(16).toString('hex');
      let authed = false;
      const timer = setTimeout(() => wire.close(new Error('the handshake timed out')), HANDSHAKE_MS);
      const wire = new Wire(
        socket,
        (f) => {
          if (!authed) {
            if ('h' in f && f.h === 'nonce') {
              if (f.node !== node) return wire.close(new Error(`${address} is node ${f.node}, not ${node}`));
              wire.send({ h: 'proof', node: this.o.nodeId, mac: mac(this.o.secret, f.nonce, this.o.nodeId), nonce: myNonce });
            } else if ('h' in f && f.h === 'ok' && sameMac(f.mac, mac(this.o.secret, myNonce, node))) {
              authed = true;
              clearTimeout(timer);
              out.wire = wire;
              resolve(wire);
            } else wire.close(new Error('the peer did not prove it knows CLUSTER_SECRET'));
            return;
          }
          if ('h' in f && f.h === 'bye') {
            // The peer is stopping: new calls go elsewhere (a new connection); this one closes once answered.
            out.leaving = true;
            if (this.outbound.get(node) === out) this.outbound.delete(node);
            if (out.calls.size === 0) wire.close();
            return;
          }
          if (!('i' in f) || f.i === 0) return;
          const c = out.calls.get(f.i);
          if (!c) return;
          out.calls.delete(f.i);
          if ('e' in f) c.reject(AppError.fromWire(f.e));
          else if ('r' in f) c.resolve(f.r);
          if (out.leaving && out.calls.size === 0) wire.close();
        },
        (err) => {
          clearTimeout(timer);
          if (!authed) reject(err ?? new Error('closed during the handshake'));
          this.failCalls(out, new PeerError('lost', `the connection to node ${node} was lost${err ? `: ${err.message}` : ''}`));
          if (this.outbound.get(node) === out) this.outbound.delete(node);
        },
      );
    });
  }

  private accept(socket: net.Socket): void {
    if (this.stopped) return void socket.destroy();
    const nonce = randomBytes(16).toString('hex');
    let peer: string | null = null;
    const timer = setTimeout(() => wire.close(new Error('the handshake timed out')), HANDSHAKE_MS);
    const wire = new Wire(
      socket,
      (f) => {
        if (peer === null) {
          if ('h' in f && f.h === 'proof' && typeof f.node === 'string' && sameMac(f.mac, mac(this.o.secret, nonce, f.node))) {
            peer = f.node;
            clearTimeout(timer);
            wire.send({ h: 'ok', mac: mac(this.o.secret, f.nonce, this.o.nodeId) });
          } else {
            this.o.log.warn(`refused a node-to-node connection from ${socket.remoteAddress}: it did not prove it knows CLUSTER_SECRET`);
            wire.close();
          }
          return;
        }
        if (!('m' in f)) return;
        this.serve(wire, peer, f);
      },
      () => {
        clearTimeout(timer);
        this.inbound.delete(wire);
      },
    );
    this.inbound.add(wire);
    wire.send({ h: 'nonce', nonce, node: this.o.nodeId });
  }

  private serve(wire: Wire, from: string, f: { i?: number; m: string; p: unknown }): void {
    const i = f.i ?? 0;
    const fn = this.handlers.get(f.m);
    const fail = (err: unknown) => {
      if (!(err instanceof AppError)) this.o.log.error(`node-to-node call ${f.m} failed`, err);
      if (i !== 0) wire.send({ i, e: (err instanceof AppError ? err : new AppError('INTERNAL')).toWire() });
    };
    // A reply JSON cannot encode (a BigInt, a cycle) throws in send: the caller gets an error answer, and the
    // throw does not escape `.then` as an unhandled rejection.
    const answer = (r: unknown) => {
      if (i === 0) return;
      try {
        wire.send({ i, r: r === undefined ? null : r });
      } catch (err) {
        fail(err);
      }
    };
    if (!fn) return fail(new AppError('INTERNAL', `no node-to-node method ${f.m}`));
    try {
      const r = fn(f.p, from);
      if (r instanceof Promise) r.then(answer, fail);
      else answer(r);
    } catch (err) {
      fail(err);
    }
  }

  private failCalls(out: Outbound, err: PeerError): void {
    const calls = [...out.calls.values()];
    out.calls.clear();
    for (const c of calls) c.reject(err);
  }
}

export function parseAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`${address} is not host:port`);
  return { host, port };
}
