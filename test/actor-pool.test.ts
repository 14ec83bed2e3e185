// The main thread's post to the actor threads cannot be broken by one message: a message structured clone cannot
// copy (a value nested deep enough to exhaust its stack, or a function, which the typed protocol forbids but a bug
// could still send) fails its own request with a catalog error, and the other messages posted in the same batch
// are delivered and answered. A real node's pool, with one actor thread so that every ask shares its batch, and with
// the actors on the main thread (ACTOR_THREADS=0), whose requests are copied all the same (what cannot be copied
// fails the same way there). Their replies come back without a copy there (inline-thread.ts): in both modes a reply
// is the receiver's own, and a reply that could not be encoded (a job row stored before the edge refused deep
// values) fails its own request alone, the node serving on.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { EnqueueInput } from '../src/actors/queue/queue-actor.js';
import { AppError, CATALOG } from '../src/errors.js';
import { STORE, startTestNode, type TestNode } from './helpers.js';
import { enqueueInput } from './fixtures/enqueue-input.js';

const input = (payload: Record<string, unknown>): EnqueueInput => enqueueInput({ payload });

/** The JSON text of an object nested `levels` deep. */
const deepText = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

/** An object nested `levels` deep, built without recursion. */
function deep(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: 1 };
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

for (const [mode, threads] of [['one actor thread', '1'], ['the actors on the main thread', '0']] as const) {
  describe(mode, () => {
    let n: TestNode;
    before(async () => {
      // ROW_CACHE_MB=0: claims here read their rows from the store. The tests below change stored rows behind the
      // actors' backs, as a row stored before the edge refused deep values would be; a row the actor kept from the
      // enqueue (test/kept-rows.test.ts) would answer from memory instead.
      n = await startTestNode({ env: { ACTOR_THREADS: threads, BODY_MAX_DEPTH: '1000', ROW_CACHE_MB: '0' } });
    });
    after(() => n.stop());

    test('a message that cannot be cloned fails only its own request; the rest of its batch is answered', async () => {
      const org: string = (await n.api.get('/api/v1/auth/me')).body.organization_id;
      const pool = n.node.pool;
      const uncloneable: Array<[string, Record<string, unknown>]> = [
        ['a value nested 200,000 deep', deep(200_000)],
        ['a function', { f: () => 1 }],
      ];
      for (const [what, payload] of uncloneable) {
        // Asked in one turn: one postMessage for the batch, which throws, then one per message.
        const asks = [
          pool.ask(org, 'pool-batch', 'enqueue', input({ n: 1 })),
          pool.ask(org, 'pool-batch', 'enqueue', input(payload)),
          pool.ask(org, 'pool-batch', 'enqueue', input({ n: 2 })),
          pool.askOrg(org, 'usage', {}),
        ];
        const [first, bad, second, usage] = (await Promise.allSettled(asks)) as [PromiseSettledResult<unknown>, PromiseSettledResult<unknown>, PromiseSettledResult<unknown>, PromiseSettledResult<unknown>];
        assert.equal(bad.status, 'rejected', `${what} was sent`);
        const err = (bad as PromiseRejectedResult).reason;
        assert.ok(err instanceof AppError, `${what}: ${String(err)}`);
        assert.ok(err.status >= 400 && err.status < 600, `${what}: ${err.status}`);
        assert.equal(err.code, 'VALIDATION_ERROR');
        for (const r of [first, second, usage]) assert.equal(r.status, 'fulfilled', `${what}: ${JSON.stringify((r as PromiseRejectedResult).reason)}`);
        for (const r of [first, second]) {
          const id = (r as PromiseFulfilledResult<{ job: { id: string } }>).value.job.id;
          assert.equal((await n.api.get(`/api/v1/jobs/${id}`)).status, 200);
        }
      }
      // The thread lives on: the next batch goes through whole.
      const more = await Promise.all([1, 2, 3].map((i) => pool.ask(org, 'pool-batch', 'enqueue', input({ i }))));
      assert.equal(more.length, 3);
    });

    test("a reply is the receiver's own: changing it changes neither the actor nor a later reply", async () => {
      const org: string = (await n.api.get('/api/v1/auth/me')).body.organization_id;
      const pool = n.node.pool;
      const limit = { jobs: 5, per_seconds: 60 };
      const view = await pool.ask(org, 'pool-owned', 'createQueue', { max_retries: null, lease_duration_secs: null, concurrency_per_key: null, max_concurrency: null, rate_limit: limit });
      view.config.rate_limit!.jobs = 1;
      view.config.max_retries = 99;
      assert.deepEqual((await pool.ask(org, 'pool-owned', 'configure', {})).config, { max_retries: null, lease_duration_secs: null, concurrency_per_key: null, max_concurrency: null, rate_limit: limit });
      const usage = await pool.askOrg(org, 'usage', {});
      const limits = { ...usage.limits };
      for (const k of Object.keys(limits)) (usage.limits as Record<string, number | null>)[k] = 0;
      assert.deepEqual((await pool.askOrg(org, 'usage', {})).limits, limits);
    });

    test('a request arrives whole: a payload key named __proto__ stays a key, nested values and nulls are kept, 1,000 levels pass', async () => {
      const text = '{"queue_name":"pool-copy","payload":{"__proto__":{"x":1},"list":[1,{"a":[null,"s"]}],"none":null,"t":true}}';
      const r = await n.api.call('POST', '/api/v1/jobs', text);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      const got = await n.api.get(`/api/v1/jobs/${r.body.id}`);
      assert.deepEqual(got.body.payload, JSON.parse(text).payload);
      assert.ok(Object.hasOwn(got.body.payload, '__proto__'));
      // Near the deepest body the edge can be set to accept (BODY_MAX_DEPTH 1,000), copied on the way to the actor.
      const deepest = await n.api.call('POST', '/api/v1/jobs', `{"queue_name":"pool-copy","payload":${deepText(995)}}`);
      assert.equal(deepest.status, 201, JSON.stringify(deepest.body));
    });

    test('a stored job row too deep to encode fails its own claim, over HTTP too, and the node serves on', async () => {
      const org: string = (await n.api.get('/api/v1/auth/me')).body.organization_id;
      const pool = n.node.pool;
      const stored: string[] = [];
      for (const queue of ['pool-deep', 'pool-deep-http']) {
        const r = await n.api.post('/api/v1/jobs', { queue_name: queue, payload: {} });
        assert.equal(r.status, 201);
        stored.push(r.body.id);
        // Deeper than any body the edge accepts (at most 1,000 levels, BODY_MAX_DEPTH) and than REPLY_MAX_DEPTH, as a row
        // stored before the edge refused such values.
        await n.node.store.query('UPDATE jobs SET payload = $2::jsonb WHERE id = $1', [r.body.id, deepText(1_200)]);
      }
      const [bad, enqueued, usage] = await Promise.allSettled([
        pool.ask(org, 'pool-deep', 'claim', { worker_id: 'w', limit: 1, lease_duration_secs: null, wait_ms: 0 }),
        pool.ask(org, 'pool-batch', 'enqueue', input({ n: 3 })),
        pool.askOrg(org, 'usage', {}),
      ]);
      assert.equal(bad!.status, 'rejected');
      const err = (bad as PromiseRejectedResult).reason;
      assert.ok(err instanceof AppError, String(err));
      assert.deepEqual([err.code, err.message], ['INTERNAL', 'The reply could not be encoded']);
      assert.equal(enqueued!.status, 'fulfilled');
      assert.equal(usage!.status, 'fulfilled');
      const http = await n.api.post('/api/v1/jobs/claim', { queue_name: 'pool-deep-http', worker_id: 'w' });
      assert.equal(http.status, 500);
      assert.deepEqual(http.body, { error: CATALOG.INTERNAL.error, code: 'INTERNAL', message: 'The reply could not be encoded', status: 500 });
      assert.equal((await n.api.get('/health/live')).status, 200);
      const fine = await n.api.post('/api/v1/jobs', { queue_name: 'pool-deep-http', payload: { fine: true } });
      assert.equal(fine.status, 201);
      const claimed = await n.api.post('/api/v1/jobs/claim', { queue_name: 'pool-deep-http', worker_id: 'w' });
      assert.equal(claimed.status, 200);
      assert.deepEqual(claimed.body.jobs.map((j: { id: string }) => j.id), [fine.body.id]);
    });

    test('a stored job too deep for JSON fails its own read over HTTP with 500, and the node serves on', { skip: STORE !== 'pg' && 'PostgreSQL only: the embedded store takes minutes over a value this deep, and its thread cannot hand the row over' }, async () => {
      const r = await n.api.post('/api/v1/jobs', { queue_name: 'pool-deep-read', payload: {} });
      assert.equal(r.status, 201);
      // Deep enough that JSON.stringify runs out of stack: the answer of GET /jobs/:id, read from the store.
      await n.node.store.query('UPDATE jobs SET payload = $2::jsonb WHERE id = $1', [r.body.id, deepText(5_000)]);
      const got = await n.api.get(`/api/v1/jobs/${r.body.id}`);
      assert.equal(got.status, 500);
      assert.deepEqual(got.body, { error: CATALOG.INTERNAL.error, code: 'INTERNAL', message: 'The response could not be encoded', status: 500 });
      assert.equal((await n.api.get('/health/live')).status, 200);
      assert.equal((await n.api.post('/api/v1/jobs', { queue_name: 'pool-deep-read', payload: { fine: true } })).status, 201);
    });
  });
}
