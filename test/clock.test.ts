// Time-driven behaviour under a ManualClock shared with the actor threads: minutes of backoff, lease expiry
// and delayed jobs run in milliseconds, to the exact millisecond.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { startTestNode, type Api, type TestNode } from './helpers.js';

const MINUTE = 60_000;

describe('manual clock', () => {
  let n: TestNode;
  let api: Api;
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  before(async () => {
    n = await startTestNode({ clock });
    api = n.api;
  });
  after(() => n.stop());

  test('backoff is 1, 2, 4, 8, 16, 32, 60, 60 minutes, then dead-letter with the error history', async () => {
    const job = await api.enqueue({ queue_name: 'backoff', max_retries: 8, payload: { keep: 'me' } });
    const expected = [1, 2, 4, 8, 16, 32, 60, 60];
    for (const [i, minutes] of expected.entries()) {
      const [c] = await api.claim('backoff');
      assert.equal(c?.id, job.id, `attempt ${i + 1} is claimable`);
      const failedAt = clock.now();
      const f = await api.post(`/api/v1/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: `e${i + 1}` });
      assert.equal(f.status, 200);
      assert.equal(f.body.status, 'scheduled');
      assert.equal(f.body.retry_count, i + 1);
      assert.equal(Date.parse(f.body.scheduled_at) - failedAt, minutes * MINUTE, `retry ${i + 1} waits ${minutes} min`);
      await clock.advance(minutes * MINUTE - 1);
      assert.deepEqual(await api.claim('backoff'), [], `not before ${minutes} min`);
      await clock.advance(1);
    }
    const [last] = await api.claim('backoff');
    assert.equal(last.retry_count, 8);
    const f = await api.post(`/api/v1/jobs/${job.id}/fail`, { worker_id: 'w1', lease_id: last.lease_id, error: 'final' });
    assert.equal(f.body.status, 'deadletter');
    const dl = await api.get(`/api/v1/jobs/${job.id}`);
    assert.equal(dl.body.status, 'deadletter');
    assert.deepEqual(dl.body.payload, { keep: 'me' });
    assert.deepEqual(
      dl.body.errors.map((e: { error: string }) => e.error),
      ['e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7', 'e8', 'final'],
    );
    assert.deepEqual(
      dl.body.errors.map((e: { attempt: number }) => e.attempt),
      [1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
  });

  test('a delayed job with an idempotency key on an idle queue becomes pending when due, like one without a key', async () => {
    const at = new Date(clock.now() + 3_000).toISOString();
    const keyed = await api.enqueue({ queue_name: 'idle1', idempotency_key: 'k1', scheduled_at: at });
    const plain = await api.enqueue({ queue_name: 'idle2', scheduled_at: at });
    await clock.advance(6_000);
    for (const job of [keyed, plain]) assert.equal((await api.get(`/api/v1/jobs/${job.id}`)).body.status, 'pending', job.queue_name);
    const stats = await api.get('/api/v1/jobs/stats?queue_name=idle1');
    assert.equal(stats.body.counts.pending, 1);
    assert.equal(stats.body.counts.scheduled, 0);
  });

  test('an expired lease requeues the job at once with retry_count + 1 and fences the old lease', async () => {
    const job = await api.enqueue({ queue_name: 'expiry', max_retries: 1 });
    const [c] = await api.claim('expiry', { lease_duration_secs: 30 });
    await clock.advance(30_000 - 1);
    assert.equal((await api.get(`/api/v1/jobs/${job.id}`)).body.status, 'processing');
    await clock.advance(1);
    const requeued = await api.get(`/api/v1/jobs/${job.id}`);
    assert.equal(requeued.body.status, 'pending');
    assert.equal(requeued.body.retry_count, 1);
    assert.equal(requeued.body.last_error, 'lease expired');
    const late = await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: c.lease_id });
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'LEASE_EXPIRED');
    const hb = await api.post(`/api/v1/jobs/${job.id}/heartbeat`, { worker_id: 'w1', lease_id: c.lease_id });
    assert.equal(hb.status, 409, 'an expired lease is never revived');

    // Second expiry: retries exhausted → dead-letter.
    const [again] = await api.claim('expiry', { lease_duration_secs: 5 });
    assert.equal(again.id, job.id);
    await clock.advance(5_000);
    const dead = await api.get(`/api/v1/jobs/${job.id}`);
    assert.equal(dead.body.status, 'deadletter');
    assert.equal(dead.body.errors.length, 2);
  });

  test('a heartbeat keeps a lease alive past its first expiry', async () => {
    const job = await api.enqueue({ queue_name: 'hb-clock' });
    const [c] = await api.claim('hb-clock', { lease_duration_secs: 10 });
    await clock.advance(9_000);
    const hb = await api.post(`/api/v1/jobs/${job.id}/heartbeat`, { worker_id: 'w1', lease_id: c.lease_id });
    assert.equal(hb.status, 200);
    assert.equal(Date.parse(hb.body.lease_expires_at), clock.now() + 10_000);
    await clock.advance(9_000);
    assert.equal((await api.get(`/api/v1/jobs/${job.id}`)).body.status, 'processing');
    const done = await api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: c.lease_id });
    assert.equal(done.status, 200);
  });

  test('a delayed job becomes claimable exactly at scheduled_at', async () => {
    const at = clock.now() + 5 * MINUTE;
    const job = await api.enqueue({ queue_name: 'delayed', scheduled_at: new Date(at).toISOString() });
    assert.equal(job.status, 'scheduled');
    await clock.advance(5 * MINUTE - 1);
    assert.deepEqual(await api.claim('delayed'), []);
    await clock.advance(1);
    const [c] = await api.claim('delayed');
    assert.equal(c?.id, job.id);
  });

  test('a scheduled job is promoted by the timer without any claim', async () => {
    const job = await api.enqueue({ queue_name: 'promote', scheduled_at: new Date(clock.now() + MINUTE).toISOString() });
    await clock.advance(MINUTE);
    assert.equal((await api.get(`/api/v1/jobs/${job.id}`)).body.status, 'pending');
  });
});
