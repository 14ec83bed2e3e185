// The node's warm-up (src/warm-up.ts): before it listens it runs jobs through its own APIs in an organization of its
// own, and nothing of that is left to see afterwards — no organization, job, queue, key or usage row, no metric, no
// log line above info — while the node then works as any other. An organization left by a node that stopped during
// its warm-up (its queue actor holding live jobs once the next node rebuilds it) is removed by the next warm-up.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { newApiKey } from '../src/actors/org/api-key.js';
import { loadConfig } from '../src/config.js';
import { createLog } from '../src/log.js';
import { startNode, type SluiceNode } from '../src/node.js';
import { createOrganization } from '../src/io/db/sql/createOrganization.js';
import { Api, freshStore, type StoreLocation } from './helpers.js';

const ADMIN = 'warm-up-test-admin-key';

interface Started {
  node: SluiceNode;
  lines: Array<Record<string, unknown>>;
}

async function start(store: StoreLocation, warmUpJobs: number, warmUpMs = 30_000): Promise<Started> {
  const lines: Array<Record<string, unknown>> = [];
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    GRPC_PORT: '0',
    ACTOR_THREADS: process.env.SLUICE_TEST_ACTOR_THREADS ?? '2',
    ADMIN_API_KEY: ADMIN,
    ...store.env,
    WARM_UP_JOBS: String(warmUpJobs),
    // Generous: a slow machine must not cut the warm-up short, which the first test counts.
    WARM_UP_MS: String(warmUpMs),
  });
  const node = await startNode({ config, log: createLog('info', 'json', (l) => lines.push(JSON.parse(l) as Record<string, unknown>)) });
  return { node, lines };
}

const count = async (node: SluiceNode, sql: string): Promise<number> => Number((await node.store.query<{ n: string }>(sql))[0]!.n);

/** What every table holds beside the first-boot organization and its key. */
async function leftovers(node: SluiceNode): Promise<Record<string, number>> {
  return {
    organizations: await count(node, `SELECT count(*) AS n FROM organizations WHERE slug <> 'default'`),
    warmUpSlugs: await count(node, `SELECT count(*) AS n FROM organizations WHERE starts_with(slug, '_warm-up.')`),
    apiKeys: await count(node, `SELECT count(*) AS n FROM api_keys WHERE organization_id NOT IN (SELECT id FROM organizations WHERE slug = 'default')`),
    jobs: await count(node, 'SELECT count(*) AS n FROM jobs'),
    queues: await count(node, 'SELECT count(*) AS n FROM queues'),
    usage: await count(node, `SELECT count(*) AS n FROM usage_daily WHERE organization_id NOT IN (SELECT id FROM organizations WHERE slug = 'default')`),
  };
}
const NOTHING = { organizations: 0, warmUpSlugs: 0, apiKeys: 0, jobs: 0, queues: 0, usage: 0 };

/** The node works for its real tenants afterwards: a job enqueued, claimed and completed. */
async function works(node: SluiceNode, key: string): Promise<void> {
  const api = new Api(node.url, key);
  const job = await api.enqueue({ queue_name: 'after-warm-up', payload: { n: 1 } });
  const [claimed] = await api.claim('after-warm-up');
  assert.equal(claimed.id, job.id);
  const done = await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id, result: { ok: true } });
  assert.equal(done.status, 200, JSON.stringify(done.body));
}

const loud = (lines: Array<Record<string, unknown>>) => lines.filter((l) => l.level === 'warn' || l.level === 'error');

describe('warm-up', () => {
  const cleanup: Array<() => Promise<void>> = [];
  after(async () => {
    for (const f of cleanup.reverse()) await f();
  });

  test('runs jobs through the API before the node listens, and leaves nothing behind', async () => {
    const store = await freshStore();
    cleanup.push(() => store.dispose());
    const { node, lines } = await start(store, 320);
    cleanup.push(() => node.stop());

    const warmed = lines.findIndex((l) => String(l.msg).startsWith('warmed up:'));
    const listening = lines.findIndex((l) => String(l.msg).startsWith('listening on'));
    assert.ok(warmed >= 0, 'a warm-up line');
    assert.equal(lines[warmed]!.jobs, 320, 'every job of the warm-up completed');
    assert.equal(lines[warmed]!.grpc, 40, 'an eighth of them over gRPC');
    assert.equal(lines[warmed]!.queues, 2 * node.pool.hosts, 'a queue on each actor host for each API');
    assert.ok(warmed < listening, 'the warm-up ran before the node listened');

    assert.deepEqual(await leftovers(node), NOTHING);
    // Its events reached no listener and its requests were not observed: the node's metrics have counted nothing of
    // it. The same patterns match once the node has done one job of its own (they are not vacuous).
    const counted = [
      /^sluice_job_events_total\{[^}]*\} [1-9]/m,
      /^sluice_job_wait_seconds_count [1-9]/m,
      /^sluice_api_requests_total\{[^}]*\} [1-9]/m,
      /^sluice_http_request_duration_seconds_count\{[^}]*route="\/api\/v1\/jobs[^}]*\} [1-9]/m,
    ];
    const metrics = async () => (await fetch(`${node.url}/metrics`)).text();
    const before = await metrics();
    for (const re of counted) assert.doesNotMatch(before, re);
    assert.doesNotMatch(before, /^sluice_grpc_request_duration_seconds_count\{[^}]*\} [1-9]/m);

    await works(node, node.bootstrapKey!);
    const after = await metrics();
    for (const re of counted) assert.match(after, re);
    assert.deepEqual(loud(lines), []);
  });

  test('a warm-up cut short by its time cancels the jobs it left and leaves nothing either', async () => {
    const store = await freshStore();
    cleanup.push(() => store.dispose());
    const { node, lines } = await start(store, 100_000, 300);
    cleanup.push(() => node.stop());
    const warmed = lines.find((l) => String(l.msg).startsWith('warmed up:'));
    assert.ok(warmed && Number(warmed.jobs) < 100_000, `cut short: ${JSON.stringify(warmed)}`);
    assert.deepEqual(await leftovers(node), NOTHING);
    await works(node, node.bootstrapKey!);
    assert.deepEqual(loud(lines), []);
  });

  test('the organization of a warm-up that did not finish goes with the next warm-up, its live jobs cancelled first', async () => {
    const store = await freshStore();
    cleanup.push(() => store.dispose());
    // A node without a warm-up stands in for one that stopped during its own: it leaves a warm-up organization with
    // a queue, a pending job and a claimed one.
    const first = await start(store, 0);
    const defaultKey = first.node.bootstrapKey!;
    const org = randomUUID();
    const { key, digest, prefix } = newApiKey(false);
    await createOrganization(first.node.store, {
      id: org,
      name: 'left behind',
      slug: `_warm-up.${org}`,
      plan: 'enterprise',
      keyId: randomUUID(),
      keyName: 'warm-up',
      keyDigest: digest,
      keyPrefix: prefix,
      at: new Date(Date.now() - 3_600_000),
    });
    const left = new Api(first.node.url, key);
    await left.enqueue({ queue_name: 'warm-up-0', payload: { n: 1 } });
    await left.enqueue({ queue_name: 'warm-up-0', payload: { n: 2 } });
    assert.equal((await left.claim('warm-up-0')).length, 1);
    await first.node.stop();

    // The next node rebuilds that queue (its actor holds the two live jobs), then its warm-up removes it all.
    const { node, lines } = await start(store, 50);
    cleanup.push(() => node.stop());
    assert.ok(lines.some((l) => l.msg === 'removed the organization of a warm-up that did not finish' && l.organization_id === org));
    assert.deepEqual(await leftovers(node), NOTHING);
    await works(node, defaultKey);
    assert.deepEqual(loud(lines), []);
  });

  test('no organization can be registered under a warm-up slug', async () => {
    const store = await freshStore();
    cleanup.push(() => store.dispose());
    const { node } = await start(store, 0);
    cleanup.push(() => node.stop());
    const r = await fetch(`${node.url}/api/v1/organizations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-key': ADMIN },
      body: JSON.stringify({ name: 'sneaky', slug: `_warm-up.${randomUUID()}` }),
    });
    assert.equal(r.status, 422);
  });
});
