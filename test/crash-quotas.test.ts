// Quota counters under kill -9: while one organization registers workers and creates schedules, outgoing
// webhooks and workflows as fast as it can, the node is killed. After a restart every acknowledged creation is
// there, the usage counters equal the rows (they are re-derived from them, not trusted from memory), and each
// quota still stops at exactly its limit.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Api, freePort, freshStore, sleep, spawnNode, type ApiResponse } from './helpers.js';

const ADMIN = 'admin-key-for-the-crash-test';
const RESOURCES = ['workers', 'schedules', 'webhooks', 'workflows'] as const;
type Resource = (typeof RESOURCES)[number];
/** High enough that the kill comes before the fast resources reach their limit. */
const LIMITS: Record<Resource, number> = { workers: 400, schedules: 400, webhooks: 400, workflows: 100 };

/** One creation of a resource; the id of what was created when the answer says so. */
async function create(api: Api, resource: Resource, i: number): Promise<{ status: number; id?: string }> {
  const ok = (r: { status: number; body: any }, id: (b: any) => string) => ({ status: r.status, id: r.status === 201 ? id(r.body) : undefined });
  switch (resource) {
    case 'workers':
      return ok(await api.post('/api/v1/workers/register', { worker_id: `w-${i}` }), (b) => b.worker_id);
    case 'schedules':
      return ok(await api.post('/api/v1/schedules', { name: `s-${i}`, queue_name: 'crash', cron_expression: '0 0 0 1 1 *', timezone: 'UTC' }), (b) => b.id);
    case 'webhooks':
      return ok(await api.post('/api/v1/outgoing-webhooks', { name: `h-${i}`, url: 'http://127.0.0.1:9/hook', events: ['job.completed'] }), (b) => b.id);
    case 'workflows':
      // A job waiting on a parent that never runs (nobody claims): the workflow stays running and holds its slot.
      return ok(
        await api.post('/api/v1/workflows', {
          name: `f-${i}`,
          jobs: [
            { name: 'a', queue_name: 'crash-flow', payload: { i } },
            { name: 'b', queue_name: 'crash-flow', payload: { i }, depends_on: ['a'] },
          ],
        }),
        (b) => b.id,
      );
  }
}

/** Everything of a resource the organization has now, by listing it page by page. */
async function listed(api: Api, resource: Resource): Promise<Set<string>> {
  const path = { workers: '/api/v1/workers', schedules: '/api/v1/schedules', webhooks: '/api/v1/outgoing-webhooks', workflows: '/api/v1/workflows' }[resource];
  const ids = new Set<string>();
  let next: string | null = `${path}?limit=100`;
  while (next) {
    const r: ApiResponse = await api.get(next);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    // A workflow holds its slot until it ends; one the crash caught half-created holds it until reconciliation
    // cancels it (docs/workflows.md).
    for (const item of r.body) if (resource !== 'workflows' || ['creating', 'running'].includes(item.status)) ids.add(item.worker_id ?? item.id);
    const link = r.headers.get('link');
    next = link ? /^<[^>]*?(\/api\/v1\/[^>]+)>/.exec(link)![1]! : null;
  }
  return ids;
}

test('kill -9 while creating counted resources: acknowledged ones survive, counters equal rows, limits stay exact', async () => {
  const store = await freshStore();
  const port = String(await freePort());
  const env = { ...store.env, PORT: port, ADMIN_API_KEY: ADMIN };
  const first = await spawnNode(env);
  let key = '';
  let acked = {} as Record<Resource, Set<string>>;
  let org = '';
  try {
    const admin = new Api(first.url, '');
    const made = await admin.call('POST', '/api/v1/admin/organizations', { name: 'Crash', slug: 'crash', plan: 'pro' }, { 'x-admin-key': ADMIN });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    key = made.body.api_key.key;
    org = made.body.organization.id;
    const limits = { rate_per_second: null, burst: null, jobs_per_day: null, active_jobs: null, ...LIMITS };
    const set = await admin.call('PUT', `/api/v1/admin/organizations/${org}/limits`, { limits }, { 'x-admin-key': ADMIN });
    assert.equal(set.status, 200, JSON.stringify(set.body));

    const api = new Api(first.url, key);
    acked = Object.fromEntries(RESOURCES.map((r) => [r, new Set<string>()])) as Record<Resource, Set<string>>;
    let stop = false;
    let n = 0;
    const loops = RESOURCES.flatMap((resource) =>
      Array.from({ length: 3 }, async () => {
        // A resource that is fast here stops short of its limit, so that the kill finds every quota below it even
        // when a slow one (workflows on a busy machine) takes seconds to reach its first acknowledgements.
        while (!stop && acked[resource].size < LIMITS[resource] - 20) {
          try {
            const r = await create(api, resource, n++);
            if (r.id) acked[resource].add(r.id);
          } catch {
            /* the connection died with the process: not acknowledged */
          }
        }
      }),
    );
    const until = Date.now() + 15_000;
    while (RESOURCES.some((r) => acked[r].size < 15) && Date.now() < until) await sleep(10);
    first.child.kill('SIGKILL');
    stop = true;
    await Promise.all(loops);
    await new Promise((r) => (first.child.exitCode !== null || first.child.signalCode !== null ? r(null) : first.child.once('exit', r)));
    for (const r of RESOURCES) assert.ok(acked[r].size >= 15, `only ${acked[r].size} ${r} acknowledged before the kill`);
  } finally {
    if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
  }

  const second = await spawnNode(env);
  try {
    const api = new Api(second.url, key);
    const usage = (await api.get('/api/v1/organizations/usage')).body.usage;
    for (const resource of RESOURCES) {
      const rows = await listed(api, resource);
      for (const id of acked[resource]) assert.ok(rows.has(id), `acknowledged ${resource} ${id} lost`);
      assert.equal(usage[resource].current, rows.size, `${resource}: the counter equals the rows`);
      let more = 0;
      for (let i = 0; ; i++) {
        const r = await create(api, resource, 100_000 + i);
        if (r.status === 429) break;
        assert.equal(r.status, 201, `${resource} creation after the restart`);
        more++;
      }
      assert.ok(rows.size < LIMITS[resource], `${resource}: the kill came before the limit`);
      assert.equal(rows.size + more, LIMITS[resource], `${resource} stops at exactly ${LIMITS[resource]}`);
    }
  } finally {
    second.child.kill('SIGTERM');
    await new Promise((r) => second.child.once('exit', r));
    await store.dispose();
  }
});
