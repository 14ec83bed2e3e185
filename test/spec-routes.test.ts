// Every route of SPEC's Jobs, Dead-letter queue, Queues and Workflows tables (plus the queue config and delete routes of
// issue 3) answers with a valid credential: neither 404 nor 405, on real resources.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestNode, type TestNode } from './helpers.js';

let n: TestNode;
before(async () => {
  n = await startTestNode();
});
after(() => n.stop());

test('every SPEC route of jobs, DLQ, queues and workflows exists', async () => {
  const api = n.api;
  const job = await api.enqueue({ queue_name: 'spec', payload: {} });
  const other = await api.enqueue({ queue_name: 'spec', payload: {} });
  const [claimed] = await api.claim('spec');
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
    ['POST', '/api/v1/workflows', { name: 'spec', jobs: [{ name: 'a', queue_name: 'spec-flow', payload: {} }] }],
    ['GET', '/api/v1/workflows'],
    ['GET', `/api/v1/workflows/${flow.id}`],
    ['POST', `/api/v1/workflows/${flow.id}/cancel`],
    ['POST', `/api/v1/workflows/${flow.id}/retry`],
  ];
  for (const [method, path, body] of routes) {
    const r = await api.call(method, path, body);
    assert.ok(r.status !== 404 && r.status !== 405, `${method} ${path} → ${r.status} ${JSON.stringify(r.body)}`);
    assert.ok(r.status < 500, `${method} ${path} → ${r.status} ${JSON.stringify(r.body)}`);
  }
});
