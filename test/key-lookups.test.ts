// The authenticator's batched reads of API keys (src/app/key-lookups.ts), against a read the test controls: one read
// at a time, digests asked meanwhile in the next, a digest asked twice read once, a failed read failing only its own
// askers, and a refusal (503) beyond the digests it lets wait. The node-level behaviour is in auth.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AppError } from '../src/errors.js';
import { KeyLookups, PENDING_MAX } from '../src/app/key-lookups.js';
import type { KeyRow } from '../src/io/db/sql/findApiKeys.js';

const row = (digest: string): KeyRow => ({ id: `id-${digest}`, organization_id: 'org', key_digest: digest, permissions: ['*'], revoked: false });

/** A read that answers when the test says: the digests of each read, and its pending answers. */
function controlled() {
  const reads: Array<{ digests: string[]; answer(rows: KeyRow[]): void; fail(err: Error): void }> = [];
  const read = (digests: string[]) =>
    new Promise<KeyRow[]>((answer, fail) => {
      reads.push({ digests, answer, fail });
    });
  return { reads, read };
}

test('one read at a time: what is asked meanwhile goes in the next read, and a digest asked twice is read once', async () => {
  const { reads, read } = controlled();
  const lookups = new KeyLookups(read);
  const a = lookups.find('a');
  const b = lookups.find('b');
  const c = lookups.find('c');
  const a2 = lookups.find('a');
  assert.equal(a2, a, 'the same read answers both');
  assert.deepEqual(reads.map((r) => r.digests), [['a']]);
  reads[0]!.answer([row('a')]);
  assert.equal((await a)?.id, 'id-a');
  assert.deepEqual(reads.map((r) => r.digests), [['a'], ['b', 'c']]);
  reads[1]!.answer([row('c')]);
  assert.equal(await b, null, 'no such key');
  assert.equal((await c)?.id, 'id-c');
  assert.equal(reads.length, 2);
});

test('a failed read fails its own askers only; the next read goes on', async () => {
  const { reads, read } = controlled();
  const lookups = new KeyLookups(read);
  const a = lookups.find('a');
  const b = lookups.find('b');
  reads[0]!.fail(new Error('connection lost'));
  await assert.rejects(a, /connection lost/);
  reads[1]!.answer([row('b')]);
  assert.equal((await b)?.id, 'id-b');
});

test(`beyond ${PENDING_MAX} digests waiting, a new one is refused at once with 503`, async () => {
  const { reads, read } = controlled();
  const lookups = new KeyLookups(read);
  const first = lookups.find('first');
  const waiting = Array.from({ length: PENDING_MAX }, (_, i) => lookups.find(`d${i}`));
  await assert.rejects(lookups.find('one too many'), (err: unknown) => err instanceof AppError && err.status === 503 && err.code === 'UNAVAILABLE');
  reads[0]!.answer([]);
  assert.equal(await first, null);
  // The waiting digests go in reads of at most 500.
  while (reads.length > 1 && reads.at(-1)!.digests.length > 0) {
    const r = reads.at(-1)!;
    assert.ok(r.digests.length <= 500);
    const n = reads.length;
    r.answer([]);
    await new Promise((resolve) => setImmediate(resolve));
    if (reads.length === n) break;
  }
  assert.deepEqual(await Promise.all(waiting), waiting.map(() => null));
});
