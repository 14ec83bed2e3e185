// One tenant's unstorable row cannot fail another tenant's writes. The edge refuses such data (422), so the
// store never sees it from a client; behind the edge, a group commit that the store refuses because of one
// request's data is committed again without that request: only it fails (422), every other request of the
// group, whatever its organization, succeeds, and their actors keep their state (a parked long poll is still
// parked and gets its job).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { EnqueueInput, EnqueueReply } from '../src/actors/queue/queue-actor.js';
import { AppError } from '../src/errors.js';
import { startTestNode, type Api, type TestNode } from './helpers.js';
import { assertInvalid, insertKey } from './http-assert.js';
import { enqueueInput } from './fixtures/enqueue-input.js';

let n: TestNode;
let a: { api: Api; org: string };
let b: { api: Api; org: string };
before(async () => {
  // One actor thread: every actor below shares one journal, so the asks of one turn share one group commit.
  n = await startTestNode({ env: { ACTOR_THREADS: '1' } });
  const first = await insertKey(n, { plan: 'free' });
  const second = await insertKey(n, { plan: 'pro' });
  a = { api: n.api.as(first.key), org: first.organizationId };
  b = { api: n.api.as(second.key), org: second.organizationId };
});
after(() => n.stop());

const input = (payload: unknown, extra: Partial<EnqueueInput> = {}): EnqueueInput => enqueueInput({ payload, ...extra });

/** The id of a job the reply says was created. */
const createdId = (c: EnqueueReply): string => (c.created ? c.job.id : assert.fail('not created'));

test('a group commit refused for one request fails that request alone; the others and their actors are untouched', async () => {
  const pool = n.node.pool;
  // B's worker is parked on an empty queue: its actor must survive A's bad row.
  const parked = pool.ask(b.org, 'good', 'claim', { worker_id: 'wb', limit: 1, lease_duration_secs: null, wait_ms: 10_000 });
  await new Promise((r) => setTimeout(r, 200));

  // One turn: one batch to the thread, one group. A NUL inside jsonb is refused by PostgreSQL and PGlite alike.
  const goodB = Array.from({ length: 20 }, (_, i) => pool.ask(b.org, 'good', 'enqueue', input({ i })));
  const bad = pool.ask(a.org, 'bad', 'enqueue', input({ s: 'x\u0000y' }));
  const goodA = Array.from({ length: 5 }, (_, i) => pool.ask(a.org, 'bad', 'enqueue', input({ i })));
  const keyedB = pool.ask(b.org, 'good', 'enqueue', input({ keyed: true }, { idempotency_key: 'k-1' }));

  await assert.rejects(bad, (err: unknown) => err instanceof AppError && err.code === 'VALIDATION_ERROR');
  const createdB = await Promise.all([...goodB, keyedB]);
  const createdA = await Promise.all(goodA);
  for (const c of [...createdB, ...createdA]) assert.equal(c.created, true);

  // The parked claim was fed by the group (B's actor was never dropped) and its job is really processing.
  const { jobs } = await parked;
  assert.equal(jobs.length, 1);
  const row = await b.api.get(`/api/v1/jobs/${jobs[0]!.id as string}`);
  assert.equal(row.body.status, 'processing');

  // Everything acknowledged is stored; the refused row is not.
  const ids = [...createdB, ...createdA].map(createdId);
  const stored = await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs WHERE id = ANY(string_to_array($1, \',\')::uuid[])', [ids.join(',')]);
  assert.equal(stored[0]!.n, ids.length);
  const refused = await n.node.store.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE queue_name = 'bad' AND payload ? 's'`);
  assert.equal(refused[0]!.n, 0);

  // A's queue was rebuilt from rows: its five good jobs are there and claimable, once each.
  const claimedA = await a.api.post('/api/v1/jobs/claim', { queue_name: 'bad', worker_id: 'wa', limit: 10 });
  assert.deepEqual(claimedA.body.jobs.map((j: { id: string }) => j.id).sort(), createdA.map(createdId).sort());
  const claimedB = await b.api.post('/api/v1/jobs/claim', { queue_name: 'good', worker_id: 'wb', limit: 100 });
  assert.equal(claimedB.body.jobs.length, 20, 'B: 21 created, 1 handed to the parked claim');
});

test('an organization deleted under its actors (by hand: no API deletes one) fails its own writes alone, not another tenant\'s in the same group', async () => {
  const c = await insertKey(n, { plan: 'pro' });
  const pool = n.node.pool;
  // Both actors loaded first, so that what they do below happens in one turn: one batch, one group commit.
  await pool.askOrg(c.organizationId, 'usage', {});
  assert.equal((await pool.ask(b.org, 'beside-deleted', 'enqueue', input({ first: true }))).created, true);
  await n.node.store.query('DELETE FROM organizations WHERE id = $1', [c.organizationId]);

  const goodB = Array.from({ length: 20 }, (_, i) => pool.ask(b.org, 'beside-deleted', 'enqueue', input({ i })));
  // Admitting a job writes the organization's usage row, whose organization is gone: a foreign-key violation.
  const orphan = pool.askOrg(c.organizationId, 'admit', { n: 1, payloadBytes: [2], credit: 0 });
  const settled = await Promise.allSettled([...goodB, orphan]);
  const failedB = settled.slice(0, -1).filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
  assert.deepEqual(failedB, []);
  const createdB = settled.slice(0, -1).map((r) => (r as PromiseFulfilledResult<EnqueueReply>).value);
  for (const x of createdB) assert.equal(x.created, true);
  const ids = createdB.map(createdId);
  const stored = await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs WHERE id = ANY(string_to_array($1, \',\')::uuid[])', [ids.join(',')]);
  assert.equal(stored[0]!.n, ids.length);
  const usage = await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM usage_daily WHERE organization_id = $1', [c.organizationId]);
  assert.equal(usage[0]!.n, 0);
});

test('a second organization enqueues at full speed while the first sends unstorable rows: 0 errors for the second', async () => {
  const until = Date.now() + 3_000;
  let bOk = 0;
  const bErrors: string[] = [];
  let aRefused = 0;
  const loop = async (fn: () => Promise<void>) => {
    while (Date.now() < until) await fn();
  };
  await Promise.all([
    ...Array.from({ length: 8 }, () =>
      loop(async () => {
        const r = await b.api.post('/api/v1/jobs', { queue_name: 'steady', payload: { n: bOk } });
        if (r.status === 201) bOk++;
        else bErrors.push(`${r.status} ${JSON.stringify(r.body)}`);
      }),
    ),
    ...Array.from({ length: 4 }, (_, i) =>
      loop(async () => {
        const r = await n.api.as(a.api.key).post('/api/v1/jobs', { queue_name: 'steady', payload: { s: i % 2 ? 'a\u0000' : '\ud800' } });
        assertInvalid(r, 'payload.s');
        aRefused++;
      }),
    ),
  ]);
  assert.deepEqual(bErrors, []);
  assert.ok(bOk > 0 && aRefused > 0);
});
