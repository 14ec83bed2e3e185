// Metrics: GET /metrics (the operator's, Prometheus text) and GET /api/v1/metrics (a tenant's own queues).
//
// A scripted workload under a ManualClock (enqueue, claim, complete, a retry and a dead letter by failure, a
// retry and a dead letter by lease expiry, a cancel, a webhook delivery that succeeds and one that fails, an SSE
// stream, gRPC calls) moves every series by a known amount; the whole global exposition names none of the
// organizations, queues, jobs or workers used; each organization's endpoint shows its own queues only; and the
// alert rules and the Grafana dashboard refer only to series a real node exposes.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { credentials, Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import { parse as parseYaml } from 'yaml';
import { ManualClock } from '../src/clock.js';
import { MAX_REPORTED_QUEUES } from '../src/app/metrics.js';
import { loadQueueV1 } from '../src/io/grpc/proto.js';
import { ROOT, sleep, startTestNode, type Api, type TestNode } from './helpers.js';
import { assertError, insertKey, orgOf } from './http-assert.js';

/** The value of one sample line, e.g. `sluice_job_events_total{event="job.completed"}`; NaN when absent. */
function value(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? NaN : Number(line.slice(series.length + 1));
}

function sample(text: string, series: string): number {
  const v = value(text, series);
  assert.ok(!Number.isNaN(v), `no sample ${series} in:\n${text.slice(0, 3000)}`);
  return v;
}

/** The sample names of an exposition (histograms as their _bucket, _sum and _count series). */
const sampleNames = (text: string): Set<string> =>
  new Set(text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l)![0]));

async function scrape(n: TestNode): Promise<string> {
  const r = await fetch(`${n.node.url}/metrics`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
  return r.text();
}

/** Scrapes until `ok` holds (events and commit statistics reach the main thread asynchronously). */
async function scrapeUntil(n: TestNode, what: string, ok: (text: string) => boolean, ms = 8_000): Promise<string> {
  const end = Date.now() + ms;
  for (;;) {
    const text = await scrape(n);
    if (ok(text)) return text;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}:\n${text.slice(0, 4000)}`);
    await sleep(50);
  }
}

/** A receiver on 127.0.0.1 that answers every POST with `status`. */
class Receiver {
  got = 0;
  private readonly server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      this.got++;
      res.statusCode = this.status;
      res.end();
    });
  });
  url = '';
  constructor(private readonly status: number) {}
  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }
  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

/**
 * The job series' samples (sluice_job_* and sluice_queue_events_total) by name and labels in a canonical order;
 * `perQueue`: the queue label is dropped and the queues' samples summed.
 */
function jobSamples(text: string, perQueue: boolean): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^((?:sluice_job_|sluice_queue_events_total)[a-z_]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = [...(m[2] ?? '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!] as const);
    if (perQueue !== labels.some(([k]) => k === 'queue')) continue;
    const key = `${m[1]}{${labels.filter(([k]) => k !== 'queue').map(([k, v]) => `${k}=${v}`).sort().join(',')}}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('metrics under a scripted workload', () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  let n: TestNode;
  let a: { api: Api; org: string; key: string };
  let b: { api: Api; org: string; key: string };
  const ok = new Receiver(200);
  const down = new Receiver(500);
  // Every id the workload uses; none may appear in /metrics.
  const QA = 'queue-alpha-4f1c';
  const QB = 'queue-beta-9d2e';
  const QC = 'queue-gamma-77ab';
  const QD = 'queue-delta-3c5a';
  const WORKERS = ['worker-alpha-one', 'worker-alpha-two', 'worker-beta-one'];
  const jobIds: string[] = [];
  let text = '';

  const claim = async (api: Api, queue: string, worker: string, lease?: number) => {
    const r = await api.post('/api/v1/jobs/claim', { queue_name: queue, worker_id: worker, ...(lease ? { lease_duration_secs: lease } : {}) });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.jobs.length, 1);
    return r.body.jobs[0] as { id: string; lease_id: string };
  };
  const enqueue = async (api: Api, body: Record<string, unknown>) => {
    const job = await api.enqueue(body);
    jobIds.push(job.id);
    return job as { id: string };
  };

  before(async () => {
    await ok.start();
    await down.start();
    n = await startTestNode({ clock, env: { RETRY_UNIT_MS: '1000', WEBHOOK_RETRY_UNIT_MS: '5', WEBHOOK_TIMEOUT_MS: '3000' } });
    const ka = await insertKey(n, { plan: 'pro' });
    const kb = await insertKey(n, { plan: 'pro' });
    a = { api: n.api.as(ka.key), org: ka.organizationId, key: ka.key };
    b = { api: n.api.as(kb.key), org: kb.organizationId, key: kb.key };
  });
  after(async () => {
    await n?.stop();
    await ok.stop();
    await down.stop();
  });

  test('each series moves as the workload says', async () => {
    const before = await scrape(n);
    // Default Node metrics under their standard names, no prefix.
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      assert.ok(sampleNames(before).has(name), `no ${name}`);
    }
    assert.doesNotMatch(before, /^sluice_process_/m);
    assert.equal(sample(before, 'sluice_job_retries_total{reason="failed"}'), 0);
    assert.equal(sample(before, 'sluice_job_dead_letters_total{reason="lease_expired"}'), 0);

    // Webhooks of A: a delivery that succeeds (job.completed) and one whose every attempt fails (job.cancelled).
    for (const [url, events] of [
      [ok.url, ['job.completed']],
      [down.url, ['job.cancelled']],
    ] as const) {
      const r = await a.api.post('/api/v1/outgoing-webhooks', { name: 'm', url, events });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    }

    // Completed: due at t0, claimed at t0+2 s (wait 2 s), completed 3 s later (run 3 s).
    const done = await enqueue(a.api, { queue_name: QA });
    await clock.advance(2_000);
    const c1 = await claim(a.api, QA, WORKERS[0]!);
    assert.equal(c1.id, done.id);
    await clock.advance(3_000);
    assert.equal((await a.api.post(`/api/v1/jobs/${c1.id}/complete`, { worker_id: WORKERS[0], lease_id: c1.lease_id })).status, 200);

    // Failed twice: a retry (due again after the 1 s backoff), then a dead letter.
    const failing = await enqueue(a.api, { queue_name: QA, max_retries: 1 });
    const f1 = await claim(a.api, QA, WORKERS[1]!);
    assert.equal(f1.id, failing.id);
    await clock.advance(500);
    assert.equal((await a.api.post(`/api/v1/jobs/${f1.id}/fail`, { worker_id: WORKERS[1], lease_id: f1.lease_id, error: 'boom' })).body.status, 'scheduled');
    await clock.advance(1_000);
    const f2 = await claim(a.api, QA, WORKERS[1]!);
    await clock.advance(500);
    assert.equal((await a.api.post(`/api/v1/jobs/${f2.id}/fail`, { worker_id: WORKERS[1], lease_id: f2.lease_id, error: 'boom' })).body.status, 'deadletter');

    // Lease expiries: a retry, then a dead letter (leases of 5 s run out).
    const expiring = await enqueue(a.api, { queue_name: QA, max_retries: 1 });
    assert.equal((await claim(a.api, QA, WORKERS[0]!, 5)).id, expiring.id);
    await clock.advance(6_000);
    await scrapeUntil(n, 'the first lease expiry', (t) => value(t, 'sluice_job_lease_expiries_total') === 1);
    assert.equal((await claim(a.api, QA, WORKERS[0]!, 5)).id, expiring.id);
    await clock.advance(6_000);

    // Cancelled while processing: its run ends after 1 s.
    const cancelled = await enqueue(a.api, { queue_name: QA });
    assert.equal((await claim(a.api, QA, WORKERS[1]!)).id, cancelled.id);
    await clock.advance(1_000);
    assert.equal((await a.api.delete(`/api/v1/jobs/${cancelled.id}`)).status, 200);
    await until('both webhook deliveries', () => ok.got === 1 && down.got === 5);

    // A's second queue: claimed after 4 s, failed for good 2 s later (not retryable).
    const lost = await enqueue(a.api, { queue_name: QD });
    await clock.advance(4_000);
    const d1 = await claim(a.api, QD, WORKERS[0]!);
    assert.equal(d1.id, lost.id);
    await clock.advance(2_000);
    const fatal = await a.api.post(`/api/v1/jobs/${d1.id}/fail`, { worker_id: WORKERS[0], lease_id: d1.lease_id, error: 'fatal', retryable: false });
    assert.equal(fatal.body.status, 'deadletter');

    // B: two pending, one processing in QB; one scheduled far ahead in QC.
    for (let i = 0; i < 3; i++) await enqueue(b.api, { queue_name: QB });
    await claim(b.api, QB, WORKERS[2]!);
    await enqueue(b.api, { queue_name: QC, scheduled_at: new Date(clock.now() + 3_600_000).toISOString() });
    await clock.advance(10_000);

    // An SSE stream held open, gRPC calls (one refused), a 404.
    const ac = new AbortController();
    const stream = await fetch(`${n.node.url}/api/v1/events`, { headers: { authorization: `Bearer ${a.key}` }, signal: ac.signal });
    assert.equal(stream.status, 200);
    const grpc = new (loadQueueV1().QueueService)(`127.0.0.1:${n.node.grpcPort}`, credentials.createInsecure()) as Client & Record<string, any>;
    const call = (key: string | null) =>
      new Promise<ServiceError | null>((resolve) => {
        const md = new Metadata();
        if (key !== null) md.set('x-api-key', key);
        grpc.GetQueueStats({ queueName: QA }, md, (err: ServiceError | null) => resolve(err));
      });
    assert.equal(await call(a.key), null);
    assert.ok(await call(null));
    grpc.close();
    assert.equal((await a.api.get('/api/v1/nothing-here')).status, 404);

    text = await scrapeUntil(
      n,
      'every transition and the cluster gauges',
      (t) =>
        value(t, 'sluice_job_dead_letters_total{reason="lease_expired"}') === 1 &&
        value(t, 'sluice_job_dead_letters_total{reason="failed"}') === 2 &&
        value(t, 'sluice_job_cancellations_total') === 1 &&
        value(t, 'sluice_jobs{state="pending"}') === 2 &&
        value(t, 'sluice_webhook_deliveries_total{kind="webhook",outcome="failed"}') === 1,
    );
    ac.abort();

    // Transitions.
    assert.equal(sample(text, 'sluice_job_events_total{event="job.created"}'), 9);
    assert.equal(sample(text, 'sluice_job_events_total{event="job.started"}'), 8);
    assert.equal(sample(text, 'sluice_job_events_total{event="job.completed"}'), 1);
    assert.equal(sample(text, 'sluice_job_events_total{event="job.failed"}'), 5);
    assert.equal(sample(text, 'sluice_job_events_total{event="job.cancelled"}'), 1);
    assert.equal(sample(text, 'sluice_job_retries_total{reason="failed"}'), 1);
    assert.equal(sample(text, 'sluice_job_retries_total{reason="lease_expired"}'), 1);
    assert.equal(sample(text, 'sluice_job_dead_letters_total{reason="failed"}'), 2);
    assert.equal(sample(text, 'sluice_job_dead_letters_total{reason="lease_expired"}'), 1);
    assert.equal(sample(text, 'sluice_job_lease_expiries_total'), 2);
    assert.equal(sample(text, 'sluice_job_cancellations_total'), 1);

    // Wait: 8 claims; the first waited 2 s, QD's 4 s, the retried one 0 s after its backoff, the others 0 s.
    assert.equal(sample(text, 'sluice_job_wait_seconds_count'), 8);
    assert.equal(sample(text, 'sluice_job_wait_seconds_sum'), 6);
    assert.equal(sample(text, 'sluice_job_wait_seconds_bucket{le="1"}'), 6);
    assert.equal(sample(text, 'sluice_job_wait_seconds_bucket{le="2.5"}'), 7);
    assert.equal(sample(text, 'sluice_job_wait_seconds_bucket{le="5"}'), 8);
    // Run: by outcome, the times the clock moved while each attempt was held.
    assert.equal(sample(text, 'sluice_job_run_seconds_count{outcome="completed"}'), 1);
    assert.equal(sample(text, 'sluice_job_run_seconds_sum{outcome="completed"}'), 3);
    assert.equal(sample(text, 'sluice_job_run_seconds_count{outcome="failed"}'), 3);
    assert.equal(sample(text, 'sluice_job_run_seconds_sum{outcome="failed"}'), 3);
    assert.equal(sample(text, 'sluice_job_run_seconds_count{outcome="lease_expired"}'), 2);
    assert.ok(sample(text, 'sluice_job_run_seconds_sum{outcome="lease_expired"}') >= 10);
    assert.equal(sample(text, 'sluice_job_run_seconds_count{outcome="cancelled"}'), 1);
    assert.equal(sample(text, 'sluice_job_run_seconds_sum{outcome="cancelled"}'), 1);

    // Cluster gauges, both organizations summed: the oldest pending job (B's, in QB) has waited 10 s by the clock.
    assert.equal(sample(text, 'sluice_jobs{state="pending"}'), 2);
    assert.equal(sample(text, 'sluice_jobs{state="processing"}'), 1);
    assert.equal(sample(text, 'sluice_jobs{state="scheduled"}'), 1);
    assert.equal(sample(text, 'sluice_jobs{state="deadletter"}'), 3);
    assert.equal(sample(text, 'sluice_jobs{state="blocked"}'), 0);
    assert.equal(sample(text, 'sluice_oldest_pending_job_age_seconds'), 10);

    // Webhooks, streams, HTTP and gRPC.
    assert.equal(sample(text, 'sluice_webhook_deliveries_total{kind="webhook",outcome="success"}'), 1);
    assert.equal(sample(text, 'sluice_webhook_deliveries_total{kind="webhook",outcome="failed"}'), 1);
    assert.equal(sample(text, 'sluice_webhook_endpoints_disabled_total'), 0);
    assert.equal(sample(text, 'sluice_streams_open{transport="sse"}'), 1);
    assert.equal(sample(text, 'sluice_streams_open{transport="websocket"}'), 0);
    assert.equal(sample(text, 'sluice_streams_open{transport="grpc"}'), 0);
    assert.equal(sample(text, 'sluice_grpc_request_duration_seconds_count{method="queue.v1.QueueService/GetQueueStats",code="OK"}'), 1);
    assert.equal(sample(text, 'sluice_grpc_request_duration_seconds_count{method="queue.v1.QueueService/GetQueueStats",code="UNAUTHENTICATED"}'), 1);
    assert.equal(sample(text, 'sluice_http_request_duration_seconds_count{method="POST",route="/api/v1/jobs/:id/complete",status_class="2xx"}'), 1);
    assert.equal(sample(text, 'sluice_http_request_duration_seconds_count{method="POST",route="/api/v1/jobs/:id/fail",status_class="2xx"}'), 3);
    assert.equal(sample(text, 'sluice_http_request_duration_seconds_count{method="DELETE",route="/api/v1/jobs/:id",status_class="2xx"}'), 1);
    assert.equal(sample(text, 'sluice_http_request_duration_seconds_count{method="OTHER",route="unmatched",status_class="4xx"}'), 1);
    assert.ok(sample(text, 'sluice_api_requests_total{outcome="admitted"}') >= 20);
    assert.ok(sample(text, 'sluice_journal_commits_total') >= 1);

    // The stream's slot is counted down once it ends.
    await scrapeUntil(n, 'the stream to close', (t) => value(t, 'sluice_streams_open{transport="sse"}') === 0);
  });

  test('the global exposition names no organization, queue, job, worker or key', async () => {
    assert.ok(text !== '', 'the workload test ran first');
    const secrets = [a.org, b.org, await orgOf(n, n.api.key), QA, QB, QC, QD, ...WORKERS, ...jobIds, a.key, b.key, n.api.key];
    assert.equal(jobIds.length, 9);
    for (const t of [text, await scrape(n)]) {
      for (const s of secrets) assert.ok(!t.includes(s), `/metrics mentions ${s}`);
      // No label but the bounded ones.
      const labels = new Set([...t.matchAll(/[{,]([a-z_]+)="/g)].map((m) => m[1]));
      for (const l of labels) assert.ok(['event', 'reason', 'outcome', 'state', 'transport', 'kind', 'method', 'route', 'status_class', 'code', 'le', 'quantile', 'space', 'version', 'major', 'minor', 'patch', 'type'].includes(l!), `label ${l}`);
    }
  });

  test('GET /api/v1/metrics: per queue, the caller organization only; needs queues:read', async () => {
    const own = async (api: Api) => {
      const r = await fetch(`${n.node.url}/api/v1/metrics`, { headers: { authorization: `Bearer ${api.key}` } });
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
      return r.text();
    };
    const ta = await own(a.api);
    assert.equal(sample(ta, `sluice_jobs{queue="${QA}",state="deadletter"}`), 2);
    assert.equal(sample(ta, `sluice_jobs{queue="${QA}",state="pending"}`), 0);
    assert.equal(sample(ta, `sluice_oldest_pending_job_age_seconds{queue="${QA}"}`), 0);
    assert.equal(sample(ta, `sluice_queue_paused{queue="${QA}"}`), 0);
    assert.equal(sample(ta, `sluice_jobs{queue="${QD}",state="deadletter"}`), 1);
    assert.equal(sample(ta, 'sluice_queues'), 2);
    const tb = await own(b.api);
    assert.equal(sample(tb, `sluice_jobs{queue="${QB}",state="pending"}`), 2);
    assert.equal(sample(tb, `sluice_jobs{queue="${QB}",state="processing"}`), 1);
    assert.equal(sample(tb, `sluice_jobs{queue="${QC}",state="scheduled"}`), 1);
    assert.equal(sample(tb, `sluice_oldest_pending_job_age_seconds{queue="${QB}"}`), 10);
    assert.equal(sample(tb, 'sluice_queues'), 2);
    // Each sees its own queues only, and no id of anybody.
    for (const [t, others] of [
      [ta, [QB, QC, b.org, a.org]],
      [tb, [QA, a.org, b.org]],
    ] as const) {
      for (const s of [...others, ...jobIds, ...WORKERS]) assert.ok(!t.includes(s), `mentions ${s}`);
    }
    // The busiest queues first: B's QB (3 unfinished) before QC (1).
    assert.ok(tb.indexOf(`queue="${QB}"`) < tb.indexOf(`queue="${QC}"`));

    // The job series of each queue: exactly what the workload did in it.
    const at = (t: string, series: string, queue: string, labels = '') => sample(t, `${series}{queue="${queue}"${labels}}`);
    const runOf = (t: string, queue: string, outcome: string) => [
      at(t, 'sluice_job_run_seconds_count', queue, `,outcome="${outcome}"`),
      at(t, 'sluice_job_run_seconds_sum', queue, `,outcome="${outcome}"`),
    ];
    const countsOf = (t: string, queue: string) => ({
      created: at(t, 'sluice_job_events_total', queue, ',event="job.created"'),
      started: at(t, 'sluice_job_events_total', queue, ',event="job.started"'),
      completed: at(t, 'sluice_job_events_total', queue, ',event="job.completed"'),
      failed: at(t, 'sluice_job_events_total', queue, ',event="job.failed"'),
      cancelled: at(t, 'sluice_job_events_total', queue, ',event="job.cancelled"'),
      retried: [at(t, 'sluice_job_retries_total', queue, ',reason="failed"'), at(t, 'sluice_job_retries_total', queue, ',reason="lease_expired"')],
      dead: [at(t, 'sluice_job_dead_letters_total', queue, ',reason="failed"'), at(t, 'sluice_job_dead_letters_total', queue, ',reason="lease_expired"')],
      expiries: at(t, 'sluice_job_lease_expiries_total', queue),
      cancellations: at(t, 'sluice_job_cancellations_total', queue),
      wait: [at(t, 'sluice_job_wait_seconds_count', queue), at(t, 'sluice_job_wait_seconds_sum', queue)],
    });
    // QA: 4 jobs, 6 claims (the first after 2 s, the others at once), a completion after 3 s, a retry and a dead
    // letter by failure (0.5 s each), a retry and a dead letter by lease expiry (6 s each), a cancel after 1 s.
    assert.deepEqual(countsOf(ta, QA), {
      created: 4, started: 6, completed: 1, failed: 4, cancelled: 1, retried: [1, 1], dead: [1, 1], expiries: 2, cancellations: 1, wait: [6, 2],
    });
    assert.equal(at(ta, 'sluice_job_wait_seconds_bucket', QA, ',le="1"'), 5);
    assert.equal(at(ta, 'sluice_job_wait_seconds_bucket', QA, ',le="2.5"'), 6);
    assert.equal(at(ta, 'sluice_job_wait_seconds_bucket', QA, ',le="+Inf"'), 6);
    assert.deepEqual(runOf(ta, QA, 'completed'), [1, 3]);
    assert.equal(at(ta, 'sluice_job_run_seconds_bucket', QA, ',outcome="completed",le="2.5"'), 0);
    assert.equal(at(ta, 'sluice_job_run_seconds_bucket', QA, ',outcome="completed",le="5"'), 1);
    assert.deepEqual(runOf(ta, QA, 'failed'), [2, 1]);
    assert.deepEqual(runOf(ta, QA, 'lease_expired'), [2, 12]);
    assert.deepEqual(runOf(ta, QA, 'cancelled'), [1, 1]);
    // QD: one job, claimed after 4 s, dead-lettered by its worker 2 s later.
    assert.deepEqual(countsOf(ta, QD), {
      created: 1, started: 1, completed: 0, failed: 1, cancelled: 0, retried: [0, 0], dead: [1, 0], expiries: 0, cancellations: 0, wait: [1, 4],
    });
    assert.equal(at(ta, 'sluice_job_wait_seconds_bucket', QD, ',le="2.5"'), 0);
    assert.equal(at(ta, 'sluice_job_wait_seconds_bucket', QD, ',le="5"'), 1);
    assert.deepEqual(runOf(ta, QD, 'failed'), [1, 2]);
    assert.deepEqual(runOf(ta, QD, 'completed'), [0, 0]);
    // B: three jobs in QB, one claimed at once; one scheduled in QC, never claimed.
    assert.deepEqual(countsOf(tb, QB), {
      created: 3, started: 1, completed: 0, failed: 0, cancelled: 0, retried: [0, 0], dead: [0, 0], expiries: 0, cancellations: 0, wait: [1, 0],
    });
    assert.deepEqual(countsOf(tb, QC), {
      created: 1, started: 0, completed: 0, failed: 0, cancelled: 0, retried: [0, 0], dead: [0, 0], expiries: 0, cancellations: 0, wait: [0, 0],
    });
    // Summed over every queue of both organizations, each job series is the node-wide one of GET /metrics.
    const global = jobSamples(text, false);
    const perQueue = jobSamples(ta + tb, true);
    assert.ok(global.size >= 40, `${global.size} global job samples`);
    assert.deepEqual(new Map([...perQueue].sort()), new Map([...global].sort()));
    // Labels: the global ones plus queue; every family declared once.
    for (const t of [ta, tb]) {
      const labels = new Set([...t.matchAll(/[{,]([a-z_]+)="/g)].map((m) => m[1]));
      for (const l of labels) assert.ok(['queue', 'state', 'event', 'reason', 'outcome', 'le'].includes(l!), `label ${l}`);
      const types = t.split('\n').filter((l) => l.startsWith('# TYPE '));
      assert.equal(new Set(types).size, types.length);
    }

    // A cap on the queues reported: an organization with 120 queues, one of them busy, gets that one and 99 others.
    const many = await insertKey(n, { plan: 'pro' });
    await n.node.store.query(
      `INSERT INTO queues (organization_id, name, created_at, updated_at)
       SELECT $1, 'q-' || lpad(i::text, 3, '0'), now(), now() FROM generate_series(1, 120) AS i`,
      [many.organizationId],
    );
    await n.api.as(many.key).enqueue({ queue_name: 'q-120' });
    const tm = await own(n.api.as(many.key));
    assert.equal(sample(tm, 'sluice_queues'), 120);
    assert.equal(tm.split('\n').filter((l) => l.startsWith('sluice_queue_paused{')).length, MAX_REPORTED_QUEUES);
    assert.equal(sample(tm, 'sluice_jobs{queue="q-120",state="pending"}'), 1);
    assert.equal(value(tm, 'sluice_queue_paused{queue="q-001"}'), 0);
    assert.ok(Number.isNaN(value(tm, 'sluice_queue_paused{queue="q-100"}')), 'the 101st queue is not reported');
    // The job series of the same 100 queues: the busy one counted its job, the others (never loaded) show zeros.
    assert.equal(tm.split('\n').filter((l) => l.startsWith('sluice_job_wait_seconds_count{')).length, MAX_REPORTED_QUEUES);
    assert.equal(sample(tm, 'sluice_job_events_total{queue="q-120",event="job.created"}'), 1);
    assert.equal(sample(tm, 'sluice_job_events_total{queue="q-001",event="job.created"}'), 0);
    assert.ok(Number.isNaN(value(tm, 'sluice_job_events_total{queue="q-100",event="job.created"}')));

    const reader = await insertKey(n, { organizationId: b.org, permissions: ['queues:read'] });
    assert.equal((await n.api.as(reader.key).get('/api/v1/metrics')).status, 200);
    const writer = await insertKey(n, { organizationId: b.org, permissions: ['jobs:write'] });
    assertError(await n.api.as(writer.key).get('/api/v1/metrics'), 403, 'FORBIDDEN');
    assertError(await n.api.as('').get('/api/v1/metrics'), 401, 'UNAUTHORIZED');
  });

  test('the alert rules and the Grafana dashboard parse and use only series a node exposes', async () => {
    const names = sampleNames(text);
    const used = (expr: string) => [...expr.matchAll(/\b((?:sluice|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1]!);
    const rules = parseYaml(readFileSync(path.join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8')) as {
      groups: Array<{ name: string; rules: Array<{ alert: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> }> }>;
    };
    const alerts = rules.groups.flatMap((g) => g.rules);
    for (const want of ['SluiceQueueBacklog', 'SluiceOldestPendingJob', 'SluiceDeadLetterRate', 'SluiceCommitFailures', 'SluiceWebhookEndpointDisabled']) {
      assert.ok(alerts.some((r) => r.alert === want), `no alert ${want}`);
    }
    for (const r of alerts) {
      assert.ok(r.labels.severity && r.annotations.summary, `${r.alert} needs a severity and a summary`);
      const refs = used(r.expr);
      assert.ok(refs.length > 0, `${r.alert} uses no series`);
      for (const m of refs) assert.ok(names.has(m), `${r.alert} uses ${m}, which /metrics does not expose`);
    }
    const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/sluice.json'), 'utf8')) as {
      title: string;
      panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
    };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
    assert.ok(exprs.length >= 10);
    for (const { panel, expr } of exprs) {
      for (const m of used(expr)) assert.ok(names.has(m), `panel "${panel}" uses ${m}, which /metrics does not expose`);
    }
    // Every alert's series is on the dashboard too.
    const shown = new Set(exprs.flatMap((e) => used(e.expr)));
    for (const r of alerts) for (const m of used(r.expr)) assert.ok(shown.has(m), `${m} (alert ${r.alert}) is on no panel`);
    // And every sluice_ series a node exposes is on a panel (a histogram counts once, whichever of its samples is used).
    const family = (m: string) => m.replace(/_(bucket|sum|count)$/, '');
    const shownFamilies = new Set([...shown].map(family));
    for (const m of names) if (m.startsWith('sluice_')) assert.ok(shownFamilies.has(family(m)), `${m} is on no panel of the dashboard`);
  });
});

describe('METRICS_TOKEN', () => {
  let closed: TestNode;
  const TOKEN = 'metrics-token-for-tests';
  before(async () => {
    closed = await startTestNode({ env: { METRICS_TOKEN: TOKEN } });
  });
  after(() => closed?.stop());

  test('with METRICS_TOKEN set, /metrics needs that token and nothing else', async () => {
    const url = `${closed.node.url}/metrics`;
    const bare = await closed.api.as('').get('/metrics');
    assertError(bare, 401, 'UNAUTHORIZED');
    // An API key, even the default organization's, is a tenant credential, not the operator's.
    assertError(await closed.api.get('/metrics'), 401, 'UNAUTHORIZED');
    assertError(await closed.api.as('wrong-token').get('/metrics'), 401, 'UNAUTHORIZED');
    const ok = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), new RegExp(`sluice_actor_threads ${closed.env.ACTOR_THREADS}\\b`));
    // The token is a header credential like any other.
    assertError(await closed.api.as('').get(`/metrics?token=${TOKEN}`), 401, 'UNAUTHORIZED');
    // The per-organization view takes an API key, not the token.
    assertError(await closed.api.as(TOKEN).get('/api/v1/metrics'), 401, 'UNAUTHORIZED');
    assert.equal((await closed.api.get('/api/v1/metrics')).status, 200);
  });
});
