// The sending half of outgoing webhooks alone (src/io/webhooks/deliverer.ts), against a receiver on 127.0.0.1:
// attempts until one succeeds, each signed and numbered, the caller told of every failed attempt that another
// follows (and not of the last), and a stop that cuts a wait short and hands the delivery back unfinished.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ManualClock } from '../src/clock.js';
import { Deliverer } from '../src/io/webhooks/deliverer.js';

const received: http.IncomingHttpHeaders[] = [];
let plan: number[] = [];
let server: http.Server;
let url = '';
before(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push(req.headers);
      res.statusCode = plan.shift() ?? 200;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

const clock = new ManualClock(Date.UTC(2030, 0, 1));
const deliverer = (retryUnitMs: number) => new Deliverer({ clock, policy: { httpsOnly: false, blockPrivate: false }, retryUnitMs, timeoutMs: 2_000, concurrency: 4 });
const d = { id: 'd-1', event: 'job.created', body: '{"a":1}' };

test('failed attempts are retried and reported, each signed and numbered; the outcome is the last attempt', async () => {
  received.length = 0;
  plan = [500, 503, 200];
  const retried: Array<[number, number | null]> = [];
  const sender = deliverer(1);
  const run = await sender.run(d, { url, secret: 's3cret' }, 0, 5, async (attempt, last) => void retried.push([attempt, last.status]));
  await sender.stop();
  assert.deepEqual(run, { ended: true, ok: true, attempts: 3, last: { ok: true, status: 200, error: null } });
  assert.deepEqual(retried, [[1, 500], [2, 503]]);
  assert.deepEqual(received.map((h) => h['x-queue-delivery-attempt']), ['1', '2', '3']);
  const ts = received[0]!['x-queue-timestamp'];
  assert.equal(ts, String(Math.floor(clock.now() / 1000)));
  assert.equal(received[0]!['x-queue-signature'], `sha256=${createHmac('sha256', 's3cret').update(`${ts}.${d.body}`).digest('hex')}`);
});

test('the last attempt is not reported as a retry; a resumed delivery starts after the attempts done', async () => {
  received.length = 0;
  plan = [500, 500];
  const retried: number[] = [];
  const sender = deliverer(1);
  const run = await sender.run(d, { url, secret: null }, 3, 5, async (attempt) => void retried.push(attempt));
  await sender.stop();
  assert.equal(run.ended, true);
  assert.equal(run.ok, false);
  assert.equal(run.attempts, 5);
  assert.deepEqual(retried, [4]);
  assert.deepEqual(received.map((h) => h['x-queue-delivery-attempt']), ['4', '5']);
  assert.equal(received[0]!['x-queue-signature'], undefined);
});

test('a stop during the wait between attempts hands the delivery back unfinished', async () => {
  received.length = 0;
  plan = [500];
  const sender = deliverer(60_000);
  let retrying!: () => void;
  const failed = new Promise<void>((r) => (retrying = r));
  const running = sender.run(d, { url, secret: null }, 0, 5, async () => retrying());
  await failed;
  await new Promise((r) => setImmediate(r));
  const t = performance.now();
  await sender.stop();
  const run = await running;
  assert.ok(performance.now() - t < 5_000, 'the minute-long wait was cut short');
  assert.equal(run.ended, false);
  assert.equal(run.attempts, 1);
  // A run after the stop ends at once, sending nothing.
  assert.deepEqual(await sender.run(d, { url, secret: null }, 0, 5, async () => {}), { ended: false, ok: false, attempts: 0, last: { ok: false, status: null, error: null } });
  assert.equal(received.length, 1);
});
