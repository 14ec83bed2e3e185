// The OpenAPI document is generated from the router: every route is in it, documented, with its permission.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestNode, type TestNode } from './helpers.js';

let n: TestNode;
before(async () => {
  n = await startTestNode();
});
after(() => n.stop());

test('GET /api/v1/openapi.json lists every route with a summary', async () => {
  const r = await n.api.as('').get('/api/v1/openapi.json');
  assert.equal(r.status, 200);
  const doc = r.body;
  assert.equal(doc.openapi, '3.1.0');
  const listed = new Set<string>();
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(ops)) {
      listed.add(`${method.toUpperCase()} ${path}`);
      assert.ok(op.summary && !op.summary.startsWith(method.toUpperCase() + ' /'), `${method} ${path} has a summary`);
      assert.ok(op.responses && Object.keys(op.responses).length > 0);
      if (op['x-permission'] !== null) assert.ok(op.responses['401'], `${method} ${path} documents 401`);
    }
  }
  for (const route of ['POST /api/v1/jobs', 'POST /api/v1/jobs/claim', 'GET /api/v1/jobs/{id}', 'POST /api/v1/jobs/dlq/purge', 'DELETE /api/v1/queues/{name}', 'GET /health/ready']) {
    assert.ok(listed.has(route), `${route} is documented`);
  }
  const enqueue = doc.paths['/api/v1/jobs'].post;
  assert.equal(enqueue.requestBody.content['application/json'].schema.properties.queue_name.type, 'string');
  assert.equal(enqueue['x-permission'], 'jobs:write');
});
