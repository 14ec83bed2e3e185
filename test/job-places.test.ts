// The node's cache of which queue holds a job: bounded, the latest entries always answered from memory, an entry
// that aged out read from the store again.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Store } from '../src/io/db/store.js';
import { JobPlaces, PLACES_MAX } from '../src/runtime/job-places.js';
import { openStore } from './fixtures/direct-host.js';
import { freshStore, type StoreLocation } from './helpers.js';

let location: StoreLocation;
let store: Store;
let reads = 0;

before(async () => {
  location = await freshStore();
  const real = await openStore(location);
  // The real store, counting the lookups that missed the cache.
  store = { ...real, query: (sql, params, name) => (reads++, real.query(sql, params, name)), close: () => real.close() };
});
after(async () => {
  await store.close();
  await location.dispose();
});

test('the cache stays bounded, answers its latest entries itself and reads an aged-out one from the store', async () => {
  const places = new JobPlaces(store);
  const org = randomUUID();
  const ids = Array.from({ length: PLACES_MAX + PLACES_MAX / 2 }, () => randomUUID());
  ids.forEach((id, i) => places.remember(org, id, `q${i % 7}`));
  assert.ok(places.size <= PLACES_MAX, `${places.size} entries held`);

  for (let i = ids.length - PLACES_MAX / 2; i < ids.length; i += 997) assert.equal(await places.find(org, ids[i]!), `q${i % 7}`);
  assert.equal(await places.find(org, ids.at(-1)!), `q${(ids.length - 1) % 7}`);
  assert.equal(reads, 0, 'the latest half of the bound came from memory');

  // The first entry aged out: the store is asked, and it holds no such job.
  assert.equal(await places.find(org, ids[0]!), null);
  assert.equal(reads, 1);
  // Another organization's job of the same id is not this one's.
  assert.equal(await places.find(randomUUID(), ids.at(-1)!), null);
  assert.equal(reads, 2);
});
