// The node-to-node channel: calls and casts between two nodes over loopback, answers and catalog errors carried
// back, a peer that does not know CLUSTER_SECRET refused, and what a caller learns when a peer goes away
// (unreachable: never sent; lost: may have run).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, test } from 'node:test';
import { AppError } from '../src/errors.js';
import { createLog } from '../src/log.js';
import { PeerError, Peers } from '../src/io/cluster/peers.js';

const log = createLog('silent');
const open: Peers[] = [];
after(() => Promise.all(open.map((p) => p.close())));

async function node(secret: string) {
  const id = randomUUID();
  const peers = new Peers({ nodeId: id, secret, log });
  open.push(peers);
  const port = await peers.listen('127.0.0.1', 0);
  return { id, peers, address: `127.0.0.1:${port}` };
}

test('calls are answered, errors come back from the catalog, casts arrive, many calls share one connection', async () => {
  const a = await node('s3cret-s3cret-s3cret-s3cret-s3cret');
  const b = await node('s3cret-s3cret-s3cret-s3cret-s3cret');
  const cast: unknown[] = [];
  b.peers
    .handle('double', (p) => (p as number) * 2)
    .handle('later', async (p) => ({ echo: p }))
    .handle('refuse', () => {
      throw new AppError('RATE_LIMITED', 'slow down', { retry_after: 2 });
    })
    .handle('note', (p, from) => void cast.push([p, from]));
  assert.equal(await a.peers.call(b.id, b.address, 'double', 21), 42);
  assert.deepEqual(await a.peers.call(b.id, b.address, 'later', { x: [1, 'y'] }), { echo: { x: [1, 'y'] } });
  await assert.rejects(a.peers.call(b.id, b.address, 'refuse', null), (e: unknown) => e instanceof AppError && e.code === 'RATE_LIMITED' && e.extra.retry_after === 2);
  const many = await Promise.all(Array.from({ length: 500 }, (_, i) => a.peers.call<number>(b.id, b.address, 'double', i)));
  assert.deepEqual(many, Array.from({ length: 500 }, (_, i) => i * 2));
  a.peers.cast(b.id, b.address, 'note', 'hello');
  for (let i = 0; i < 50 && cast.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(cast, [['hello', a.id]]);
});

test('a node without the secret is refused, and so is a listener that does not prove it', async () => {
  const a = await node('one-secret-one-secret-one-secret');
  const b = await node('another-secret-another-secret-xx');
  b.peers.handle('double', (p) => (p as number) * 2);
  await assert.rejects(a.peers.call(b.id, b.address, 'double', 1), (e: unknown) => e instanceof PeerError && e.kind === 'unreachable');
  // A raw client that sends a call without the handshake gets nothing answered and is disconnected.
  const { port } = new URL(`tcp://${b.address}`);
  const s = net.connect(Number(port), '127.0.0.1');
  const closed = new Promise((r) => s.on('close', r));
  s.on('error', () => {});
  s.resume(); // a paused socket with unread data (the listener's nonce) never emits close
  const body = Buffer.from(JSON.stringify({ i: 1, m: 'double', p: 2 }));
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  s.write(Buffer.concat([head, body]));
  await closed;
});

test('unreachable when the peer is down before the call; lost when it goes away during it', async () => {
  const a = await node('shared-secret-shared-secret-1234');
  const b = await node('shared-secret-shared-secret-1234');
  let release!: () => void;
  b.peers.handle('hang', () => new Promise<void>((r) => (release = r)));
  const call = a.peers.call(b.id, b.address, 'hang', null);
  await new Promise((r) => setTimeout(r, 50));
  await b.peers.close();
  await assert.rejects(call, (e: unknown) => e instanceof PeerError && e.kind === 'lost');
  release?.();
  await assert.rejects(a.peers.call(b.id, b.address, 'hang', null), (e: unknown) => e instanceof PeerError && e.kind === 'unreachable');
});

test('a peer that stops cleanly answers the calls in flight to it first; the next call finds it unreachable', async () => {
  const a = await node('shared-secret-shared-secret-5678');
  const b = await node('shared-secret-shared-secret-5678');
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  b.peers.handle('slow', async (p) => {
    await gate;
    return p;
  });
  const inFlight = Array.from({ length: 20 }, (_, i) => a.peers.call(b.id, b.address, 'slow', i));
  await new Promise((r) => setTimeout(r, 50));
  const closing = b.peers.close();
  // Calls sent after the goodbye was heard go nowhere: unreachable (never sent), so a caller may try elsewhere.
  await new Promise((r) => setTimeout(r, 50));
  await assert.rejects(a.peers.call(b.id, b.address, 'slow', 99), (e: unknown) => e instanceof PeerError && e.kind === 'unreachable');
  release();
  assert.deepEqual(await Promise.all(inFlight), Array.from({ length: 20 }, (_, i) => i));
  const started = Date.now();
  await closing;
  assert.ok(Date.now() - started < 1_000, 'the stopping node closes once its callers have closed, not after its grace');
});

test('a reply JSON cannot encode answers the caller with an error, not an unhandled rejection', async () => {
  const a = await node('encode-secret-encode-secret-1234');
  const b = await node('encode-secret-encode-secret-1234');
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  try {
    b.peers.handle('big', async () => ({ n: 1n })).handle('bigNow', () => ({ n: 2n }));
    for (const m of ['big', 'bigNow']) {
      await assert.rejects(a.peers.call(b.id, b.address, m, null), (e: unknown) => e instanceof AppError && e.code === 'INTERNAL');
    }
    // The connection still serves.
    b.peers.handle('double', (p) => (p as number) * 2);
    assert.equal(await a.peers.call(b.id, b.address, 'double', 4), 8);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
