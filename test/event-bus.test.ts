// The node's event bus: per-organization listeners, listeners of one or every organization with an interest filter
// asked before an envelope is built, and one envelope shape for all.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { EventBus, type SluiceEvent } from '../src/app/events.js';

test('an organization hears only its own events; a filtered listener of every organization only what it wants', () => {
  const bus = new EventBus(new ManualClock(Date.UTC(2030, 0, 1)));
  const a: SluiceEvent[] = [];
  const every: SluiceEvent[] = [];
  const asked: string[] = [];
  const offA = bus.subscribe('org-a', (e) => a.push(e));
  bus.subscribe(null, (e) => every.push(e), (org, event) => {
    asked.push(`${org} ${event}`);
    return event === 'job.completed';
  });
  bus.publish('org-a', 'job.created', { job_id: 'j1' });
  bus.publish('org-b', 'job.created', { job_id: 'j2' });
  bus.publish('org-b', 'job.completed', { job_id: 'j2' });
  assert.deepEqual(a.map((e) => e.data.job_id), ['j1']);
  assert.deepEqual(every.map((e) => `${e.organization_id} ${e.event}`), ['org-b job.completed']);
  assert.deepEqual(asked, ['org-a job.created', 'org-b job.created', 'org-b job.completed']);
  const [e] = a;
  assert.deepEqual(Object.keys(e!).sort(), ['created_at', 'data', 'event', 'id', 'organization_id']);
  assert.equal(e!.created_at, '2030-01-01T00:00:00.000Z');
  offA();
  assert.equal(bus.listeners('org-a'), 0);
  bus.publish('org-a', 'job.created', { job_id: 'j3' });
  assert.equal(a.length, 1);
});

test("a filtered listener of one organization hears only what it wants, from this node and from its peers", () => {
  const bus = new EventBus(new ManualClock(Date.UTC(2030, 0, 1)));
  const cancels: string[] = [];
  const all: string[] = [];
  const asked: string[] = [];
  const off = bus.subscribe('org-a', (e) => cancels.push(`${e.event} ${e.data.job_id}`), (org, event) => {
    asked.push(`${org} ${event}`);
    return event === 'job.cancelled';
  });
  bus.publish('org-a', 'job.created', { job_id: 'j1' });
  bus.publish('org-a', 'job.cancelled', { job_id: 'j1' });
  bus.publish('org-b', 'job.cancelled', { job_id: 'j2' });
  const peer = (event: string, job: string): SluiceEvent => ({ id: `p-${job}`, event, created_at: '2030-01-01T00:00:00.000Z', organization_id: 'org-a', data: { job_id: job } });
  bus.fromPeer(peer('job.completed', 'j3'));
  bus.fromPeer(peer('job.cancelled', 'j4'));
  assert.deepEqual(cancels, ['job.cancelled j1', 'job.cancelled j4']);
  assert.deepEqual(asked, ['org-a job.created', 'org-a job.cancelled', 'org-a job.completed', 'org-a job.cancelled']);
  // An unfiltered listener of the same organization still hears everything; both count as its listeners.
  bus.subscribe('org-a', (e) => all.push(e.event));
  bus.publish('org-a', 'job.started', { job_id: 'j5' });
  assert.deepEqual(all, ['job.started']);
  assert.equal(bus.listeners('org-a'), 2);
  off();
  assert.equal(bus.listeners('org-a'), 1);
});

test('a listener that throws does not keep the event from the others', () => {
  const errors: unknown[] = [];
  const bus = new EventBus(new ManualClock(), (err) => errors.push(err));
  const heard: string[] = [];
  bus.subscribe('org', () => {
    throw new Error('broken listener');
  });
  bus.subscribe('org', (e) => heard.push(e.event));
  bus.publish('org', 'queue.paused', { queue_name: 'q' });
  assert.deepEqual(heard, ['queue.paused']);
  assert.equal(errors.length, 1);
});
