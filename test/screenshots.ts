// `make screenshots` (node --import tsx test/screenshots.ts <dir>): starts a node on a fresh embedded store,
// gives it some work through the API (queues in every state, a retried job, dead letters, workers, a
// schedule with runs, a workflow half way through, a webhook endpoint with deliveries), signs in to the
// dashboard in chromium and saves a PNG of each main page into <dir> (docs/img for the README).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { browserMissing, launchBrowser } from './browser.js';
import { sleep, startTestNode, type Api } from './helpers.js';

const out = path.resolve(process.argv[2] ?? 'docs/img');
const missing = browserMissing();
if (missing) throw new Error(missing);

// Retries wait min(2^n, 60) milliseconds instead of minutes, so a failing job can be run to its end here.
const n = await startTestNode({ env: { RETRY_UNIT_MS: '1' } });
const api = n.api;
const receiver = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200).end('ok'));
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/sluice`;

async function work(queue: string, fn: (job: any) => Promise<unknown>): Promise<void> {
  const [job] = await api.claim(queue, { worker_id: 'worker-a' });
  if (!job) throw new Error(`nothing to claim in ${queue}`);
  await fn(job);
}
const complete = (job: any, result: unknown) => api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'worker-a', lease_id: job.lease_id, result });
const fail = (job: any, error: string) => api.post(`/api/v1/jobs/${job.id}/fail`, { worker_id: 'worker-a', lease_id: job.lease_id, error });

async function seed(api: Api): Promise<{ jobId: string; scheduleId: string; workflowId: string; webhookId: string }> {
  const hook = await api.post('/api/v1/outgoing-webhooks', { name: 'ops-alerts', url: hookUrl, events: ['job.completed', 'job.failed'], secret: 'whsec_demo_secret' });
  await api.post(`/api/v1/outgoing-webhooks/${hook.body.id}/test`);

  for (const [host, queue] of [['mail-1.internal', 'emails'], ['mail-2.internal', 'emails'], ['render-1.internal', 'thumbnails']] as const) {
    await api.post('/api/v1/workers/register', { worker_id: host.split('.')[0], queue_name: queue, hostname: host, max_concurrency: 8 });
  }

  // emails: a steady stream, some done, some in flight, some waiting.
  for (let i = 0; i < 14; i++) {
    await api.enqueue({ queue_name: 'emails', payload: { to: `user${i}@example.com`, template: i % 3 ? 'receipt' : 'welcome' }, tags: { env: 'prod', template: i % 3 ? 'receipt' : 'welcome' }, priority: i % 5 === 0 ? 10 : 0 });
  }
  for (let i = 0; i < 7; i++) await work('emails', (j) => complete(j, { message_id: `<${j.id.slice(-8)}@mail.example.com>` }));
  for (let i = 0; i < 2; i++) await work('emails', async () => {});

  // thumbnails: one job fails twice, then succeeds: its page shows the error history.
  const shown = await api.enqueue({ queue_name: 'thumbnails', payload: { image: 's3://uploads/2030/cat.jpg', sizes: [64, 256, 1024] }, max_retries: 5, tags: { env: 'prod' } });
  for (const error of ['ImageMagick: timeout after 30 s', 'S3 GetObject: 503 SlowDown']) {
    await work('thumbnails', (j) => fail(j, error));
    await sleep(10);
  }
  await work('thumbnails', (j) => complete(j, { variants: 3, bytes: 48_210 }));
  for (let i = 0; i < 5; i++) await api.enqueue({ queue_name: 'thumbnails', payload: { image: `s3://uploads/2030/img${i}.jpg` } });
  await work('thumbnails', async () => {});

  // billing: dead letters.
  for (const [customer, error] of [['cus_1042', 'card_declined: insufficient funds'], ['cus_2210', 'Stripe API: 401 invalid API key'], ['cus_3318', 'card_declined: expired card']] as const) {
    await api.enqueue({ queue_name: 'billing', payload: { customer, amount_cents: 4900 }, max_retries: 0 });
    await work('billing', (j) => fail(j, error));
  }
  await api.enqueue({ queue_name: 'billing', payload: { customer: 'cus_5120', amount_cents: 1900 } });

  // reports: paused, with a backlog; a schedule feeds it.
  for (let i = 0; i < 3; i++) await api.enqueue({ queue_name: 'reports', payload: { report: 'daily-revenue', day: `2030-01-0${i + 1}` } });
  await api.post('/api/v1/queues/reports/pause', { reason: 'warehouse migration' });
  const schedule = await api.post('/api/v1/schedules', { name: 'daily-revenue', cron_expression: '0 0 6 * * *', timezone: 'Europe/Paris', queue_name: 'reports', payload_template: { report: 'daily-revenue' } });
  await api.post('/api/v1/schedules', { name: 'weekly-digest', cron_expression: '0 30 8 * * 1', timezone: 'America/New_York', queue_name: 'emails', payload_template: { template: 'digest' } });
  for (let i = 0; i < 3; i++) await api.post(`/api/v1/schedules/${schedule.body.id}/trigger`);

  // A workflow half way: fetch done, one branch done, the other running, the join and its child blocked.
  const flow = await api.post('/api/v1/workflows', {
    name: 'publish-article',
    jobs: [
      { name: 'fetch-draft', queue_name: 'media', payload: { article: 981 } },
      { name: 'resize-images', queue_name: 'media', payload: {}, depends_on: ['fetch-draft'] },
      { name: 'virus-scan', queue_name: 'media', payload: {}, depends_on: ['fetch-draft'] },
      { name: 'render-html', queue_name: 'media', payload: {}, depends_on: ['fetch-draft'] },
      { name: 'publish', queue_name: 'publishing', payload: {}, depends_on: ['resize-images', 'virus-scan', 'render-html'] },
      { name: 'notify-subscribers', queue_name: 'publishing', payload: {}, depends_on: ['publish'] },
      { name: 'purge-cdn', queue_name: 'publishing', payload: {}, depends_on: ['publish'] },
    ],
  });
  await work('media', (j) => complete(j, { ok: true }));
  await n.node.workflows.idle();
  await sleep(300);
  await work('media', (j) => complete(j, { ok: true }));
  await n.node.workflows.idle();
  await work('media', async () => {});
  await n.node.workflows.idle();
  return { jobId: shown.id, scheduleId: schedule.body.id, workflowId: flow.body.id, webhookId: hook.body.id };
}

async function shoot(page: Page, hash: string, ready: string, name: string): Promise<void> {
  await page.evaluate((h) => void ((globalThis as unknown as { location: { hash: string } }).location.hash = h), hash);
  await page.waitForSelector(ready);
  // Stats and badges settle after the first reads.
  await sleep(1200);
  await page.screenshot({ path: path.join(out, `${name}.png`) });
  console.log(`${name}.png`);
}

const ids = await seed(api);
const browser = await launchBrowser();
try {
  const page = await browser.newPage();
  await page.goto(`${n.node.url}/`);
  await page.screenshot({ path: path.join(out, 'signin.png') });
  await page.fill('#api-key', api.key);
  await page.click('button[type=submit]');
  await shoot(page, '#/', '[data-queue="billing"]', 'overview');
  await shoot(page, '#/jobs', '[data-testid=jobs-table]', 'jobs');
  await shoot(page, `#/jobs/${ids.jobId}`, '[data-testid=job-errors]', 'job');
  await shoot(page, '#/dlq', '[data-testid=dlq-table]', 'dlq');
  await shoot(page, '#/workers', 'text=mail-1', 'workers');
  await shoot(page, `#/schedules/${ids.scheduleId}`, 'text=Run history', 'schedule');
  await shoot(page, `#/workflows/${ids.workflowId}`, '[data-testid=workflow-graph]', 'workflow');
  await shoot(page, `#/webhooks/${ids.webhookId}`, '[data-testid=deliveries]', 'webhook');
} finally {
  await browser.close();
  receiver.close();
  await n.stop();
}
