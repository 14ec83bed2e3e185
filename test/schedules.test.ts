// Schedules over real HTTP under a ManualClock: cron fires (every minute, time zones across DST), pause,
// resume, delete, manual triggers, job quotas on automatic and manual fires, the `schedules` quota under a
// race, the run history, validation, a restart that repeats a fire without a second job, and isolation.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { startNode } from '../src/node.js';
import type { SluiceEvent } from '../src/app/events.js';
import { Api, freshStore, sleep, startTestNode, type ApiResponse, type TestNode } from './helpers.js';
import { assertError, assertInvalid, insertKey, nextLink, QUOTA_EXTRAS } from './http-assert.js';

const S = '/api/v1/schedules';
const MINUTE = 60_000;
const EVERY_MINUTE = '0 * * * * *';

describe('schedules', () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0));
  let n: TestNode;

  before(async () => {
    n = await startTestNode({ clock });
  });
  after(() => n.stop());

  /** A new organization (enterprise unless said otherwise) with these limit overrides, and an Api for its key. */
  async function org(plan = 'enterprise', overrides: Record<string, number | null> = {}): Promise<{ api: Api; id: string }> {
    const { key, organizationId } = await insertKey(n, { plan });
    await n.node.store.query('UPDATE organizations SET limit_overrides = $2::jsonb WHERE id = $1', [
      organizationId,
      JSON.stringify({ rate_per_second: null, burst: null, ...overrides }),
    ]);
    return { api: n.api.as(key), id: organizationId };
  }

  async function create(api: Api, body: Record<string, unknown>): Promise<any> {
    const r = await api.post(S, { name: 'sched', queue_name: 'cron', cron_expression: EVERY_MINUTE, ...body });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  }

  async function jobsOf(orgId: string, queue: string): Promise<any[]> {
    return n.node.store.query(
      'SELECT id, payload, idempotency_key, created_at, priority, max_retries, timeout_seconds FROM jobs WHERE organization_id = $1 AND queue_name = $2 ORDER BY created_at, id',
      [orgId, queue],
    );
  }

  async function schedulesOf(orgId: string): Promise<number> {
    const rows = await n.node.store.query<{ n: number }>('SELECT count(*)::int AS n FROM schedules WHERE organization_id = $1', [orgId]);
    return rows[0]!.n;
  }

  test('create: 201 with the definition, defaults and the first fire time', async () => {
    const { api } = await org();
    const now = clock.now();
    const r = await api.post(S, { name: 'nightly', cron_expression: EVERY_MINUTE, queue_name: 'reports', payload_template: { kind: 'report' } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(Object.keys(r.body).sort(), [
      'created_at', 'cron_expression', 'description', 'id', 'is_active', 'last_run_at', 'max_retries', 'name', 'next_run_at', 'organization_id', 'paused',
      'payload_template', 'priority', 'queue_name', 'timeout_seconds', 'timezone', 'updated_at',
    ]);
    assert.equal(r.body.description, null);
    assert.equal(r.body.is_active, true);
    assert.equal(r.body.timezone, 'UTC');
    assert.equal(r.body.priority, 0);
    assert.equal(r.body.max_retries, null);
    assert.equal(r.body.paused, false);
    assert.equal(r.body.last_run_at, null);
    assert.deepEqual(r.body.payload_template, { kind: 'report' });
    assert.equal(r.body.next_run_at, new Date(Math.floor(now / MINUTE) * MINUTE + MINUTE).toISOString());
    const got = await api.get(`${S}/${r.body.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, r.body);
    assert.equal((await api.get(`${S}/${r.body.id.toUpperCase()}`)).body.id, r.body.id);
  });

  test('every minute: N minutes make exactly N jobs, payload_template as payload, one run each', async () => {
    const { api, id } = await org();
    const template = { report: 'daily', n: 1, nested: { a: [1, 2] } };
    const s = await create(api, { queue_name: 'minutely', payload_template: template, priority: 10, max_retries: 2, timeout_seconds: 60 });
    const events: SluiceEvent[] = [];
    const unsubscribe = n.node.events.subscribe(id, (e) => events.push(e));
    const N = 5;
    for (let i = 0; i < N; i++) await clock.advance(MINUTE);
    unsubscribe();
    const jobs = await jobsOf(id, 'minutely');
    assert.equal(jobs.length, N);
    const first = new Date(s.next_run_at).getTime();
    jobs.forEach((j, i) => {
      assert.deepEqual(j.payload, template);
      assert.equal(j.priority, 10);
      assert.equal(j.max_retries, 2);
      assert.equal(j.timeout_seconds, 60);
      assert.equal(j.idempotency_key, `schedule:${s.id}:${first + i * MINUTE}`);
    });
    // The jobs API shows them too.
    const listed = await api.get('/api/v1/jobs?queue_name=minutely');
    assert.equal(listed.body.length, N);

    const runs = await api.get(`${S}/${s.id}/runs`);
    assert.equal(runs.status, 200);
    assert.equal(runs.body.length, N);
    assert.deepEqual(
      runs.body.map((r: any) => r.scheduled_for),
      Array.from({ length: N }, (_, i) => new Date(first + (N - 1 - i) * MINUTE).toISOString()),
    );
    for (const r of runs.body) {
      assert.deepEqual(Object.keys(r).sort(), ['error', 'id', 'job_id', 'manual', 'schedule_id', 'scheduled_for', 'status', 'triggered_at']);
      assert.equal(r.status, 'enqueued');
      assert.equal(r.manual, false);
      assert.equal(r.error, null);
      assert.ok(jobs.some((j) => j.id === r.job_id));
    }
    const triggered = events.filter((e) => e.event === 'schedule.triggered');
    assert.equal(triggered.length, N);
    assert.deepEqual(Object.keys(triggered[0]!.data).sort(), ['job_id', 'manual', 'queue_name', 'schedule_id']);
    assert.equal(triggered[0]!.data.schedule_id, s.id);
    assert.equal(triggered[0]!.data.queue_name, 'minutely');
    assert.equal(triggered[0]!.data.manual, false);

    const got = await api.get(`${S}/${s.id}`);
    assert.equal(got.body.last_run_at, new Date(first + (N - 1) * MINUTE).toISOString());
    assert.equal(got.body.next_run_at, new Date(first + N * MINUTE).toISOString());
  });

  test('pause stops firing; resume restarts from now', async () => {
    const { api, id } = await org();
    const s = await create(api, { queue_name: 'pausing' });
    await clock.advance(MINUTE);
    assert.equal((await jobsOf(id, 'pausing')).length, 1);
    const p = await api.post(`${S}/${s.id}/pause`);
    assert.equal(p.status, 200);
    assert.equal(p.body.paused, true);
    assert.equal(p.body.next_run_at, null);
    for (let i = 0; i < 3; i++) await clock.advance(MINUTE);
    assert.equal((await jobsOf(id, 'pausing')).length, 1);
    const r = await api.post(`${S}/${s.id}/resume`);
    assert.equal(r.status, 200);
    assert.equal(r.body.paused, false);
    assert.equal(r.body.next_run_at, new Date(Math.floor(clock.now() / MINUTE) * MINUTE + MINUTE).toISOString());
    await clock.advance(MINUTE);
    assert.equal((await jobsOf(id, 'pausing')).length, 2, 'fire times missed while paused are not owed');
    await clock.advance(MINUTE);
    assert.equal((await jobsOf(id, 'pausing')).length, 3);
  });

  test('delete stops it and frees nothing else; a second delete is 404', async () => {
    const { api, id } = await org();
    const s = await create(api, { queue_name: 'deleting' });
    await clock.advance(MINUTE);
    assert.equal((await jobsOf(id, 'deleting')).length, 1);
    const d = await api.delete(`${S}/${s.id}`);
    assert.equal(d.status, 200);
    assert.deepEqual(d.body, { id: s.id, deleted: true });
    for (let i = 0; i < 3; i++) await clock.advance(MINUTE);
    assert.equal((await jobsOf(id, 'deleting')).length, 1, 'its jobs stay, and no more come');
    assertError(await api.get(`${S}/${s.id}`), 404, 'NOT_FOUND');
    assertError(await api.delete(`${S}/${s.id}`), 404, 'NOT_FOUND');
    assertError(await api.get(`${S}/${s.id}/runs`), 404, 'NOT_FOUND');
  });

  test('update: changes the definition and recomputes the next fire time; later jobs follow it', async () => {
    const { api, id } = await org();
    const s = await create(api, { queue_name: 'upd-a', payload_template: { v: 1 }, max_retries: 3 });
    await clock.advance(MINUTE);
    const r = await api.put(`${S}/${s.id}`, {
      name: 'renamed',
      cron_expression: '0 */5 * * * *',
      queue_name: 'upd-b',
      payload_template: { v: 2 },
      max_retries: null,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.name, 'renamed');
    assert.equal(r.body.cron_expression, '0 */5 * * * *');
    assert.equal(r.body.max_retries, null);
    assert.equal(r.body.timezone, 'UTC');
    const next = Math.floor(clock.now() / (5 * MINUTE)) * 5 * MINUTE + 5 * MINUTE;
    assert.equal(r.body.next_run_at, new Date(next).toISOString());
    await clock.set(next);
    assert.equal((await jobsOf(id, 'upd-a')).length, 1);
    const b = await jobsOf(id, 'upd-b');
    assert.equal(b.length, 1);
    assert.deepEqual(b[0].payload, { v: 2 });
    assert.equal(b[0].max_retries, 3, 'null: the service default');

    // A partial update keeps the rest; a paused schedule stays paused.
    await api.post(`${S}/${s.id}/pause`);
    const p = await api.put(`${S}/${s.id}`, { priority: -10 });
    assert.equal(p.status, 200);
    assert.equal(p.body.priority, -10);
    assert.equal(p.body.name, 'renamed');
    assert.equal(p.body.paused, true);
    assert.equal(p.body.next_run_at, null);
  });

  test('manual trigger at both routes: a job now and a manual run; unknown ids are 404', async () => {
    const { api, id } = await org();
    const s = await create(api, { queue_name: 'manual', payload_template: { m: true }, cron_expression: '0 0 0 1 1 *' });
    const a = await api.post(`${S}/trigger`, { schedule_id: s.id });
    assert.equal(a.status, 201, JSON.stringify(a.body));
    assert.equal(a.body.manual, true);
    assert.equal(a.body.status, 'enqueued');
    assert.equal(a.body.schedule_id, s.id);
    assert.equal(a.body.job.id, a.body.job_id);
    assert.equal(a.body.job.queue_name, 'manual');
    assert.deepEqual(a.body.job.payload, { m: true });
    assert.equal(a.body.job.status, 'pending');
    const b = await api.post(`${S}/${s.id}/trigger`);
    assert.equal(b.status, 201);
    assert.notEqual(b.body.job_id, a.body.job_id, 'each trigger is its own job');
    const jobs = await jobsOf(id, 'manual');
    assert.deepEqual(jobs.map((j) => j.id).sort(), [a.body.job_id, b.body.job_id].sort());
    const runs = await api.get(`${S}/${s.id}/runs`);
    assert.equal(runs.body.length, 2);
    assert.ok(runs.body.every((r: any) => r.manual === true && r.status === 'enqueued'));
    assert.equal((await api.get(`${S}/${s.id}`)).body.last_run_at, new Date(clock.now()).toISOString());

    assertError(await api.post(`${S}/trigger`, { schedule_id: randomUUID() }), 404, 'NOT_FOUND');
    assertError(await api.post(`${S}/${randomUUID()}/trigger`), 404, 'NOT_FOUND');
    assertError(await api.post(`${S}/not-a-uuid/trigger`), 404, 'NOT_FOUND');
    assertInvalid(await api.post(`${S}/trigger`, {}), 'schedule_id');
    assertInvalid(await api.post(`${S}/trigger`, { schedule_id: 'nope' }), 'schedule_id');
  });

  test('automatic fires count against jobs_per_day: exactly the limit, then failed runs; manual trigger at the limit is 429', async () => {
    const { api, id } = await org('free', { jobs_per_day: 3 });
    const s = await create(api, { queue_name: 'limited' });
    for (let i = 0; i < 5; i++) await clock.advance(MINUTE);
    assert.equal((await jobsOf(id, 'limited')).length, 3);
    const runs = (await api.get(`${S}/${s.id}/runs`)).body;
    assert.equal(runs.length, 5);
    assert.deepEqual(
      runs.map((r: any) => r.status),
      ['failed', 'failed', 'enqueued', 'enqueued', 'enqueued'],
    );
    for (const r of runs.slice(0, 2)) {
      assert.equal(r.job_id, null);
      assert.match(r.error, /jobs_per_day/);
    }
    const got = await api.get(`${S}/${s.id}`);
    assert.ok(new Date(got.body.next_run_at).getTime() > clock.now(), 'the schedule moves on');

    const over = await api.post(`${S}/${s.id}/trigger`);
    assertError(over, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(over.body.resource, 'jobs_per_day');
    assert.equal(over.body.limit, 3);
    assertError(await api.post(`${S}/trigger`, { schedule_id: s.id }), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal((await jobsOf(id, 'limited')).length, 3);
    assert.equal((await api.get(`${S}/${s.id}/runs`)).body.length, 5, 'a refused manual trigger is the answer, not a run');
  });

  test('schedules quota: exactly the limit, 50 racing for the last slot; a delete frees one', async () => {
    const { api, id } = await org('starter', { schedules: 5 });
    for (let i = 0; i < 4; i++) await create(api, { name: `s${i}`, cron_expression: '0 0 0 1 1 *' });
    // Invalid creations take no slot.
    assertInvalid(await api.post(S, { name: 'bad', queue_name: 'q', cron_expression: '* * * * *' }), 'cron_expression');
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, i) => api.post(S, { name: `race-${i}`, queue_name: 'q', cron_expression: '0 0 0 1 1 *' })),
    );
    const made = rs.filter((r) => r.status === 201);
    assert.equal(made.length, 1);
    for (const r of rs.filter((x) => x.status !== 201)) {
      assertError(r, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
      assert.equal(r.body.resource, 'schedules');
      assert.equal(r.body.current, 5);
      assert.equal(r.body.limit, 5);
    }
    assert.equal(await schedulesOf(id), 5);
    assert.equal((await api.delete(`${S}/${made[0]!.body.id}`)).status, 200);
    assertError(await api.delete(`${S}/${made[0]!.body.id}`), 404, 'NOT_FOUND');
    assert.equal((await api.post(S, { name: 'after', queue_name: 'q', cron_expression: '0 0 0 1 1 *' })).status, 201, 'a deleted schedule frees its slot');
    assertError(await api.post(S, { name: 'one-more', queue_name: 'q', cron_expression: '0 0 0 1 1 *' }), 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(await schedulesOf(id), 5);
  });

  test('free plan: one schedule', async () => {
    const { api } = await org('free');
    await create(api, {});
    const r = await api.post(S, { name: 'second', queue_name: 'q', cron_expression: EVERY_MINUTE });
    assertError(r, 429, 'QUOTA_EXCEEDED', QUOTA_EXTRAS);
    assert.equal(r.body.limit, 1);
  });

  test('create and update: 422 with details for bad input, nothing stored or changed', async () => {
    const { api, id } = await org();
    const ok = { name: 'x', queue_name: 'q', cron_expression: EVERY_MINUTE };
    assertInvalid(await api.post(S, {}), 'name', 'queue_name', 'cron_expression');
    assertInvalid(await api.post(S), 'name');
    assertInvalid(await api.post(S, { ...ok, cron_expression: '* * * * *' }), 'cron_expression');
    assertInvalid(await api.post(S, { ...ok, cron_expression: '0 * * * * * *' }), 'cron_expression');
    assertInvalid(await api.post(S, { ...ok, cron_expression: '61 * * * * *' }), 'cron_expression');
    assertInvalid(await api.post(S, { ...ok, cron_expression: '0 0 25 * * *' }), 'cron_expression');
    assertInvalid(await api.post(S, { ...ok, cron_expression: '0 0 0 * 13 *' }), 'cron_expression');
    assertInvalid(await api.post(S, { ...ok, cron_expression: 'a b c d e f' }), 'cron_expression');
    assertInvalid(await api.post(S, { ...ok, cron_expression: '0 0 0 30 2 *' }), 'cron_expression'); // never fires
    assertInvalid(await api.post(S, { ...ok, cron_expression: '' }), 'cron_expression');
    assertInvalid(await api.post(S, { ...ok, cron_expression: '@daily' }), 'cron_expression');
    assertInvalid(await api.post(S, { ...ok, timezone: 'Mars/Olympus_Mons' }), 'timezone');
    assertInvalid(await api.post(S, { ...ok, timezone: '' }), 'timezone');
    const both = await api.post(S, { ...ok, cron_expression: '* * *', timezone: 'Nowhere/Land' });
    assertInvalid(both, 'cron_expression', 'timezone');
    for (const q of ['.hidden', '-dash', 'sp ace', 'a'.repeat(101), '']) assertInvalid(await api.post(S, { ...ok, queue_name: q }), 'queue_name');
    assertInvalid(await api.post(S, { ...ok, name: '  ' }), 'name');
    assertInvalid(await api.post(S, { ...ok, payload_template: [1] }), 'payload_template');
    assertInvalid(await api.post(S, { ...ok, payload_template: 'x' }), 'payload_template');
    assertInvalid(await api.post(S, { ...ok, priority: 101 }), 'priority');
    assertInvalid(await api.post(S, { ...ok, max_retries: -1 }), 'max_retries');
    assertInvalid(await api.post(S, { ...ok, timeout_seconds: 1 }), 'timeout_seconds');
    assertInvalid(await api.post(S, '{"name":'), '(body)');
    assert.equal(await schedulesOf(id), 0);

    const s = await create(api, { queue_name: 'valid' });
    assertInvalid(await api.put(`${S}/${s.id}`, { cron_expression: '* * * * *' }), 'cron_expression');
    assertInvalid(await api.put(`${S}/${s.id}`, { timezone: 'Bad/Zone' }), 'timezone');
    assertInvalid(await api.put(`${S}/${s.id}`, { queue_name: '.x' }), 'queue_name');
    assertInvalid(await api.put(`${S}/${s.id}`, { name: '' }), 'name');
    assertInvalid(await api.put(`${S}/${s.id}`, { priority: 'high' }), 'priority');
    assert.deepEqual((await api.get(`${S}/${s.id}`)).body, s);
    assertError(await api.put(`${S}/${randomUUID()}`, { name: 'y' }), 404, 'NOT_FOUND');
  });

  test('a payload_template over the plan payload cap is 413 at create and update', async () => {
    const { api, id } = await org('free');
    const big = { blob: 'x'.repeat(64 * 1024) };
    const r = await api.post(S, { name: 'big', queue_name: 'q', cron_expression: EVERY_MINUTE, payload_template: big });
    assertError(r, 413, 'PAYLOAD_TOO_LARGE', ['current', 'limit', 'plan', 'upgrade_to']);
    assert.equal(r.body.limit, 64 * 1024);
    assert.equal(r.body.current, Buffer.byteLength(JSON.stringify(big)));
    assert.equal(await schedulesOf(id), 0);
    const s = await create(api, { payload_template: { small: true } });
    assertError(await api.put(`${S}/${s.id}`, { payload_template: big }), 413, 'PAYLOAD_TOO_LARGE', ['current', 'limit', 'plan', 'upgrade_to']);
    assert.deepEqual((await api.get(`${S}/${s.id}`)).body.payload_template, { small: true });
  });

  test('list and runs: newest first, cursor pages without gaps or repeats, 422 for a bad cursor or limit', async () => {
    const { api } = await org();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      await clock.advance(1);
      made.push((await create(api, { name: `l${i}`, cron_expression: '0 0 0 1 1 *' })).id);
    }
    const walk = async (first: string): Promise<any[]> => {
      const seen: any[] = [];
      let path: string | null = first;
      while (path) {
        const r: ApiResponse = await api.get(path);
        assert.equal(r.status, 200);
        assert.ok(r.body.length <= 2);
        seen.push(...r.body);
        path = nextLink(r);
      }
      return seen;
    };
    assert.deepEqual((await walk(`${S}?limit=2`)).map((s) => s.id), [...made].reverse());

    const target = made[0]!;
    const runIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      await clock.advance(1);
      runIds.push((await api.post(`${S}/${target}/trigger`)).body.id);
    }
    assert.deepEqual((await walk(`${S}/${target}/runs?limit=2`)).map((r) => r.id), [...runIds].reverse());
    assert.deepEqual((await api.get(`${S}/${made[1]}/runs`)).body, []);

    assertInvalid(await api.get(`${S}?limit=0`), 'limit');
    assertInvalid(await api.get(`${S}?limit=101`), 'limit');
    assertInvalid(await api.get(`${S}?cursor=nope`), 'cursor');
    assertInvalid(await api.get(`${S}/${target}/runs?cursor=nope`), 'cursor');
    const listCursor = (await api.get(`${S}?limit=1`)).headers.get('x-next-cursor')!;
    assertInvalid(await api.get(`${S}/${target}/runs?cursor=${listCursor}`), 'cursor');
  });

  test('permissions: reads need jobs:read, writes jobs:write', async () => {
    const { api, id } = await org();
    const s = await create(api, {});
    const reader = api.as((await insertKey(n, { organizationId: id, permissions: ['jobs:read'] })).key);
    assert.equal((await reader.get(S)).status, 200);
    assert.equal((await reader.get(`${S}/${s.id}`)).status, 200);
    assert.equal((await reader.get(`${S}/${s.id}/runs`)).status, 200);
    assertError(await reader.post(S, { name: 'x', queue_name: 'q', cron_expression: EVERY_MINUTE }), 403, 'FORBIDDEN');
    assertError(await reader.post(`${S}/${s.id}/trigger`), 403, 'FORBIDDEN');
    assertError(await reader.post(`${S}/${s.id}/pause`), 403, 'FORBIDDEN');
    assertError(await reader.delete(`${S}/${s.id}`), 403, 'FORBIDDEN');
    const queues = api.as((await insertKey(n, { organizationId: id, permissions: ['queues:read'] })).key);
    assertError(await queues.get(S), 403, 'FORBIDDEN');
  });

  test('isolation: another organization can neither see, list, change, trigger nor delete a schedule', async () => {
    const { api, id } = await org();
    const s = await create(api, { queue_name: 'mine', cron_expression: '0 0 0 1 1 *' });
    await api.post(`${S}/${s.id}/trigger`);
    const { api: other, id: otherId } = await org();
    assertError(await other.get(`${S}/${s.id}`), 404, 'NOT_FOUND');
    assert.deepEqual((await other.get(S)).body, []);
    assertError(await other.put(`${S}/${s.id}`, { name: 'taken' }), 404, 'NOT_FOUND');
    assertError(await other.post(`${S}/${s.id}/pause`), 404, 'NOT_FOUND');
    assertError(await other.post(`${S}/${s.id}/resume`), 404, 'NOT_FOUND');
    assertError(await other.post(`${S}/${s.id}/trigger`), 404, 'NOT_FOUND');
    assertError(await other.post(`${S}/trigger`, { schedule_id: s.id }), 404, 'NOT_FOUND');
    assertError(await other.get(`${S}/${s.id}/runs`), 404, 'NOT_FOUND');
    assertError(await other.delete(`${S}/${s.id}`), 404, 'NOT_FOUND');
    const mine = await api.get(`${S}/${s.id}`);
    assert.deepEqual({ ...mine.body, last_run_at: null, updated_at: s.updated_at }, s);
    assert.equal((await api.get(`${S}/${s.id}/runs`)).body.length, 1);
    assert.equal((await jobsOf(id, 'mine')).length, 1);
    assert.equal((await jobsOf(otherId, 'mine')).length, 0);
  });

  // Last: it moves the clock by months.
  test('time zone: 09:00 America/New_York fires at 14:00 UTC in January and 13:00 UTC in July; a long gap fires once', async () => {
    await clock.set(Date.UTC(2030, 0, 10, 0, 0));
    const { api, id } = await org();
    const s = await create(api, { queue_name: 'ny', cron_expression: '0 0 9 * * *', timezone: 'America/New_York' });
    assert.equal(s.next_run_at, '2030-01-10T14:00:00.000Z');
    await clock.set(Date.UTC(2030, 0, 10, 13, 59, 59));
    assert.equal((await jobsOf(id, 'ny')).length, 0);
    await clock.set(Date.UTC(2030, 0, 10, 14, 0));
    let jobs = await jobsOf(id, 'ny');
    assert.equal(jobs.length, 1);
    assert.equal(new Date(jobs[0].created_at).toISOString(), '2030-01-10T14:00:00.000Z');

    // Down (in effect) from January to July: one fire, for the latest missed time, then on schedule again.
    await clock.set(Date.UTC(2030, 6, 1, 0, 0));
    jobs = await jobsOf(id, 'ny');
    assert.equal(jobs.length, 2);
    assert.equal(jobs[1].idempotency_key, `schedule:${s.id}:${Date.UTC(2030, 5, 30, 13, 0)}`);
    const got = await api.get(`${S}/${s.id}`);
    assert.equal(got.body.next_run_at, '2030-07-01T13:00:00.000Z');
    await clock.set(Date.UTC(2030, 6, 1, 13, 0));
    jobs = await jobsOf(id, 'ny');
    assert.equal(jobs.length, 3);
    assert.equal(new Date(jobs[2].created_at).toISOString(), '2030-07-01T13:00:00.000Z');
    const runs = (await api.get(`${S}/${s.id}/runs`)).body;
    assert.deepEqual(
      runs.map((r: any) => r.scheduled_for),
      ['2030-07-01T13:00:00.000Z', '2030-06-30T13:00:00.000Z', '2030-01-10T14:00:00.000Z'],
    );
  });
});

describe('schedules across a restart', () => {
  test('stop and start on the same store: it keeps firing, and a fire repeated after a crash makes no second job', async () => {
    const clock = new ManualClock(Date.UTC(2030, 0, 1, 0, 0));
    const store = await freshStore();
    const first = await startTestNode({ clock, store });
    const key = first.api.key;
    try {
      const s = (await first.api.post(S, { name: 'r', queue_name: 'restart', cron_expression: EVERY_MINUTE, payload_template: { r: 1 } })).body;
      await clock.advance(MINUTE);
      const t1 = Date.UTC(2030, 0, 1, 0, 1);
      const count = async (node: { store: TestNode['node']['store'] }) =>
        (await node.store.query<{ n: number }>("SELECT count(*)::int AS n FROM jobs WHERE queue_name = 'restart'"))[0]!.n;
      assert.equal(await count(first.node), 1);
      // A crash after the enqueue of t1 and before its run and the schedule row were written.
      await first.node.store.query('DELETE FROM schedule_runs WHERE schedule_id = $1', [s.id]);
      await first.node.store.query('UPDATE schedules SET next_run_at = $2, last_run_at = NULL WHERE id = $1', [s.id, new Date(t1)]);
      await first.node.stop();

      // A clock of its own at the same time: the stopped node no longer listens to the first one.
      const clock2 = new ManualClock(clock.now());
      const node = await startNode({ config: loadConfig(first.env), clock: clock2 });
      try {
        const api = new Api(node.url, key);
        await clock2.advance(0); // the owed fire of t1, again
        assert.equal(await count(node), 1, 'the same fire time makes no second job');
        const runs = (await api.get(`${S}/${s.id}/runs`)).body;
        assert.equal(runs.length, 1);
        assert.equal(runs[0].scheduled_for, new Date(t1).toISOString());
        assert.equal((await api.get(`${S}/${s.id}`)).body.next_run_at, new Date(t1 + MINUTE).toISOString());
        for (let i = 0; i < 2; i++) await clock2.advance(MINUTE);
        assert.equal(await count(node), 3);
        const keys = await node.store.query<{ k: string }>("SELECT idempotency_key AS k FROM jobs WHERE queue_name = 'restart' ORDER BY k");
        assert.deepEqual(
          keys.map((r) => r.k),
          [0, 1, 2].map((i) => `schedule:${s.id}:${t1 + i * MINUTE}`),
        );
      } finally {
        await node.stop();
      }
    } finally {
      await store.dispose();
    }
  });
});

describe('schedules in real time', () => {
  test('one timer fires an every-second schedule without a ManualClock', async () => {
    const n = await startTestNode();
    try {
      const s = await n.api.post(S, { name: 'rt', queue_name: 'realtime', cron_expression: '* * * * * *' });
      assert.equal(s.status, 201);
      const count = async () =>
        (await n.node.store.query<{ n: number }>("SELECT count(*)::int AS n FROM jobs WHERE queue_name = 'realtime'"))[0]!.n;
      const deadline = Date.now() + 20_000;
      while ((await count()) < 2 && Date.now() < deadline) await sleep(200);
      assert.ok((await count()) >= 2, 'two fires within 20 s');
      assert.equal((await n.api.post(`${S}/${s.body.id}/pause`)).status, 200);
      const paused = await count();
      await sleep(1_500);
      assert.ok((await count()) <= paused + 1, 'at most a fire already under way when it was paused');
    } finally {
      await n.stop();
    }
  });
});
