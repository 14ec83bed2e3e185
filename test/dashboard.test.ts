// The dashboard in a real browser (Debian's chromium through playwright-core) against a real node: sign in
// with a key, watch jobs change state live as a worker moves them through the API, retry and purge dead
// letters from the DLQ page, a read-only key sees no write buttons, another organization's job is "not
// found", and the session lives in the tab's memory only.
//
// It runs on PostgreSQL only: what it covers is the page and the streams, which do not depend on the store,
// and a browser run costs more than most test files.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { ManualClock } from '../src/clock.js';
import { browserMissing, launchBrowser, type BrowserSession } from './browser.js';
import { insertKey } from './http-assert.js';
import { ROOT, STORE, startTestNode, type TestNode } from './helpers.js';

// The page's globals as the callbacks below use them: those callbacks run in the browser, and this project
// compiles without the DOM library.
declare const document: { querySelector(selector: string): { textContent: string | null } | null; cookie: string };
declare const location: { hash: string };
declare const window: Record<string, unknown>;
declare const localStorage: { length: number };
declare const sessionStorage: { length: number };

const skip = STORE !== 'pg' ? 'the browser test runs on PostgreSQL only (SLUICE_TEST_STORE=pg)' : browserMissing();
if (skip) console.log(`# dashboard: skipped: ${skip}`);

/** Buttons that change something; a read-only key must see none of them. */
const WRITE_BUTTON = /^(Pause|Resume|Retry|Purge|Cancel|Trigger now|Send test)/;

describe('dashboard', { skip: skip ?? false }, () => {
  let n: TestNode;
  /** Token lifetimes follow the node's clock: the refresh test moves it past the access token's expiry. */
  const clock = new ManualClock(Date.now());
  let browser: BrowserSession;
  let page: Page;
  /** Content-Security-Policy and other console errors seen by any tab: the page must cause none. */
  const consoleErrors: string[] = [];

  const watch = (p: Page) => {
    p.setDefaultTimeout(10_000);
    p.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    p.on('pageerror', (e) => consoleErrors.push(`uncaught: ${e.message}`));
    return p;
  };
  const go = (p: Page, hash: string) => p.evaluate((h) => void (location.hash = h), hash);
  const signIn = async (p: Page, key: string) => {
    await p.goto(`${n.node.url}/`);
    await p.fill('#api-key', key);
    await p.click('button[type=submit]');
    await p.waitForSelector('.topbar');
  };
  const rowStatus = (p: Page, id: string, status: string) =>
    p.waitForFunction(
      ([id, status]) => document.querySelector(`tr[data-job="${id}"] [data-testid=job-row-status]`)?.textContent?.trim() === status,
      [id, status] as const,
    );
  const jobStatus = (p: Page, status: string) =>
    p.waitForFunction((s) => document.querySelector('[data-testid=job-status]')?.textContent?.trim() === s, status);

  before(async () => {
    // The page is built from the lock file's packages; a no-op when ui/dist is current.
    execFileSync('make', ['-s', 'ui'], { cwd: ROOT, stdio: 'inherit' });
    n = await startTestNode({ clock });
    browser = await launchBrowser();
    page = watch(await browser.newPage());
  });
  after(async () => {
    await browser?.close();
    await n?.stop();
  });

  test('sign in; a job enqueued through the API appears and changes state live, on the list and on its page', async () => {
    await signIn(page, n.api.key);
    // Marks this document: if anything below reloaded the page, the mark would be gone.
    await page.evaluate(() => void (window.sluiceMark = 1));
    await page.waitForFunction(() => document.querySelector('[data-testid=live-status]')?.textContent === 'live');

    await go(page, '#/jobs');
    await page.waitForSelector('text=No jobs match.');
    const job = await n.api.enqueue({ queue_name: 'ui-live', payload: { n: 1 } });
    await rowStatus(page, job.id, 'pending');
    const [claimed] = await n.api.claim('ui-live');
    assert.equal(claimed.id, job.id);
    await rowStatus(page, job.id, 'processing');
    const done = await n.api.post(`/api/v1/jobs/${job.id}/complete`, { worker_id: 'w1', lease_id: claimed.lease_id, result: { ok: true } });
    assert.equal(done.status, 200);
    await rowStatus(page, job.id, 'completed');

    // The job page follows one job over its own stream, with its error history.
    const second = await n.api.enqueue({ queue_name: 'ui-live', payload: { n: 2 }, max_retries: 0 });
    await page.click(`tr[data-job="${second.id}"] a[href="#/jobs/${second.id}"]`);
    await jobStatus(page, 'pending');
    const [lease] = await n.api.claim('ui-live');
    await jobStatus(page, 'processing');
    await n.api.post(`/api/v1/jobs/${second.id}/fail`, { worker_id: 'w1', lease_id: lease.lease_id, error: 'SMTP timeout' });
    await jobStatus(page, 'dead letter');
    await page.waitForSelector('[data-testid=job-errors] >> text=SMTP timeout');

    assert.equal(await page.evaluate(() => window.sluiceMark), 1, 'the page was not reloaded');
  });

  test('dead letters: one is retried from the DLQ page, a selection is purged', async () => {
    const dead: string[] = [];
    for (let i = 0; i < 3; i++) {
      const j = await n.api.enqueue({ queue_name: 'ui-dlq', payload: { i }, max_retries: 0 });
      const [c] = await n.api.claim('ui-dlq');
      await n.api.post(`/api/v1/jobs/${c.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: `boom ${i}` });
      dead.push(j.id);
    }
    await go(page, '#/dlq?queue=ui-dlq');
    for (const id of dead) await page.waitForSelector(`[data-testid=dlq-table] tr[data-job="${id}"]`);

    await page.click(`tr[data-job="${dead[0]}"] [data-testid=retry-one]`);
    await page.waitForSelector(`tr[data-job="${dead[0]}"]`, { state: 'detached' });
    assert.equal((await n.api.get(`/api/v1/jobs/${dead[0]}`)).body.status, 'pending');

    page.once('dialog', (d) => void d.accept());
    await page.check(`tr[data-job="${dead[1]}"] input[type=checkbox]`);
    await page.check(`tr[data-job="${dead[2]}"] input[type=checkbox]`);
    await page.click('button:has-text("Purge 2 selected")');
    await page.waitForSelector('[data-testid=dlq-empty]');
    assert.equal((await n.api.get(`/api/v1/jobs/${dead[1]}`)).status, 404);
    assert.equal((await n.api.get('/api/v1/jobs/dlq?queue_name=ui-dlq')).body.length, 0);
  });

  test('the job page says why a job is not running, and shows the progress its worker reported', async () => {
    const waiting = await n.api.enqueue({ queue_name: 'ui-why', payload: {} });
    await n.api.post('/api/v1/queues/ui-why/pause', { reason: 'deploy' });
    await go(page, `#/jobs/${waiting.id}`);
    await page.waitForSelector("[data-testid=job-explain] >> text=The queue 'ui-why' is paused");
    await n.api.post('/api/v1/queues/ui-why/resume');
    const [c] = await n.api.claim('ui-why');
    await jobStatus(page, 'processing');
    await n.api.post(`/api/v1/jobs/${waiting.id}/progress`, { worker_id: 'w1', lease_id: c.lease_id, progress: 60, message: 'copying' });
    await go(page, '#/jobs');
    await go(page, `#/jobs/${waiting.id}`);
    await page.waitForFunction(() => document.querySelector('[data-testid=job-progress]')?.textContent === '60% — copying');
    assert.equal(await page.locator('[data-testid=job-explain]').count(), 0, 'a running job has no reasons panel');
  });

  test("another organization's job id shows not found", async () => {
    const other = await insertKey(n);
    const theirs = await n.api.as(other.key).enqueue({ queue_name: 'secret', payload: { card: '4111 1111 1111 1111' } });
    await go(page, `#/jobs/${theirs.id}`);
    const shown = await page.waitForSelector('[data-testid=not-found]');
    assert.match((await shown.textContent()) ?? '', /Job not found/);
    assert.doesNotMatch((await page.textContent('main')) ?? '', /4111|secret/);
  });

  test('a read-only key sees no write buttons', async () => {
    const made = await n.api.post('/api/v1/api-keys', { name: 'viewer', permissions: ['jobs:read', 'queues:read', 'dlq:read'] });
    assert.equal(made.status, 201);
    const j = await n.api.enqueue({ queue_name: 'ui-ro', payload: {}, max_retries: 0 });
    const [c] = await n.api.claim('ui-ro');
    await n.api.post(`/api/v1/jobs/${c.id}/fail`, { worker_id: 'w1', lease_id: c.lease_id, error: 'nope' });
    const schedule = await n.api.post('/api/v1/schedules', { name: 'nightly', queue_name: 'ui-ro', cron_expression: '0 0 3 * * *' });
    assert.equal(schedule.status, 201);

    const viewer = watch(await browser.newPage());
    await signIn(viewer, made.body.key);
    const noWriteButtons = async (where: string) => {
      const names = await viewer.locator('main button').allTextContents();
      assert.deepEqual(names.filter((t) => WRITE_BUTTON.test(t.trim())), [], `write buttons on ${where}`);
      assert.equal(await viewer.locator('main input[type=checkbox]').count(), 0, `selection boxes on ${where}`);
    };
    await viewer.waitForSelector('[data-queue="ui-ro"]');
    await noWriteButtons('the overview');
    await go(viewer, '#/dlq');
    await viewer.waitForSelector(`tr[data-job="${j.id}"]`);
    await noWriteButtons('the DLQ page');
    await go(viewer, `#/jobs/${j.id}`);
    await jobStatus(viewer, 'dead letter');
    await noWriteButtons('a dead job');
    await go(viewer, '#/schedules');
    await viewer.waitForSelector('text=nightly');
    await noWriteButtons('schedules');
    assert.equal(await viewer.locator('.topbar nav >> text=Webhooks').count(), 0, 'webhooks need *');
    // The same pages offer the actions to the full key (the buttons exist; their absence above is the permission).
    await go(page, '#/schedules');
    await page.waitForSelector('button:has-text("Trigger now")');
    await viewer.close();
  });

  test('an access token that expired is refreshed (POST /auth/refresh) and the page goes on', async () => {
    const refreshed = page.waitForRequest((r) => r.url().endsWith('/api/v1/auth/refresh') && r.method() === 'POST');
    await clock.advance(3601_000);
    await go(page, '#/workers');
    await refreshed;
    await page.waitForSelector('main h1:has-text("Workers")');
    await page.waitForSelector('text=No registered workers');
    assert.equal(await page.locator('#api-key').count(), 0, 'still signed in');
  });

  test('the session is in memory only: no storage, no cookie, and a reload signs out', async () => {
    const stored = await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie }));
    assert.deepEqual(stored, { local: 0, session: 0, cookie: '' });
    await page.reload();
    await page.waitForSelector('#api-key');
    // A 404 answered to a fetch is logged by the browser as "Failed to load resource"; anything else is not ours to have.
    assert.deepEqual(consoleErrors.filter((m) => !m.startsWith('Failed to load resource')), [], 'no CSP violation or script error');
  });
});
