// Every route of SPEC's Jobs, Dead-letter queue, Queues, Schedules, Workflows and Outgoing webhooks tables (plus
// the queue config and delete routes of issue 3) answers with a valid credential: neither 404 nor 405, on real
// resources; so do the Real-time, Workers and incoming webhook routes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestNode, type TestNode } from './helpers.js';

let n: TestNode;
before(async () => {
  n = await startTestNode();
});
after(() => n.stop());

test('every SPEC route of jobs, DLQ, queues, schedules, workflows and outgoing webhooks exists', async () => {
  const api = n.api;
  const job = await api.enqueue({ queue_name: 'spec', payload: {} });
  const other = await api.enqueue({ queue_name: 'spec', payload: {} });
  const [claimed] = await api.claim('spec');
  const schedule = (await api.post('/api/v1/schedules', { name: 'spec', queue_name: 'spec', cron_expression: '0 0 0 1 1 *' })).body;
  const flow = (await api.post('/api/v1/workflows', { name: 'spec', jobs: [{ name: 'a', queue_name: 'spec-flow', payload: {} }] })).body;
  const routes: Array<[string, string, unknown?]> = [
    ['POST', '/api/v1/jobs', { queue_name: 'spec', payload: {} }],
    ['GET', '/api/v1/jobs'],
    ['GET', `/api/v1/jobs/${job.id}`],
    ['POST', '/api/v1/jobs/bulk', { jobs: [{ queue_name: 'spec', payload: {} }] }],
    ['POST', '/api/v1/jobs/claim', { queue_name: 'spec', worker_id: 'w1' }],
    ['POST', `/api/v1/jobs/${claimed.id}/heartbeat`, { worker_id: 'w1', lease_id: claimed.lease_id }],
    ['POST', `/api/v1/jobs/${claimed.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id }],
    ['POST', `/api/v1/jobs/${other.id}/fail`, { worker_id: 'w1', lease_id: 'x', error: 'e' }],
    ['PUT', `/api/v1/jobs/${other.id}/priority`, { priority: 10 }],
    ['DELETE', `/api/v1/jobs/${other.id}`],
    ['POST', `/api/v1/jobs/${other.id}/retry`],
    ['GET', '/api/v1/jobs/stats?queue_name=spec'],
    ['GET', `/api/v1/jobs/status?ids=${job.id},${other.id}`],
    ['GET', '/api/v1/jobs/dlq'],
    ['POST', '/api/v1/jobs/dlq/retry', { queue_name: 'spec' }],
    ['POST', '/api/v1/jobs/dlq/purge', { queue_name: 'spec', confirm: true }],
    ['GET', '/api/v1/queues'],
    ['POST', '/api/v1/queues', { name: 'spec-made' }],
    ['GET', '/api/v1/queues/spec'],
    ['GET', '/api/v1/queues/spec/stats'],
    ['POST', '/api/v1/queues/spec/pause', {}],
    ['POST', '/api/v1/queues/spec/resume'],
    ['PUT', '/api/v1/queues/spec/config', { max_retries: 2 }],
    ['DELETE', '/api/v1/queues/spec-made'],
    ['POST', '/api/v1/schedules', { name: 'spec-2', queue_name: 'spec', cron_expression: '0 0 0 1 1 *' }],
    ['GET', '/api/v1/schedules'],
    ['GET', `/api/v1/schedules/${schedule.id}`],
    ['PUT', `/api/v1/schedules/${schedule.id}`, { name: 'spec-renamed' }],
    ['POST', `/api/v1/schedules/${schedule.id}/pause`],
    ['POST', `/api/v1/schedules/${schedule.id}/resume`],
    ['POST', '/api/v1/schedules/trigger', { schedule_id: schedule.id }],
    ['DELETE', `/api/v1/schedules/${schedule.id}`],
    ['POST', '/api/v1/workflows', { name: 'spec', jobs: [{ name: 'a', queue_name: 'spec-flow', payload: {} }] }],
    ['GET', '/api/v1/workflows'],
    ['GET', `/api/v1/workflows/${flow.id}`],
    ['POST', `/api/v1/workflows/${flow.id}/cancel`],
    ['POST', `/api/v1/workflows/${flow.id}/retry`],
  ];
  // Outgoing webhooks: the endpoint points at a closed local port, so the test delivery fails fast.
  const hook = await api.post('/api/v1/outgoing-webhooks', { name: 'spec', url: 'http://127.0.0.1:9/spec', events: ['job.created'] });
  routes.push(
    ['POST', '/api/v1/outgoing-webhooks', { name: 'spec2', url: 'http://127.0.0.1:9/spec', events: ['job.created'], enabled: false }],
    ['GET', '/api/v1/outgoing-webhooks'],
    ['GET', `/api/v1/outgoing-webhooks/${hook.body.id}`],
    ['PUT', `/api/v1/outgoing-webhooks/${hook.body.id}`, { events: ['job.completed'] }],
    ['POST', `/api/v1/outgoing-webhooks/${hook.body.id}/test`],
    ['GET', `/api/v1/outgoing-webhooks/${hook.body.id}/deliveries`],
    ['DELETE', `/api/v1/outgoing-webhooks/${hook.body.id}`],
  );
  for (const [method, path, body] of routes) {
    const r = await api.call(method, path, body);
    assert.ok(r.status !== 404 && r.status !== 405, `${method} ${path} → ${r.status} ${JSON.stringify(r.body)}`);
    assert.ok(r.status < 500, `${method} ${path} → ${r.status} ${JSON.stringify(r.body)}`);
  }
});

test('every SPEC real-time route exists: the SSE routes open a stream, /api/v1/ws answers a plain GET with 426', async () => {
  const job = await n.api.enqueue({ queue_name: 'spec-rt', payload: {} });
  for (const path of ['/api/v1/events', `/api/v1/events/jobs/${job.id}`, '/api/v1/events/queues/spec-rt']) {
    const ac = new AbortController();
    const r = await fetch(n.node.url + path, { headers: { authorization: `Bearer ${n.api.key}` }, signal: ac.signal });
    assert.equal(r.status, 200, `GET ${path} → ${r.status}`);
    assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
    ac.abort();
  }
  assert.equal((await n.api.get('/api/v1/ws')).status, 426);
});

test('every SPEC route of workers and incoming webhooks exists', async () => {
  const api = n.api;
  const routes: Array<[string, string, unknown?]> = [
    ['POST', '/api/v1/workers/register', { worker_id: 'spec-worker' }],
    ['GET', '/api/v1/workers'],
    ['POST', '/api/v1/workers/spec-worker/heartbeat'],
    ['POST', '/api/v1/workers/spec-worker/deregister'],
    ['GET', '/api/v1/organizations/webhook-token'],
    ['POST', '/api/v1/organizations/webhook-token/regenerate'],
  ];
  for (const [method, path, body] of routes) {
    const r = await api.call(method, path, body);
    assert.ok(r.status !== 404 && r.status !== 405, `${method} ${path} → ${r.status} ${JSON.stringify(r.body)}`);
    assert.ok(r.status < 300, `${method} ${path} → ${r.status} ${JSON.stringify(r.body)}`);
  }
  const { token, url } = (await api.get('/api/v1/organizations/webhook-token')).body;
  const r = await api.as('').call('POST', new URL(url).pathname, { queue_name: 'spec', payload: {} }, { 'x-webhook-token': token });
  assert.equal(r.status, 201, `POST /api/v1/webhooks/:org_id/custom → ${r.status} ${JSON.stringify(r.body)}`);
});

test('every RPC of the SPEC gRPC table is in the contract the node serves', async () => {
  const { loadQueueV1 } = await import('../src/io/grpc/proto.js');
  const v1 = loadQueueV1();
  const spec = {
    QueueService: ['Enqueue', 'Dequeue', 'Complete', 'Fail', 'RenewLease', 'GetJob', 'GetQueueStats', 'StreamJobs', 'ProcessJobs'],
    WorkerService: ['Register', 'Heartbeat', 'Deregister'],
  };
  // Beyond the SPEC: flow control's explain (docs/flow-control.md), as on REST.
  const added: Record<keyof typeof spec, string[]> = { QueueService: ['ExplainJob'], WorkerService: [] };
  for (const [name, rpcs] of Object.entries(spec)) {
    assert.deepEqual(Object.keys(v1[name as keyof typeof spec].service).sort(), [...rpcs, ...added[name as keyof typeof spec]].sort(), name);
  }
});
