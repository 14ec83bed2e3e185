// The PostgreSQL invalidation channel: a node hears what any node announces, listens again after losing its
// connection (asking its caches to re-read what it may have missed), and once closed, stops for good — even when
// closed while it is still trying to reconnect.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PgInvalidations, type Invalidation } from '../src/io/db/invalidations.js';
import { PgStore } from '../src/io/db/pg.js';
import { createLog } from '../src/log.js';
import { CuttableProxy } from './proxy.js';
import { freshStore, sleep, STORE, type StoreLocation } from './helpers.js';

const enabled = STORE === 'pg';
const skip = !enabled && 'the embedded store hands messages straight back';
let store: StoreLocation;
let direct: PgStore;
let proxy: CuttableProxy;
let proxied: string;

before(async () => {
  if (!enabled) return;
  store = await freshStore();
  direct = new PgStore(store.env.DATABASE_URL!, 2);
  const url = new URL(store.env.DATABASE_URL!);
  proxy = new CuttableProxy({ host: url.hostname, port: Number(url.port || 5432) });
  await proxy.open();
  url.host = `127.0.0.1:${proxy.port}`;
  proxied = url.toString();
});
after(async () => {
  if (!enabled) return;
  await proxy.cut();
  await direct.close();
  await store.dispose();
});

async function until(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  for (const end = Date.now() + ms; !ok(); await sleep(25)) if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
}

function listener() {
  const heard: Invalidation[] = [];
  let resyncs = 0;
  const channel = new PgInvalidations(proxied, direct, createLog('error'));
  const handlers = { apply: (inv: Invalidation) => heard.push(inv), resync: () => resyncs++ };
  return { channel, heard, handlers, resyncs: () => resyncs };
}

test('an announcement reaches the listener, which listens again after its connection is lost', { skip }, async () => {
  const l = listener();
  await l.channel.start(l.handlers);
  try {
    await l.channel.publish({ kind: 'org', id: 'one' });
    await until('the first announcement', () => l.heard.length === 1);
    assert.equal(l.resyncs(), 0);

    await proxy.cut();
    await sleep(1_200);
    await proxy.open(proxy.port);
    // Reconnected: the caches are told that messages may have been missed, and new ones arrive again.
    await until('the resync after reconnecting', () => l.resyncs() === 1);
    await l.channel.publish({ kind: 'org', id: 'two' });
    await until('an announcement after the outage', () => l.heard.length === 2);
    assert.deepEqual(l.heard, [{ kind: 'org', id: 'one' }, { kind: 'org', id: 'two' }]);
  } finally {
    await l.channel.close();
  }
});

test('closed while reconnecting, the listener stops trying', { skip }, async () => {
  const l = listener();
  await l.channel.start(l.handlers);
  await proxy.cut();
  await sleep(1_200); // at least one failed try, so a retry is pending
  await l.channel.close();
  const tries = proxy.accepted;
  await proxy.open(proxy.port);
  await sleep(6_000); // longer than the longest pause between tries
  assert.equal(proxy.accepted, tries, 'no connection after close');
  assert.equal(l.resyncs(), 0);
});
