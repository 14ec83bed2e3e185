// The main thread's post to the actor threads cannot be broken by one message: a message structured clone cannot
// copy (a value nested deep enough to exhaust its stack, or a function, which the typed protocol forbids but a bug
// could still send) fails its own request with a catalog error, and the other messages posted in the same batch
// are delivered and answered. A real node's pool, with one actor thread so that every ask shares its batch, and with
// the actors on the main thread (ACTOR_THREADS=0), whose messages are copied all the same (what cannot be copied
// fails the same way there).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { EnqueueInput } from '../src/actors/queue/queue-actor.js';
import { AppError } from '../src/errors.js';
import { startTestNode, type TestNode } from './helpers.js';
import { enqueueInput } from './fixtures/enqueue-input.js';

const input = (payload: Record<string, unknown>): EnqueueInput => enqueueInput({ payload });

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
      n = await startTestNode({ env: { ACTOR_THREADS: threads } });
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
  });
}
