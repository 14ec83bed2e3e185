// Per-queue metrics as a pure module: what a committed job event counts as, where an observation lands in the
// buckets, and which queue's numbers the book keeps (and forgets).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueMetricsBook, RUN_BUCKETS, WAIT_BUCKETS } from '../src/actors/queue/queue-metrics.js';
import type { DomainEvent, JobEventName, JobStatus } from '../src/actors/records.js';

const ORG = 'org-1';
const T0 = Date.UTC(2030, 0, 1);

const job = (queue: string, event: JobEventName, status: JobStatus, ms: number | null, expired = false): DomainEvent => ({
  type: 'job',
  event,
  organization_id: ORG,
  queue_name: queue,
  job_id: 'j',
  status,
  at: T0 + (ms ?? 0),
  ...(ms !== null ? { since: T0 } : {}),
  ...(expired ? { expired: true } : {}),
});

test('each committed job event counts as the node-wide series count it, per queue', () => {
  const book = new QueueMetricsBook((o, q) => `${o}/${q}`);
  book.observe([
    job('a', 'job.created', 'pending', null),
    job('a', 'job.started', 'processing', 2_000),
    job('a', 'job.completed', 'completed', 3_000),
    job('a', 'job.progress', 'processing', null),
    job('a', 'job.failed', 'scheduled', 500),
    job('a', 'job.failed', 'deadletter', 250),
    job('a', 'job.failed', 'pending', 6_000, true),
    job('a', 'job.failed', 'deadletter', 6_000, true),
    job('a', 'job.cancelled', 'cancelled', 1_000),
    // Cancelled before it ran: counted, no run observed.
    job('a', 'job.cancelled', 'cancelled', null),
    { type: 'queue', event: 'queue.paused', organization_id: ORG, queue_name: 'a', at: T0 },
    job('b', 'job.created', 'pending', null),
  ]);
  const a = book.snapshot(`${ORG}/a`)!;
  assert.deepEqual(a.events, { 'job.created': 1, 'job.started': 1, 'job.completed': 1, 'job.failed': 4, 'job.cancelled': 2 });
  assert.deepEqual(a.retries, { failed: 1, lease_expired: 1 });
  assert.deepEqual(a.dead_letters, { failed: 1, lease_expired: 1 });
  assert.equal(a.lease_expiries, 2);
  assert.equal(a.cancellations, 2);
  assert.deepEqual(a.queue_events, { 'queue.paused': 1, 'queue.resumed': 0 });
  assert.equal(a.wait!.count, 1);
  assert.equal(a.wait!.sum, 2);
  // 2 s lands in (1, 2.5].
  assert.equal(a.wait!.buckets[WAIT_BUCKETS.indexOf(2.5)], 1);
  assert.equal(a.wait!.buckets.length, WAIT_BUCKETS.length + 1);
  assert.deepEqual([a.run.completed!.count, a.run.completed!.sum], [1, 3]);
  assert.deepEqual([a.run.failed!.count, a.run.failed!.sum], [2, 0.75]);
  assert.deepEqual([a.run.lease_expired!.count, a.run.lease_expired!.sum], [2, 12]);
  assert.deepEqual([a.run.cancelled!.count, a.run.cancelled!.sum], [1, 1]);
  // A bound is inclusive (le): 0.25 s lands in the 0.25 bucket, 0.5 s in the 0.5 one.
  assert.equal(a.run.failed!.buckets[RUN_BUCKETS.indexOf(0.25)], 1);
  assert.equal(a.run.failed!.buckets[RUN_BUCKETS.indexOf(0.5)], 1);

  const b = book.snapshot(`${ORG}/b`)!;
  assert.equal(b.events['job.created'], 1);
  assert.equal(b.wait, null);
  assert.equal(book.snapshot(`${ORG}/never`), null);
});

test('beyond the highest bound, into the last bucket; a snapshot is a copy', () => {
  const book = new QueueMetricsBook((o, q) => `${o}/${q}`);
  book.observe([job('a', 'job.started', 'processing', 7_200_000)]);
  const s = book.snapshot(`${ORG}/a`)!;
  assert.equal(s.wait!.buckets[WAIT_BUCKETS.length], 1);
  assert.equal(s.wait!.buckets.slice(0, -1).reduce((x, y) => x + y, 0), 0);
  s.wait!.buckets[0] = 99;
  s.events['job.started'] = 99;
  assert.equal(book.snapshot(`${ORG}/a`)!.wait!.buckets[0], 0);
  assert.equal(book.snapshot(`${ORG}/a`)!.events['job.started'], 1);
});

test('a deleted queue and the queues of a shard that left are forgotten', () => {
  const book = new QueueMetricsBook((o, q) => `${o}/${q}`);
  book.observe([job('a', 'job.created', 'pending', null), job('b', 'job.created', 'pending', null), job('c', 'job.created', 'pending', null)]);
  assert.equal(book.size, 3);
  book.observe([{ type: 'queue.deleted', organization_id: ORG, queue_name: 'a' }]);
  assert.equal(book.snapshot(`${ORG}/a`), null);
  book.forget((key) => key.endsWith('/b'));
  assert.equal(book.snapshot(`${ORG}/b`), null);
  assert.equal(book.snapshot(`${ORG}/c`)!.events['job.created'], 1);
  assert.equal(book.size, 1);
});
