// The OpenAPI document is generated from the router: every route is in it with a unique operationId, its
// permission, its real success bodies (shared components) and every error status it can answer. Redocly lints
// it, live answers of a real node are validated against it, and the SDK's types are checked against it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import Schema from 'typebox/schema';
import ts from 'typescript';
import { CATALOG } from '../src/errors.js';
import { startTestNode, type Api, type ApiResponse, type TestNode } from './helpers.js';
import { openApiTypes, TYPES_FILE } from './openapi-types.js';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN = 'openapi-test-admin-key';

type Json = Record<string, any>;
let n: TestNode;
let doc: Json;
/** operationId → [method, path, operation]. */
const ops = new Map<string, { method: string; path: string; op: Json }>();

before(async () => {
  n = await startTestNode({ env: { ADMIN_API_KEY: ADMIN } });
  const r = await n.api.as('').get('/api/v1/openapi.json');
  assert.equal(r.status, 200);
  doc = r.body;
  for (const [p, methods] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(methods)) ops.set(op.operationId, { method: method.toUpperCase(), path: p, op });
  }
});
after(() => n.stop());

/** A response object, its `$ref` into components.responses followed. */
function responseOf(op: Json, status: string): Json | undefined {
  const r = op.responses[status];
  if (r?.$ref) return doc.components.responses[r.$ref.split('/').pop()];
  return r;
}

describe('OpenAPI: the document', () => {
  test('GET /api/v1/openapi.json lists every route with a summary', () => {
    assert.equal(doc.openapi, '3.1.0');
    const listed = new Set<string>();
    for (const { method, path: p, op } of ops.values()) {
      listed.add(`${method} ${p}`);
      assert.ok(op.summary && !op.summary.startsWith(method + ' /'), `${method} ${p} has a summary`);
      assert.ok(op.responses && Object.keys(op.responses).length > 0);
    }
    for (const route of ['POST /api/v1/jobs', 'POST /api/v1/jobs/claim', 'GET /api/v1/jobs/{id}', 'POST /api/v1/jobs/dlq/purge', 'DELETE /api/v1/queues/{name}', 'GET /health/ready']) {
      assert.ok(listed.has(route), `${route} is documented`);
    }
    const enqueue = doc.paths['/api/v1/jobs'].post;
    assert.equal(enqueue.requestBody.content['application/json'].schema.properties.queue_name.type, 'string');
    assert.equal(enqueue['x-permission'], 'jobs:write');
  });

  test('every operation has an operationId: camelCase and unique', () => {
    const ids = Object.values<Json>(doc.paths).flatMap((methods) => Object.values<Json>(methods).map((op) => op.operationId));
    assert.ok(ids.length >= 80, `${ids.length} operations`);
    for (const id of ids) assert.match(String(id), /^[a-z][A-Za-z0-9]*$/, `${id} is camelCase`);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    // Names, not paths: the two trigger routes are two operations.
    assert.equal(ops.get('triggerSchedule')?.path, '/api/v1/schedules/{id}/trigger');
    assert.equal(ops.get('triggerScheduleById')?.path, '/api/v1/schedules/trigger');
  });

  test('servers, info.license, and the shared components', () => {
    assert.deepEqual(doc.servers, [{ url: '/', description: 'this node' }]);
    assert.ok(doc.info.license?.name && doc.info.license.identifier);
    const schemas = Object.keys(doc.components.schemas);
    for (const name of ['Job', 'Queue', 'Worker', 'Schedule', 'Workflow', 'OutgoingWebhook', 'Delivery', 'ApiKey', 'Usage', 'Error']) {
      assert.ok(schemas.includes(name), `component ${name}`);
    }
    // The job shape is written once: every other mention is a reference.
    const text = JSON.stringify(doc);
    assert.equal(text.split('"lease_expires_at":{"anyOf"').length - 1, 1, 'Job.lease_expires_at is written once');
    assert.ok(text.split('"$ref":"#/components/schemas/Job"').length - 1 >= 4);
  });

  test('every success answer that has a body documents its schema', () => {
    const without: string[] = [];
    for (const [id, { op }] of ops) {
      for (const [status, r] of Object.entries<Json>(op.responses)) {
        if (/^2/.test(status) && !r.content) without.push(`${id} ${status}`);
      }
    }
    assert.deepEqual(without, []);
  });

  test('error answers: the statuses each kind of route can return, each with the Error schema', () => {
    for (const [id, { method, op }] of ops) {
      const statuses = Object.keys(op.responses).map(Number);
      const errors = statuses.filter((s) => s >= 400);
      for (const s of errors) {
        const r = responseOf(op, String(s))!;
        if (id === 'getDashboard' && s === 503) continue; // text/plain: the dashboard is not built
        assert.deepEqual(r.content['application/json'].schema, { $ref: '#/components/schemas/Error' }, `${id} ${s}`);
      }
      for (const s of [400, 401, 414, 422, 431, 500]) assert.ok(statuses.includes(s), `${id} documents ${s}`);
      if (method !== 'GET') assert.ok(statuses.includes(413), `${id} documents 413 (the body ceiling)`);
      if (op.security.some((s: Json) => 'bearer' in s)) {
        for (const s of [401, 429, 503]) assert.ok(statuses.includes(s), `${id} documents ${s}`);
        assert.match(responseOf(op, '429')!.description, /RATE_LIMITED/);
        assert.ok(responseOf(op, '429')!.headers['Retry-After']);
        if (op['x-permission'] !== 'authenticated') assert.ok(statuses.includes(403), `${id} documents 403`);
      }
    }
    const has = (id: string, status: number, code: keyof typeof CATALOG) =>
      assert.match(responseOf(ops.get(id)!.op, String(status))?.description ?? '', new RegExp(`\\b${code}\\b`), `${id}: ${status} ${code}`);
    for (const id of ['enqueueJob', 'enqueueJobs', 'enqueueJobFromWebhook', 'triggerSchedule', 'triggerScheduleById', 'createWorkflow', 'retryWorkflow']) {
      has(id, 429, 'QUOTA_EXCEEDED');
      has(id, 413, 'PAYLOAD_TOO_LARGE');
    }
    for (const id of ['createQueue', 'registerWorker', 'createApiKey', 'createSchedule', 'createOutgoingWebhook', 'updateOutgoingWebhook', 'retryJob', 'retryDeadLetterJobs']) {
      has(id, 429, 'QUOTA_EXCEEDED');
    }
    const conflicts: Array<[string, keyof typeof CATALOG]> = [
      ['createQueue', 'QUEUE_EXISTS'],
      ['deleteQueue', 'QUEUE_NOT_EMPTY'],
      ['cancelJob', 'JOB_NOT_LIVE'],
      ['setJobPriority', 'JOB_NOT_LIVE'],
      ['retryJob', 'JOB_NOT_LIVE'],
      ['retryJob', 'WORKFLOW_JOB'],
      ['registerWorker', 'WORKER_ID_TAKEN'],
      ['cancelWorkflow', 'WORKFLOW_NOT_LIVE'],
      ['retryWorkflow', 'WORKFLOW_NOT_LIVE'],
      ['createOrganization', 'SLUG_TAKEN'],
      ['adminCreateOrganization', 'SLUG_TAKEN'],
    ];
    for (const [id, code] of conflicts) has(id, 409, code);
    for (const id of ['completeJob', 'failJob', 'heartbeatJob']) has(id, 409, 'LEASE_EXPIRED');
    for (const id of ['completeJob', 'failJob', 'heartbeatJob', 'reportJobProgress']) has(id, 409, 'JOB_CANCELLED');
    for (const id of ['streamEvents', 'streamJobEvents', 'streamQueueStats', 'openEventSocket']) has(id, 429, 'TOO_MANY_STREAMS');
    has('getReadiness', 503, 'UNAVAILABLE');
    has('startEmailLogin', 429, 'RATE_LIMITED');
    // The admin routes take X-Admin-Key, and refuse with 401.
    for (const id of ['adminListOrganizations', 'adminCreateOrganization', 'adminSetPlan', 'adminSetLimits', 'adminResetUsage']) {
      assert.deepEqual(ops.get(id)!.op.security, [{ adminKey: [] }]);
      has(id, 401, 'UNAUTHORIZED');
    }
  });

  test('a request body is required exactly when the route refuses an empty one', () => {
    for (const [id, { op }] of ops) {
      if (!op.requestBody) continue;
      const schema = op.requestBody.content['application/json'].schema;
      // An empty body is taken for {} (src/io/http/validate.ts).
      assert.equal(op.requestBody.required, !Schema.Check(schema, {}), `${id}: requestBody.required`);
    }
    const required = (id: string) => ops.get(id)!.op.requestBody.required;
    for (const id of ['enqueueJob', 'enqueueJobs', 'claimJobs', 'completeJob', 'completeJobs', 'createSchedule', 'createWorkflow', 'login', 'purgeDeadLetterJobs', 'retryDeadLetterJobs']) {
      assert.equal(required(id), true, `${id} needs a body`);
    }
    for (const id of ['createQueue', 'registerWorker', 'logout', 'pauseQueue', 'updateSchedule', 'updateOutgoingWebhook']) {
      assert.equal(required(id), false, `${id} accepts an empty body`);
    }
  });
});

describe('OpenAPI: lint', () => {
  test('Redocly lints the served document with 0 errors and only the allowed warnings', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-openapi-'));
    const file = path.join(dir, 'openapi.json');
    fs.writeFileSync(file, JSON.stringify(doc, null, 2));
    try {
      const run = spawnSync(path.join(ROOT, 'node_modules/.bin/redocly'), ['lint', file, '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json'], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 120_000,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      });
      assert.ok(run.stdout.trim().startsWith('{'), `redocly printed no report: ${run.stderr}`);
      const report = JSON.parse(run.stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }> };
      const shown = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
      assert.equal(report.totals.errors, 0, shown.join('\n'));
      // Allowed (redocly.yaml): the WebSocket upgrade (101) and the redirect to the dashboard (302) have no 2XX.
      assert.deepEqual(shown.sort(), [
        'warn operation-2xx-response #/paths/~1/get/responses: Operation must have at least one `2XX` response.',
        'warn operation-2xx-response #/paths/~1api~1v1~1ws/get/responses: Operation must have at least one `2XX` response.',
      ]);
      assert.equal(run.status, 0, run.stderr);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('OpenAPI: the SDK', () => {
  test('clients/typescript/src/openapi.ts is what openapi-typescript makes of the served document', async () => {
    const fresh = await openApiTypes(doc);
    assert.ok(fresh === fs.readFileSync(TYPES_FILE, 'utf8'), 'clients/typescript/src/openapi.ts is stale: run `make sdk-types`');
  });

  test("the SDK's types conform to the document's components (test/sdk-types.check.ts compiles)", () => {
    const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
    const program = ts.createProgram([path.join(ROOT, 'test/sdk-types.check.ts')], { ...config.options, noEmit: true });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file ? `${path.relative(ROOT, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1} ` : '';
      return where + ts.flattenDiagnosticMessageText(d.messageText, '\n');
    });
    assert.deepEqual(problems, []);
  });
});

describe('OpenAPI: live answers match the document', () => {
  /** A schema with its references resolved and, where it says nothing, no fields beyond those it names. */
  function strict(schema: unknown): unknown {
    if (Array.isArray(schema)) return schema.map(strict);
    if (schema === null || typeof schema !== 'object') return schema;
    const s = schema as Json;
    if (typeof s.$ref === 'string') return strict(doc.components.schemas[s.$ref.split('/').pop()!]);
    const out: Json = Object.fromEntries(Object.entries(s).map(([k, v]) => [k, k === 'properties' ? Object.fromEntries(Object.entries<unknown>(v).map(([p, ps]) => [p, strict(ps)])) : strict(v)]));
    // An allOf of objects (a component plus fields) is one object: each part alone would refuse the other's fields.
    if (Array.isArray(out.allOf) && out.allOf.every((part: Json) => part.type === 'object')) {
      const { allOf, ...rest } = out;
      return {
        ...rest,
        type: 'object',
        properties: Object.assign({}, ...allOf.map((part: Json) => part.properties)),
        required: allOf.flatMap((part: Json) => part.required ?? []),
        additionalProperties: false,
      };
    }
    if (out.type === 'object' && out.properties && out.additionalProperties === undefined && out.patternProperties === undefined) out.additionalProperties = false;
    return out;
  }

  const checked = new Map<string, Set<number>>();
  /** Calls an operation by its operationId and checks the answer against what the document says of its status. */
  async function call(api: Api, id: string, params: Record<string, string> = {}, body?: unknown, opts: { query?: string; headers?: Record<string, string> } = {}): Promise<ApiResponse> {
    const entry = ops.get(id);
    assert.ok(entry, `no operation ${id}`);
    const p = entry.path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params[k]!)) + (opts.query ? `?${opts.query}` : '');
    const r = await api.call(entry.method, p, body, opts.headers);
    const documented = responseOf(entry.op, String(r.status));
    assert.ok(documented, `${id}: ${r.status} is not documented (${JSON.stringify(r.body)})`);
    const schema = documented.content?.['application/json']?.schema;
    if (schema) {
      const [ok, errors] = Schema.Errors(strict(schema) as Parameters<typeof Schema.Errors>[0], r.body);
      assert.ok(ok, `${id} ${r.status}: ${JSON.stringify(errors.filter((e) => e.keyword !== 'boolean').slice(0, 5))}\n${JSON.stringify(r.body).slice(0, 800)}`);
    }
    if (!checked.has(id)) checked.set(id, new Set());
    checked.get(id)!.add(r.status);
    return r;
  }
  const expect = (r: ApiResponse, status: number) => assert.equal(r.status, status, JSON.stringify(r.body));

  test('one organization through every family of routes, errors included', { timeout: 120_000 }, async () => {
    const api = n.api;
    const admin = { headers: { 'x-admin-key': ADMIN } };

    expect(await call(api, 'getHealth'), 200);
    expect(await call(api, 'getLiveness'), 200);
    expect(await call(api, 'getReadiness'), 200);
    expect(await call(api, 'getOpenApiDocument'), 200);

    // Jobs.
    const job = (await call(api, 'enqueueJob', {}, { queue_name: 'oa', payload: { n: 1 }, tags: ['a'], idempotency_key: 'k1' })).body;
    expect(await call(api, 'enqueueJob', {}, { queue_name: 'oa', payload: { n: 1 }, idempotency_key: 'k1' }), 200);
    expect(await call(api, 'getJob', { id: job.id }), 200);
    expect(await call(api, 'listJobs', {}, undefined, { query: 'queue_name=oa&limit=1' }), 200);
    expect(await call(api, 'getJobStatuses', {}, undefined, { query: `ids=${job.id}` }), 200);
    expect(await call(api, 'getJobStats', {}, undefined, { query: 'queue_name=oa' }), 200);
    const bulk = (await call(api, 'enqueueJobs', {}, { queue_name: 'oa', jobs: [{ payload: {} }, { payload: 'not an object' }] })).body;
    assert.equal(bulk.failure_count, 1);
    expect(await call(api, 'enqueueJobs', {}, [{ queue_name: 'oa', payload: {} }]), 200);
    let [claimed] = (await call(api, 'claimJobs', {}, { queue_name: 'oa', worker_id: 'w1' })).body.jobs;
    expect(await call(api, 'heartbeatJob', { id: claimed.id }, { worker_id: 'w1', lease_id: claimed.lease_id }), 200);
    expect(await call(api, 'reportJobProgress', { id: claimed.id }, { worker_id: 'w1', lease_id: claimed.lease_id, progress: 50, message: 'half', data: { n: 1 } }), 200);
    expect(await call(api, 'reportJobProgress', { id: claimed.id }, { worker_id: 'w1', lease_id: 'stale', progress: 60 }), 409);
    expect(await call(api, 'completeJob', { id: claimed.id }, { worker_id: 'w1', lease_id: 'stale' }), 409);
    expect(await call(api, 'completeJob', { id: claimed.id }, { worker_id: 'w1', lease_id: claimed.lease_id, result: { ok: true } }), 200);
    await api.enqueue({ queue_name: 'oa' });
    [claimed] = (await call(api, 'claimJobs', {}, { queue_name: 'oa', worker_id: 'w1' })).body.jobs;
    const acked = (await call(api, 'completeJobs', {}, { worker_id: 'w1', jobs: [{ id: claimed.id, lease_id: claimed.lease_id }, { id: job.id, lease_id: 'stale' }] })).body;
    assert.deepEqual([acked.success_count, acked.failure_count], [1, 1]);
    [claimed] = (await call(api, 'claimJobs', {}, { queue_name: 'oa', worker_id: 'w1' })).body.jobs;
    expect(await call(api, 'failJob', { id: claimed.id }, { worker_id: 'w1', lease_id: claimed.lease_id, error: 'boom' }), 200);
    [claimed] = (await call(api, 'claimJobs', {}, { queue_name: 'oa', worker_id: 'w1' })).body.jobs;
    const dead = (await call(api, 'failJob', { id: claimed.id }, { worker_id: 'w1', lease_id: claimed.lease_id, error: 'fatal', retryable: false })).body;
    assert.equal(dead.status, 'deadletter');
    expect(await call(api, 'listDeadLetterJobs', {}, undefined, { query: 'queue_name=oa' }), 200);
    expect(await call(api, 'retryJob', { id: dead.id }), 200);
    expect(await call(api, 'retryJob', { id: dead.id }), 409);
    const pending = await api.enqueue({ queue_name: 'oa' });
    expect(await call(api, 'setJobPriority', { id: pending.id }, { priority: 5 }), 200);
    await api.post('/api/v1/queues/oa/pause', { reason: 'openapi' });
    expect(await call(api, 'explainJob', { id: pending.id }), 200);
    await api.post('/api/v1/queues/oa/resume');
    expect(await call(api, 'cancelJob', { id: pending.id }), 200);
    expect(await call(api, 'cancelJob', { id: pending.id }), 409);
    expect(await call(api, 'retryDeadLetterJobs', {}, { queue_name: 'oa' }), 200);
    expect(await call(api, 'purgeDeadLetterJobs', {}, { queue_name: 'oa', confirm: true }), 200);
    expect(await call(api, 'getJob', { id: '00000000-0000-7000-8000-000000000000' }), 404);
    expect(await call(api, 'enqueueJob', {}, { payload: {} }), 422);
    expect(await call(api.as(''), 'getJob', { id: job.id }), 401);

    // Queues.
    expect(await call(api, 'createQueue', {}, { name: 'oa2', max_retries: 2 }), 201);
    expect(await call(api, 'createQueue', {}, { name: 'oa2' }), 409);
    expect(await call(api, 'getQueue', { name: 'oa2' }), 200);
    expect(await call(api, 'listQueues'), 200);
    expect(await call(api, 'getQueueStats', { name: 'oa' }), 200);
    expect(await call(api, 'pauseQueue', { name: 'oa2' }, { reason: 'test' }), 200);
    expect(await call(api, 'resumeQueue', { name: 'oa2' }), 200);
    expect(await call(api, 'configureQueue', { name: 'oa2' }, { lease_duration_secs: 60 }), 200);
    expect(await call(api, 'deleteQueue', { name: 'oa2' }), 200);
    expect(await call(api, 'deleteQueue', { name: 'oa' }), 409);

    // Workers.
    expect(await call(api, 'registerWorker', {}, { worker_id: 'w-oa', queue_name: 'oa', metadata: { v: 1 } }), 201);
    expect(await call(api, 'registerWorker', {}, { worker_id: 'w-oa' }), 200);
    expect(await call(api, 'listWorkers'), 200);
    expect(await call(api, 'getWorker', { id: 'w-oa' }), 200);
    expect(await call(api, 'heartbeatWorker', { id: 'w-oa' }), 200);
    expect(await call(api, 'deregisterWorker', { id: 'w-oa' }), 200);
    expect(await call(api, 'getWorker', { id: 'w-oa' }), 404);

    // Schedules.
    const schedule = (await call(api, 'createSchedule', {}, { name: 's', cron_expression: '0 0 * * * *', queue_name: 'oa', payload_template: { s: 1 } })).body;
    expect(await call(api, 'listSchedules'), 200);
    expect(await call(api, 'getSchedule', { id: schedule.id }), 200);
    expect(await call(api, 'updateSchedule', { id: schedule.id }, { priority: 3, max_retries: null }), 200);
    expect(await call(api, 'pauseSchedule', { id: schedule.id }), 200);
    expect(await call(api, 'resumeSchedule', { id: schedule.id }), 200);
    expect(await call(api, 'triggerSchedule', { id: schedule.id }), 201);
    expect(await call(api, 'triggerScheduleById', {}, { schedule_id: schedule.id }), 201);
    expect(await call(api, 'listScheduleRuns', { id: schedule.id }), 200);
    expect(await call(api, 'listScheduleHistory', { id: schedule.id }), 200);
    expect(await call(api, 'deleteSchedule', { id: schedule.id }), 200);

    // Workflows.
    const flow = (
      await call(api, 'createWorkflow', {}, { name: 'wf', jobs: [{ name: 'a', queue_name: 'wfq', payload: {} }, { name: 'b', queue_name: 'wfq', payload: {}, depends_on: ['a'] }] })
    ).body;
    expect(await call(api, 'listWorkflows'), 200);
    expect(await call(api, 'getWorkflow', { id: flow.id }), 200);
    expect(await call(api, 'listJobDependencies', { id: flow.jobs[1].id }), 200);
    expect(await call(api, 'listJobDependencies', { id: '00000000-0000-7000-8000-000000000000' }), 404);
    expect(await call(api, 'retryWorkflow', { id: flow.id }), 409);
    expect(await call(api, 'cancelWorkflow', { id: flow.id }), 200);
    expect(await call(api, 'retryWorkflow', { id: flow.id }), 200);

    // Outgoing webhooks and their deliveries.
    const hook = (await call(api, 'createOutgoingWebhook', {}, { name: 'h', url: 'http://127.0.0.1:9/x', events: ['job.created'], secret: 's' })).body;
    expect(await call(api, 'listOutgoingWebhooks'), 200);
    expect(await call(api, 'getOutgoingWebhook', { id: hook.id }), 200);
    expect(await call(api, 'updateOutgoingWebhook', { id: hook.id }, { enabled: false, secret: null }), 200);
    expect(await call(api, 'testOutgoingWebhook', { id: hook.id }), 200);
    const deliveries = (await call(api, 'listDeliveries', { id: hook.id })).body;
    assert.ok(deliveries.length >= 1, 'the test delivery is in the history');
    expect(await call(api, 'deleteOutgoingWebhook', { id: hook.id }), 200);

    // API keys: a read-only one is refused a write (403).
    const key = (await call(api, 'createApiKey', {}, { name: 'ro', permissions: ['jobs:read'] })).body;
    expect(await call(api, 'listApiKeys'), 200);
    expect(await call(api, 'getApiKey', { id: key.id }), 200);
    expect(await call(api, 'updateApiKey', { id: key.id }, { name: 'read-only', permissions: ['jobs:read'] }), 200);
    expect(await call(api, 'updateApiKey', { id: key.id }, { permissions: ['nope'] }), 422);
    expect(await call(api.as(key.key), 'enqueueJob', {}, { queue_name: 'oa', payload: {} }), 403);
    expect(await call(api, 'revokeApiKey', { id: key.id }), 200);
    expect(await call(api, 'updateApiKey', { id: key.id }, { name: 'again' }), 409);

    // Sessions.
    const tokens = (await call(api, 'login', {}, { api_key: api.key })).body;
    expect(await call(api.as(tokens.access_token), 'getCurrentCredential'), 200);
    expect(await call(api, 'getCurrentCredential'), 200);
    expect(await call(api, 'refreshToken', {}, { refresh_token: tokens.refresh_token }), 200);
    expect(await call(api.as(tokens.access_token), 'logout'), 200);
    expect(await call(api, 'refreshToken', {}, { refresh_token: tokens.refresh_token }), 401);
    const other = (await call(api, 'login', {}, { api_key: api.key })).body;
    expect(await call(api, 'logout', {}, { refresh_token: other.refresh_token }), 200);
    expect(await call(api, 'startEmailLogin', {}, { email: 'nobody@example.com' }), 202);
    expect(await call(api, 'verifyEmailLogin', {}, { email: 'nobody@example.com', code: '000000' }), 401);

    // Usage, the dashboard overview, the incoming webhook.
    expect(await call(api, 'getUsage'), 200);
    expect(await call(api, 'getDashboardOverview'), 200);
    const token = (await call(api, 'getWebhookToken')).body;
    const fresh = (await call(api, 'regenerateWebhookToken')).body;
    assert.notEqual(fresh.token, token.token);
    const org = (await api.get('/api/v1/auth/me')).body.organization_id;
    expect(await call(api.as(''), 'enqueueJobFromWebhook', { org_id: org }, { queue_name: 'oa', payload: {} }, { headers: { 'x-webhook-token': fresh.token } }), 201);
    expect(await call(api.as(''), 'enqueueJobFromWebhook', { org_id: org }, { queue_name: 'oa', payload: {} }, { headers: { 'x-webhook-token': 'nope' } }), 401);

    // Organizations and the admin API; a Free organization meets its limits (429, 413).
    expect(await call(api.as(''), 'createOrganization', {}, { name: 'Open', slug: 'oa-open' }, admin), 201);
    expect(await call(api.as(''), 'createOrganization', {}, { name: 'Open', slug: 'oa-open' }, admin), 409);
    const free = (await call(api.as(''), 'adminCreateOrganization', {}, { name: 'Free', slug: 'oa-free', plan: 'free' }, admin)).body;
    expect(await call(api.as(''), 'adminListOrganizations', {}, undefined, admin), 200);
    expect(await call(api.as(''), 'adminListOrganizations'), 401);
    const freeId = free.organization.id;
    expect(await call(api.as(''), 'adminSetPlan', { id: freeId }, { plan: 'free' }, admin), 200);
    expect(await call(api.as(''), 'adminSetLimits', { id: freeId }, { limits: { queues: 1 } }, admin), 200);
    expect(await call(api.as(''), 'adminResetUsage', { id: freeId }, undefined, admin), 200);
    const small = api.as(free.api_key.key);
    expect(await call(small, 'createQueue', {}, { name: 'q1' }), 201);
    expect(await call(small, 'createQueue', {}, { name: 'q2' }), 429);
    expect(await call(small, 'enqueueJob', {}, { queue_name: 'q1', payload: { big: 'x'.repeat(70_000) } }), 413);
    expect(await call(small, 'createWorkflow', {}, { name: 'wf', jobs: [{ name: 'a', queue_name: 'q1', payload: {} }] }), 429);
    // The Free rate limit (5/s, burst 10).
    let limited: ApiResponse | undefined;
    for (let i = 0; i < 40 && !limited; i++) {
      const r = await call(small, 'getUsage');
      if (r.status === 429) limited = r;
    }
    assert.ok(limited, 'the rate limit answered 429');
    assert.equal(limited.body.code, 'RATE_LIMITED');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);

    // Every operation that answers JSON was checked; the rest stream or serve other media types.
    const notJson = new Set(['streamEvents', 'streamJobEvents', 'streamQueueStats', 'openEventSocket', 'getMetrics', 'getOrganizationMetrics', 'redirectToDashboard', 'getDashboard', 'getDashboardAsset']);
    const unchecked = [...ops.keys()].filter((id) => !checked.has(id) && !notJson.has(id));
    assert.deepEqual(unchecked, [], 'operations whose answers no test checked');
    const statuses = new Set([...checked.values()].flatMap((s) => [...s]));
    for (const s of [200, 201, 202, 401, 403, 404, 409, 413, 422, 429]) assert.ok(statuses.has(s), `a ${s} answer was checked`);
  });
});
