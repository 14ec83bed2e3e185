// Incoming webhooks: the organization's token (GET creates it once, regenerate rotates it and the old one is
// refused at once, both need `*`), and POST /webhooks/:org_id/custom, which takes X-Webhook-Token instead of a
// Bearer credential and enqueues through the POST /jobs path: the job is readable, idempotency keys dedup, job
// quotas and the payload cap apply, and the request counts against the organization's rate limit.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { startTestNode, type Api, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey, orgOf } from './http-assert.js';

// Manual: the rate limit's windows move only when the test moves them.
const clock = new ManualClock(Date.UTC(2030, 5, 1, 12, 0));
let n: TestNode;
before(async () => {
  n = await startTestNode({ clock });
});
after(() => n.stop());

async function org(opts: { plan?: string; limited?: boolean; overrides?: Record<string, number | null> } = {}): Promise<{ api: Api; id: string }> {
  const { key, organizationId } = await insertKey(n, { plan: opts.plan ?? 'starter', limited: opts.limited });
  if (opts.overrides) {
    await n.node.store.query('UPDATE organizations SET limit_overrides = $2::jsonb WHERE id = $1', [organizationId, JSON.stringify(opts.overrides)]);
  }
  return { api: n.api.as(key), id: organizationId };
}

/** POST to the ingest route with this token (none: no header), without a Bearer credential. */
const ingest = (orgId: string, body: unknown, token?: string) =>
  n.api.as('').post(`/api/v1/webhooks/${orgId}/custom`, body, token === undefined ? {} : { 'x-webhook-token': token });

const tokenOf = async (api: Api): Promise<string> => {
  const r = await api.get('/api/v1/organizations/webhook-token');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.token;
};

describe('webhook token', () => {
  test('GET creates the token once and answers the URL; regenerate rotates it', async () => {
    const { api, id } = await org();
    const r = await api.get('/api/v1/organizations/webhook-token');
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body).sort(), ['token', 'url']);
    assert.match(r.body.token, /^whk_[A-Za-z0-9_-]{43}$/);
    assert.equal(r.body.url, `${n.node.url}/api/v1/webhooks/${id}/custom`);
    const again = await Promise.all([1, 2, 3].map(() => tokenOf(api)));
    assert.deepEqual(again, [r.body.token, r.body.token, r.body.token], 'the token is stable');

    const rotated = await api.post('/api/v1/organizations/webhook-token/regenerate');
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.body.token, r.body.token);
    assert.equal(rotated.body.url, r.body.url);
    assert.equal(await tokenOf(api), rotated.body.token);
    assertError(await ingest(id, { queue_name: 'hooks', payload: {} }, r.body.token), 401, 'UNAUTHORIZED');
    assert.equal((await ingest(id, { queue_name: 'hooks', payload: {} }, rotated.body.token)).status, 201);
  });

  test('PUBLIC_URL sets the base of the URL', async () => {
    const other = await startTestNode({ env: { PUBLIC_URL: 'https://queue.example.com/' } });
    try {
      const r = await other.api.get('/api/v1/organizations/webhook-token');
      const organizationId = await orgOf(other, other.api.key);
      assert.equal(r.body.url, `https://queue.example.com/api/v1/webhooks/${organizationId}/custom`);
    } finally {
      await other.stop();
    }
  });

  test('the token routes need *', async () => {
    const { id } = await org();
    const { key } = await insertKey(n, { organizationId: id, permissions: ['jobs:write', 'jobs:read'] });
    const writer = n.api.as(key);
    assertError(await writer.get('/api/v1/organizations/webhook-token'), 403, 'FORBIDDEN');
    assertError(await writer.post('/api/v1/organizations/webhook-token/regenerate'), 403, 'FORBIDDEN');
    assertError(await n.api.as('').get('/api/v1/organizations/webhook-token'), 401, 'UNAUTHORIZED');
    const rows = await n.node.store.query('SELECT webhook_token FROM organizations WHERE id = $1', [id]);
    assert.equal(rows[0]!.webhook_token, null, 'the refused calls created no token');
  });
});

describe('POST /api/v1/webhooks/:org_id/custom', () => {
  test('enqueues a job readable through GET /jobs/:id; the idempotency key dedups', async () => {
    const { api, id } = await org();
    const token = await tokenOf(api);
    const r = await ingest(id, { queue_name: 'stripe', payload: { event: 'charge.succeeded' }, idempotency_key: 'evt_1', priority: 10, tags: { source: 'stripe' } }, token);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.created, true);
    const job = await api.get(`/api/v1/jobs/${r.body.id}`);
    assert.equal(job.status, 200);
    assert.equal(job.body.organization_id, id);
    assert.equal(job.body.queue_name, 'stripe');
    assert.deepEqual(job.body.payload, { event: 'charge.succeeded' });
    assert.equal(job.body.priority, 10);
    assert.deepEqual(job.body.tags, { source: 'stripe' });
    assert.equal(job.body.status, 'pending');

    const dup = await ingest(id, { queue_name: 'stripe', payload: { event: 'again' }, idempotency_key: 'evt_1' }, token);
    assert.equal(dup.status, 200);
    assert.equal(dup.body.created, false);
    assert.equal(dup.body.id, r.body.id);
    // The same key through POST /jobs is the same job: one path, one key space.
    const viaJobs = await api.post('/api/v1/jobs', { queue_name: 'stripe', payload: {}, idempotency_key: 'evt_1' });
    assert.equal(viaJobs.status, 200);
    assert.equal(viaJobs.body.id, r.body.id);
    const [claimed] = await api.claim('stripe');
    assert.equal(claimed.id, r.body.id);
  });

  test('a missing or wrong token, an unknown organization, or another organization’s token is 401', async () => {
    const a = await org();
    const b = await org();
    const tokenA = await tokenOf(a.api);
    const body = { queue_name: 'hooks', payload: {} };
    assertError(await ingest(a.id, body), 401, 'UNAUTHORIZED');
    assertError(await ingest(a.id, body, ''), 401, 'UNAUTHORIZED');
    assertError(await ingest(a.id, body, `${tokenA}x`), 401, 'UNAUTHORIZED');
    assertError(await ingest(a.id, body, tokenA.slice(0, -1)), 401, 'UNAUTHORIZED');
    // B has no token yet, then has one: A's is refused on B's path either way.
    assertError(await ingest(b.id, body, tokenA), 401, 'UNAUTHORIZED');
    await tokenOf(b.api);
    assertError(await ingest(b.id, body, tokenA), 401, 'UNAUTHORIZED');
    const unknown = await ingest(randomUUID(), body, tokenA);
    assertError(unknown, 401, 'UNAUTHORIZED');
    assert.equal(unknown.body.message, (await ingest(a.id, body, 'nope')).body.message, 'an unknown organization is told nothing more');
    assertError(await ingest('not-an-org', body, tokenA), 401, 'UNAUTHORIZED');
    // A Bearer credential is not this route's credential.
    assertError(await a.api.post(`/api/v1/webhooks/${a.id}/custom`, body), 401, 'UNAUTHORIZED');
    // A credential in the query string is refused as everywhere.
    assertError(await n.api.as('').post(`/api/v1/webhooks/${a.id}/custom?token=${tokenA}`, body, { 'x-webhook-token': tokenA }), 401, 'UNAUTHORIZED');
    const jobs = await n.node.store.query('SELECT count(*)::int AS n FROM jobs WHERE organization_id IN ($1, $2)', [a.id, b.id]);
    assert.equal(jobs[0]!.n, 0);
  });

  test('the body is validated like POST /jobs (422, nothing created)', async () => {
    const { api, id } = await org();
    const token = await tokenOf(api);
    assertInvalid(await ingest(id, { payload: {} }, token), 'queue_name');
    assertInvalid(await ingest(id, { queue_name: 'q', payload: 'text' }, token), 'payload');
    assertInvalid(await ingest(id, { queue_name: 'q', payload: {}, scheduled_at: 'tomorrow' }, token), 'scheduled_at');
    assertInvalid(await ingest(id, '{not json', token), '(body)');
    const jobs = await n.node.store.query('SELECT count(*)::int AS n FROM jobs WHERE organization_id = $1', [id]);
    assert.equal(jobs[0]!.n, 0);
  });

  test('job quotas and the payload cap apply', async () => {
    const { api, id } = await org({ plan: 'free', overrides: { active_jobs: 2, rate_per_second: null, burst: null } });
    const token = await tokenOf(api);
    assert.equal((await ingest(id, { queue_name: 'q', payload: {} }, token)).status, 201);
    assert.equal((await ingest(id, { queue_name: 'q', payload: {} }, token)).status, 201);
    const over = await ingest(id, { queue_name: 'q', payload: {} }, token);
    assertError(over, 429, 'QUOTA_EXCEEDED', ['resource', 'current', 'limit', 'plan', 'upgrade_to']);
    assert.equal(over.body.resource, 'active_jobs');
    assert.equal(over.body.limit, 2);
    const big = await ingest(id, { queue_name: 'q', payload: { blob: 'x'.repeat(64 * 1024) } }, token);
    assertError(big, 413, 'PAYLOAD_TOO_LARGE', ['current', 'limit', 'plan', 'upgrade_to']);
    const jobs = await n.node.store.query('SELECT count(*)::int AS n FROM jobs WHERE organization_id = $1', [id]);
    assert.equal(jobs[0]!.n, 2);
  });

  test("ingest counts against the organization's rate limit and API calls", async () => {
    const { api, id } = await org({ plan: 'free', limited: true, overrides: { burst: 3, rate_per_second: 100 } });
    const token = await tokenOf(api); // 1 call
    assert.equal((await ingest(id, { queue_name: 'q', payload: {} }, token)).status, 201);
    assert.equal((await ingest(id, { queue_name: 'q', payload: {} }, token)).status, 201);
    const limited = await ingest(id, { queue_name: 'q', payload: {} }, token);
    assertError(limited, 429, 'RATE_LIMITED', ['retry_after']);
    assert.ok(limited.headers.get('retry-after'));
    assertError(await ingest(id, { queue_name: 'q', payload: {} }, 'wrong'), 401, 'UNAUTHORIZED');
    await clock.advance(1_000);
    const usage = await api.get('/api/v1/organizations/usage');
    assert.equal(usage.status, 200);
    assert.equal(usage.body.api_calls.today, 5, 'the token GET, three ingests (one rate-limited) and this call');
    assert.equal(usage.body.api_calls.rate_limited_today, 1);
  });
});
