// Organizations over real HTTP: registration open and closed, the admin key (constant-time check, disabled
// when unset), slugs (pattern, uniqueness), the admin list and create-with-plan, and a new organization's key
// working while seeing nothing of another organization.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Api, startTestNode, type ApiResponse, type TestNode } from './helpers.js';
import { assertError, assertInvalid, nextLink } from './http-assert.js';

const ORGS = '/api/v1/organizations';
const ADMIN_ORGS = '/api/v1/admin/organizations';
const ADMIN_KEY = 'admin-key-for-the-tests-0123456789';

describe('open registration, no admin key configured', () => {
  let n: TestNode;
  let anon: Api;
  before(async () => {
    n = await startTestNode({ env: { REGISTRATION_MODE: 'open' } });
    anon = n.api.as('');
  });
  after(() => n.stop());

  test('anyone creates an organization: Free plan, its first key shown once', async () => {
    const r = await anon.post(ORGS, { name: 'Acme Corp', slug: 'acme', owner_email: 'Ops@Acme.example' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(Object.keys(r.body).sort(), ['api_key', 'organization']);
    const { organization: o, api_key: k } = r.body;
    assert.deepEqual(Object.keys(o).sort(), ['created_at', 'id', 'name', 'owner_email', 'plan', 'slug']);
    assert.equal(o.name, 'Acme Corp');
    assert.equal(o.slug, 'acme');
    assert.equal(o.plan, 'free');
    assert.equal(o.owner_email, 'ops@acme.example');
    assert.deepEqual(Object.keys(k).sort(), ['created_at', 'id', 'key', 'name', 'permissions']);
    assert.match(k.key, /^svc_test_/);
    assert.deepEqual(k.permissions, ['*']);

    const rows = await n.node.store.query('SELECT organization_id, key_digest FROM api_keys WHERE id = $1', [k.id]);
    assert.equal(rows[0]!.organization_id, o.id);
    assert.notEqual(rows[0]!.key_digest, k.key);
  });

  test("the new organization's key works and sees nothing of the default organization", async () => {
    const job = await n.api.enqueue({ queue_name: 'private', payload: { secret: 1 } });
    const r = await anon.post(ORGS, { name: 'Isolated', slug: 'isolated' });
    const mine = anon.as(r.body.api_key.key);
    const me = await mine.get('/api/v1/auth/me');
    assert.equal(me.body.organization_id, r.body.organization.id);
    assert.deepEqual((await mine.get('/api/v1/jobs')).body, []);
    assert.deepEqual((await mine.get('/api/v1/queues')).body, []);
    assertError(await mine.get(`/api/v1/jobs/${job.id}`), 404, 'NOT_FOUND');
    assertError(await mine.get('/api/v1/queues/private'), 404, 'NOT_FOUND');
    assertError(await mine.delete(`/api/v1/jobs/${job.id}`), 404, 'NOT_FOUND');
    const keys = await mine.get('/api/v1/api-keys');
    assert.deepEqual(
      keys.body.map((k: any) => k.id),
      [r.body.api_key.id],
    );
    // Its own work is its own.
    const own = await mine.enqueue({ queue_name: 'private', payload: {} });
    assertError(await n.api.get(`/api/v1/jobs/${own.id}`), 404, 'NOT_FOUND');
    assert.equal((await n.api.get(`/api/v1/jobs/${job.id}`)).body.status, 'pending');
  });

  test('slugs: unique (409, "default" included), lowercase letters, digits and hyphens, 2 to 63 characters', async () => {
    assert.equal((await anon.post(ORGS, { name: 'One', slug: 'taken-1' })).status, 201);
    assertError(await anon.post(ORGS, { name: 'Two', slug: 'taken-1' }), 409, 'SLUG_TAKEN');
    assertError(await anon.post(ORGS, { name: 'Default again', slug: 'default' }), 409, 'SLUG_TAKEN');
    assert.equal((await anon.post(ORGS, { name: 'Edges', slug: 'a1' })).status, 201);
    assert.equal((await anon.post(ORGS, { name: 'Edges', slug: `9${'x'.repeat(62)}` })).status, 201);
    for (const slug of ['Upper', 'a', '-lead', 'has space', 'under_score', 'dot.ted', `a${'x'.repeat(63)}`, '', 'é1']) {
      assertInvalid(await anon.post(ORGS, { name: 'Bad', slug }), 'slug');
    }
    assertInvalid(await anon.post(ORGS, { name: 'Bad', slug: 12 }), 'slug');
  });

  test('422 for a missing name or slug, a bad owner email; the plan is not the caller\'s to choose', async () => {
    const r = await anon.post(ORGS, {});
    assertInvalid(r, 'name', 'slug');
    assertInvalid(await anon.post(ORGS), 'name', 'slug');
    assertInvalid(await anon.post(ORGS, { name: ' ', slug: 'blank-name' }), 'name');
    assertInvalid(await anon.post(ORGS, { name: 'x'.repeat(201), slug: 'long-name' }), 'name');
    assertInvalid(await anon.post(ORGS, { name: 'Mail', slug: 'bad-mail', owner_email: 'not-an-address' }), 'owner_email');
    const free = await anon.post(ORGS, { name: 'Wants pro', slug: 'wants-pro', plan: 'pro' });
    assert.equal(free.status, 201);
    assert.equal(free.body.organization.plan, 'free');
  });

  test('the admin API is off without ADMIN_API_KEY: 401 for every caller', async () => {
    const tries: Array<Record<string, string>> = [{}, { 'x-admin-key': ADMIN_KEY }, { 'x-admin-key': '' }, { authorization: `Bearer ${n.api.key}` }];
    for (const headers of tries) {
      assertError(await anon.call('GET', ADMIN_ORGS, undefined, headers), 401, 'UNAUTHORIZED');
      assertError(await anon.call('POST', ADMIN_ORGS, { name: 'X', slug: 'via-admin' }, headers), 401, 'UNAUTHORIZED');
    }
  });
});

describe('closed registration with an admin key', () => {
  let n: TestNode;
  let anon: Api;
  const admin = { 'x-admin-key': ADMIN_KEY };
  before(async () => {
    n = await startTestNode({ env: { ADMIN_API_KEY: ADMIN_KEY } });
    anon = n.api.as('');
  });
  after(() => n.stop());

  test('registration needs X-Admin-Key: 401 without it, with a wrong one, or with a Bearer key', async () => {
    const body = { name: 'Closed', slug: 'closed' };
    assertError(await anon.post(ORGS, body), 401, 'UNAUTHORIZED');
    assertError(await anon.post(ORGS, body, { 'x-admin-key': `${ADMIN_KEY}x` }), 401, 'UNAUTHORIZED');
    assertError(await anon.post(ORGS, body, { 'x-admin-key': ADMIN_KEY.slice(0, -1) }), 401, 'UNAUTHORIZED');
    assertError(await anon.post(ORGS, body, { 'x-admin-key': '' }), 401, 'UNAUTHORIZED');
    assertError(await n.api.post(ORGS, body), 401, 'UNAUTHORIZED');
    assertError(await anon.post(ORGS, body, { authorization: `Bearer ${ADMIN_KEY}` }), 401, 'UNAUTHORIZED');
    // 401 comes before the body is looked at.
    assertError(await anon.post(ORGS, {}), 401, 'UNAUTHORIZED');
    const r = await anon.post(ORGS, body, admin);
    assert.equal(r.status, 201);
    assert.equal(r.body.organization.plan, 'free');
    assert.equal((await anon.as(r.body.api_key.key).get('/api/v1/jobs')).status, 200);
  });

  test('admin create: any plan, 422 for an unknown one, 409 for a taken slug', async () => {
    const r = await anon.post(ADMIN_ORGS, { name: 'Big Co', slug: 'big-co', plan: 'pro', owner_email: 'cto@big.example' }, admin);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.organization.plan, 'pro');
    assert.equal(r.body.organization.owner_email, 'cto@big.example');
    const noPlan = await anon.post(ADMIN_ORGS, { name: 'Small', slug: 'small-co' }, admin);
    assert.equal(noPlan.body.organization.plan, 'free');
    assertInvalid(await anon.post(ADMIN_ORGS, { name: 'Odd', slug: 'odd-co', plan: 'platinum' }, admin), 'plan');
    assertError(await anon.post(ADMIN_ORGS, { name: 'Again', slug: 'big-co' }, admin), 409, 'SLUG_TAKEN');
    const key = anon.as(r.body.api_key.key);
    assert.equal((await key.get('/api/v1/auth/me')).body.organization_id, r.body.organization.id);
  });

  test('admin list: every organization by slug, paged; 401 without the admin key', async () => {
    for (const slug of ['list-c', 'list-a', 'list-b']) assert.equal((await anon.post(ADMIN_ORGS, { name: slug, slug }, admin)).status, 201);
    const all: any[] = [];
    let path: string | null = `${ADMIN_ORGS}?limit=2`;
    while (path) {
      const r: ApiResponse = await anon.get(path, admin);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.ok(r.body.length <= 2);
      all.push(...r.body);
      path = nextLink(r);
    }
    const slugs = all.map((o) => o.slug);
    assert.deepEqual(slugs, [...slugs].sort());
    assert.equal(new Set(slugs).size, slugs.length);
    for (const s of ['default', 'list-a', 'list-b', 'list-c', 'big-co']) assert.ok(slugs.includes(s), s);
    const count = await n.node.store.query('SELECT count(*)::int AS n FROM organizations');
    assert.equal(all.length, count[0]!.n);
    assert.deepEqual(Object.keys(all[0]).sort(), ['created_at', 'id', 'name', 'owner_email', 'plan', 'slug']);

    assertError(await anon.get(ADMIN_ORGS), 401, 'UNAUTHORIZED');
    assertError(await n.api.get(ADMIN_ORGS), 401, 'UNAUTHORIZED');
    assertError(await anon.get(ADMIN_ORGS, { 'x-admin-key': 'wrong-wrong-wrong-wrong' }), 401, 'UNAUTHORIZED');
    assertInvalid(await anon.get(`${ADMIN_ORGS}?limit=0`, admin), 'limit');
    assertInvalid(await anon.get(`${ADMIN_ORGS}?cursor=zz`, admin), 'cursor');
    assertError(await anon.get(`${ADMIN_ORGS}?api_key=${ADMIN_KEY}`, admin), 401, 'UNAUTHORIZED');
  });
});
