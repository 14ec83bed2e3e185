// GET /metrics: the Prometheus text format, fed by commits, job transitions and request admission, with no
// tenant or job id anywhere in it; closed by METRICS_TOKEN when that is set.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sleep, startTestNode, type TestNode } from './helpers.js';
import { assertError, orgOf } from './http-assert.js';

let open: TestNode;
let closed: TestNode;
const TOKEN = 'metrics-token-for-tests';

before(async () => {
  open = await startTestNode();
  closed = await startTestNode({ env: { METRICS_TOKEN: TOKEN } });
});
after(async () => {
  await open?.stop();
  await closed?.stop();
});

/** The value of one sample line, e.g. `sluice_job_events_total{event="job.completed"}`. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  assert.ok(line, `no sample ${series} in:\n${text.slice(0, 2000)}`);
  return Number(line.slice(series.length + 1));
}

test('metrics count commits, job transitions and requests, and name no tenant or job', async () => {
  const api = open.api;
  const job = await api.enqueue({ queue_name: 'metered', payload: { n: 1 } });
  const [claimed] = await api.claim('metered');
  assert.equal((await api.post(`/api/v1/jobs/${claimed.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id })).status, 200);
  // Commit statistics arrive from the actor threads about once a second.
  let text = '';
  for (let i = 0; i < 40; i++) {
    const r = await fetch(`${open.node.url}/metrics`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
    text = await r.text();
    if (/^sluice_journal_commits_total [1-9]/m.test(text)) break;
    await sleep(100);
  }
  assert.ok(sample(text, 'sluice_journal_commits_total') >= 1);
  assert.ok(sample(text, 'sluice_journal_commit_records_count') >= 1);
  assert.equal(sample(text, 'sluice_job_events_total{event="job.created"}'), 1);
  assert.equal(sample(text, 'sluice_job_events_total{event="job.started"}'), 1);
  assert.equal(sample(text, 'sluice_job_events_total{event="job.completed"}'), 1);
  assert.ok(sample(text, 'sluice_api_requests_total{outcome="admitted"}') >= 3);
  assert.equal(sample(text, 'sluice_actor_threads'), 2);
  assert.match(text, /^sluice_process_/m);
  const org = await orgOf(open, api.key);
  for (const secret of [org, job.id, 'metered', api.key]) assert.ok(!text.includes(secret), `metrics mention ${secret}`);
});

test('with METRICS_TOKEN set, /metrics needs that token and nothing else', async () => {
  const url = `${closed.node.url}/metrics`;
  const bare = await closed.api.as('').get('/metrics');
  assertError(bare, 401, 'UNAUTHORIZED');
  // An API key, even the default organization's, is a tenant credential, not the operator's.
  assertError(await closed.api.get('/metrics'), 401, 'UNAUTHORIZED');
  assertError(await closed.api.as('wrong-token').get('/metrics'), 401, 'UNAUTHORIZED');
  const ok = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(ok.status, 200);
  assert.match(await ok.text(), /sluice_actor_threads 2/);
  // The token is a header credential like any other.
  assertError(await closed.api.as('').get(`/metrics?token=${TOKEN}`), 401, 'UNAUTHORIZED');
});
