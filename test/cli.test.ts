// The `sluice` CLI (clients/typescript, the built bin in dist/) run as a child process against a real node:
// every command, human output and --json, NDJSON from a file and from stdin, confirmations, profiles, and the
// exit codes scripts rely on (0 ok, 1 refused, 2 usage, 3 auth, 4 not found, 5 limited, 6 unreachable).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SluiceClient } from '../clients/typescript/src/index.js';
import { CLIENT_SUITE_SKIP, newest, freePort, ROOT, sleep, startTestNode, type TestNode } from './helpers.js';

const SDK = path.join(ROOT, 'clients/typescript');
const BIN = path.join(SDK, 'dist/cli/main.js');
const ADMIN = 'admin-key-for-the-cli-tests-0123456789';

/** Builds the package when dist/ is missing or older than a source file (make builds it before the suite). */
function ensureBuilt(): void {
  if (fs.existsSync(BIN) && fs.statSync(BIN).mtimeMs >= newest(path.join(SDK, 'src'))) return;
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', SDK], { stdio: 'inherit' });
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let n: TestNode;
let key: string;
let sdk: SluiceClient;
let home: string;

/** Runs `sluice …args` with the node's URL and key in the environment (unless env overrides them). */
function sluice(args: string[], opts: { env?: Record<string, string | undefined>; input?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string | undefined> = { PATH: process.env.PATH, HOME: home, SLUICE_URL: n.node.url, SLUICE_API_KEY: key, ...opts.env };
    for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
    const child = spawn(process.execPath, [BIN, ...args], { env: env as NodeJS.ProcessEnv, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b) => (stdout += b));
    child.stderr.on('data', (b) => (stderr += b));
    child.on('error', reject);
    // 'close', not 'exit': only then has all of the output been read.
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

async function ok(args: string[], opts?: Parameters<typeof sluice>[1]): Promise<Run> {
  const r = await sluice(args, opts);
  assert.equal(r.code, 0, `sluice ${args.join(' ')} → ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r;
}

async function okJson<T = any>(args: string[], opts?: Parameters<typeof sluice>[1]): Promise<T> {
  return JSON.parse((await ok([...args, '--json'], opts)).stdout) as T;
}

async function fails(args: string[], code: number, stderr?: RegExp, opts?: Parameters<typeof sluice>[1]): Promise<Run> {
  const r = await sluice(args, opts);
  assert.equal(r.code, code, `sluice ${args.join(' ')} → ${r.code}, expected ${code}\n${r.stdout}\n${r.stderr}`);
  if (stderr) assert.match(r.stderr, stderr);
  return r;
}

before(async () => {
  if (CLIENT_SUITE_SKIP) return;
  ensureBuilt();
  n = await startTestNode({ env: { ADMIN_API_KEY: ADMIN } });
  key = n.node.bootstrapKey!;
  sdk = new SluiceClient({ url: n.node.url, apiKey: key, adminKey: ADMIN });
  home = fs.mkdtempSync(path.join(ROOT, '.tmp', 'cli-home-'));
});
after(async () => {
  if (CLIENT_SUITE_SKIP) return;
  await n.stop();
  fs.rmSync(home, { recursive: true, force: true });
});

// The tests run side by side (each CLI run is a process that mostly waits); each uses its own queues.
describe('sluice CLI', { concurrency: true, skip: CLIENT_SUITE_SKIP }, () => {
  test('enqueue one job: flags, --json, the idempotency key, human output', async () => {
    const job = await okJson(['enqueue', 'cli-emails', '{"to":"ada@example.com"}', '--priority', '10', '--idempotency-key', 'welcome-ada', '--tag', 'team=growth', '--tag', 'vip']);
    assert.equal(job.created, true);
    assert.equal(job.priority, 10);
    assert.deepEqual(job.payload, { to: 'ada@example.com' });
    assert.deepEqual(job.tags, { team: 'growth', vip: '' });
    const again = await ok(['enqueue', 'cli-emails', '--payload', '{"to":"ada@example.com"}', '--idempotency-key', 'welcome-ada']);
    assert.match(again.stdout, new RegExp(`^exists\\s+${job.id}`));
    const delayed = await okJson(['enqueue', 'cli-emails', '--delay', '1h', '--max-retries', '0', '--timeout', '60']);
    assert.equal(delayed.status, 'scheduled');
    assert.equal(delayed.max_retries, 0);
    await fails(['enqueue', 'cli-emails', '[1,2]'], 2, /must be a JSON object/);
    await fails(['enqueue', 'cli-emails', '{}', '--priority', 'high'], 2, /--priority must be an integer/);
    await fails(['enqueue', 'cli-emails', '{}', '--priority', '100', '--delay', 'soon'], 2, /duration/);
    await fails(['enqueue', '-bad-', '{}'], 2, /Unknown option|usage/);
    await fails(['enqueue', '.bad', '{}'], 1, /VALIDATION_ERROR/);
  });

  test('enqueue NDJSON from a file (progress bar, refused lines reported, exit 1) and from stdin', async () => {
    const file = path.join(home, 'jobs.ndjson');
    const lines = Array.from({ length: 250 }, (_, i) => JSON.stringify({ payload: { i }, idempotency_key: `bulk-${i}` }));
    lines[10] = '{not json';
    lines[20] = JSON.stringify({ payload: { i: 20 }, priority: 1000 });
    lines.splice(30, 0, '');
    fs.writeFileSync(file, lines.join('\n') + '\n');
    const r = await sluice(['enqueue', 'cli-bulk', '--file', file, '--json', '--progress']);
    assert.equal(r.code, 1, r.stderr);
    const summary = JSON.parse(r.stdout);
    assert.equal(summary.created, 248);
    assert.equal(summary.failed, 2);
    assert.deepEqual(summary.failures.map((f: any) => [f.line, f.code]), [[11, 'BAD_JSON'], [21, 'VALIDATION_ERROR']]);
    assert.equal(summary.jobs.length, 248);
    assert.match(r.stderr, /\renqueue \[#*-*\] \d+\/\d+ \d+%/);
    assert.equal((await sdk.jobs.stats({ queue_name: 'cli-bulk' })).total, 248);

    // The same file again: every job exists already.
    const again = await sluice(['enqueue', 'cli-bulk', '-f', file]);
    assert.equal(again.code, 1);
    assert.match(again.stdout, /enqueued 0, 248 existed already, 2 failed/);
    assert.match(again.stderr, /^line 11: BAD_JSON/m);
    assert.doesNotMatch(again.stderr, /\r/, 'no bar when stderr is not a terminal');

    const piped = await okJson(['enqueue'], { input: '{"queue_name":"cli-stdin","payload":{"a":1}}\n{"queue_name":"cli-stdin","payload":{"a":2}}\n' });
    assert.equal(piped.created, 2);
    await fails(['enqueue', 'cli-stdin', '--file', '-'], 2, /nothing to enqueue/, { input: '' });
    assert.equal((await okJson(['enqueue', 'cli-stdin'], { input: '{"queue_name":"x","payload":{}}\n' })).queue_name, 'cli-stdin', 'a queue alone is one job: stdin is not read');
    await fails(['enqueue'], 1, /no queue_name/, { input: '{"payload":{}}\n' });
  });

  test('jobs get, list, cancel, retry', async () => {
    const a = await sdk.jobs.enqueue({ queue_name: 'cli-jobs', payload: { n: 1 }, tags: { k: 'v' } });
    const b = await sdk.jobs.enqueue({ queue_name: 'cli-jobs', payload: { n: 2 } });
    const shown = await ok(['jobs', 'get', a.id]);
    assert.match(shown.stdout, new RegExp(`^id\\s+${a.id}$`, 'm'));
    assert.match(shown.stdout, /^payload\s+\{"n":1\}$/m);
    assert.equal((await okJson(['jobs', 'get', a.id])).id, a.id);

    const listed = await okJson<any[]>(['jobs', 'list', '--queue', 'cli-jobs']);
    assert.deepEqual(listed.map((j) => j.id), [b.id, a.id]);
    assert.deepEqual((await okJson<any[]>(['jobs', 'list', '-q', 'cli-jobs', '--tag', 'k:v'])).map((j) => j.id), [a.id]);
    const human = await ok(['jobs', 'list', '--queue', 'cli-jobs', '--limit', '1']);
    assert.match(human.stdout, /^ID\s+QUEUE\s+STATUS/);
    assert.equal(human.stdout.trim().split('\n').length, 2);
    assert.match(human.stderr, /more results/);
    await fails(['jobs', 'list', '--status', 'done'], 2, /--status must be one of/);

    const cancelled = await okJson<any[]>(['jobs', 'cancel', a.id, b.id]);
    assert.deepEqual(cancelled.map((c) => c.status), ['cancelled', 'cancelled']);
    assert.match((await ok(['jobs', 'retry', a.id])).stdout, new RegExp(`retried ${a.id}\\s+status=pending`));
    await fails(['jobs', 'cancel', b.id], 1, /JOB_NOT_LIVE/);
    await fails(['jobs', 'get', '01a0f000-0000-7000-8000-000000000000'], 4, /NOT_FOUND/);
    const asJson = await fails(['jobs', 'get', 'nope', '--json'], 4);
    assert.equal(JSON.parse(asJson.stderr).error.code, 'NOT_FOUND');
    await fails(['jobs', 'get'], 2, /usage: sluice jobs get <id>/);
  });

  test('jobs explain', async () => {
    const job = await sdk.jobs.enqueue({ queue_name: 'cli-explain', payload: {} });
    await sdk.queues.pause('cli-explain', 'maintenance');
    const shown = await ok(['jobs', 'explain', job.id]);
    assert.match(shown.stdout, new RegExp(`^${job.id}\\s+pending in cli-explain$`, 'm'));
    assert.match(shown.stdout, /^- queue_paused: The queue 'cli-explain' is paused$/m);
    const asJson = await okJson<any>(['jobs', 'explain', job.id]);
    assert.equal(asJson.reasons[0].paused_reason, 'maintenance');
    await fails(['jobs', 'explain'], 2, /usage: sluice jobs explain <id>/);
  });

  test('queues list, stats, pause, resume', async () => {
    await sdk.jobs.enqueue({ queue_name: 'cli-queue', payload: {} });
    const queues = await okJson<any[]>(['queues', 'list', '--all']);
    assert.ok(queues.some((q) => q.name === 'cli-queue'));
    assert.match((await ok(['queues', 'list'])).stdout, /^NAME\s+PAUSED\s+PENDING/);
    assert.equal((await okJson(['queues', 'stats', 'cli-queue'])).pending, 1);
    assert.match((await ok(['queues', 'stats', 'cli-queue'])).stdout, /^pending\s+1$/m);
    assert.equal((await okJson(['queues', 'pause', 'cli-queue', '--reason', 'deploy'])).paused_reason, 'deploy');
    assert.match((await ok(['queues', 'resume', 'cli-queue'])).stdout, /resumed cli-queue/);
    await fails(['queues', 'stats', 'no-such-queue'], 4, /NOT_FOUND/);
  });

  test('dlq list, retry and purge: confirmation, --yes, progress', async () => {
    const dead = async (count: number) => {
      for (let i = 0; i < count; i++) await sdk.jobs.enqueue({ queue_name: 'cli-dlq', payload: { i }, max_retries: 0 });
      for (const j of await sdk.jobs.claim({ queue_name: 'cli-dlq', worker_id: 'cli-w', limit: count })) {
        await sdk.jobs.fail(j.id, { worker_id: 'cli-w', lease_id: j.lease_id!, error: 'mailbox full' });
      }
    };
    await dead(3);
    const listed = await okJson<any[]>(['dlq', 'list', '--queue', 'cli-dlq']);
    assert.equal(listed.length, 3);
    assert.match((await ok(['dlq', 'list', '-q', 'cli-dlq'])).stdout, /mailbox full/);

    await fails(['dlq', 'retry', '--queue', 'cli-dlq'], 2, /pass --yes/);
    await fails(['dlq', 'retry'], 2, /--queue <name>, or --all/);
    const retried = await okJson(['dlq', 'retry', '--queue', 'cli-dlq', '--yes']);
    assert.equal(retried.retried, 3);
    assert.equal((await sdk.jobs.stats({ queue_name: 'cli-dlq' })).counts.pending, 3);
    for (const j of await sdk.jobs.claim({ queue_name: 'cli-dlq', worker_id: 'cli-w', limit: 3 })) {
      await sdk.jobs.fail(j.id, { worker_id: 'cli-w', lease_id: j.lease_id!, error: 'again' });
    }
    const one = listed[0].id as string;
    assert.match((await ok(['dlq', 'retry', one, '-y'])).stdout, /retried 1/);
    await fails(['dlq', 'purge', '--queue', 'cli-dlq'], 2, /pass --yes/);
    assert.equal((await okJson(['dlq', 'purge', '--queue', 'cli-dlq', '--older-than', '1h', '--yes'])).purged, 0, 'none is an hour old');
    const purged = await sluice(['dlq', 'purge', '--queue', 'cli-dlq', '--yes', '--progress']);
    assert.equal(purged.code, 0, purged.stderr);
    assert.match(purged.stdout, /purged 2/);
    assert.match(purged.stderr, /\rpurge \[/);
    assert.deepEqual(await okJson(['dlq', 'list', '--queue', 'cli-dlq']), []);
  });

  test('workers list, schedules list and trigger', async () => {
    await sdk.workers.register({ worker_id: 'cli-worker', queue_name: 'cli-jobs', hostname: 'box-1' });
    const workers = await okJson<any[]>(['workers', 'list']);
    assert.ok(workers.some((w) => w.id === 'cli-worker'));
    assert.match((await ok(['workers', 'list'])).stdout, /cli-worker\s+cli-jobs\s+box-1/);
    const s = await sdk.schedules.create({ name: 'cli-nightly', cron_expression: '0 0 4 * * *', queue_name: 'cli-cron', payload_template: { x: 1 } });
    assert.ok((await okJson<any[]>(['schedules', 'list'])).some((x) => x.id === s.id));
    assert.match((await ok(['schedules', 'list'])).stdout, /cli-nightly\s+0 0 4 \* \* \*/);
    const run = await okJson(['schedules', 'trigger', s.id]);
    assert.deepEqual(run.job.payload, { x: 1 });
    assert.match((await ok(['schedules', 'trigger', s.id])).stdout, /^triggered .*: job .* in cli-cron/);
    await fails(['schedules', 'trigger', '01a0f000-0000-7000-8000-000000000000'], 4);
  });

  test('tail prints live events, filtered by queue and event, and stops after --count', async () => {
    const child = spawn(process.execPath, [BIN, 'tail', '--queue', 'cli-tail', '--event', 'job.created', '--count', '2', '--json'], {
      env: { PATH: process.env.PATH, HOME: home, SLUICE_URL: n.node.url, SLUICE_API_KEY: key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b) => (stdout += b));
    child.stderr.on('data', (b) => (stderr += b));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    try {
      for (let i = 0; !stderr.includes('listening on'); i++) {
        assert.ok(i < 750, `tail did not connect: ${stderr}`);
        await sleep(20);
      }
      await sdk.jobs.enqueue({ queue_name: 'other', payload: {} });
      const a = await sdk.jobs.enqueue({ queue_name: 'cli-tail', payload: { n: 1 } });
      const [claimed] = await sdk.jobs.claim({ queue_name: 'cli-tail', worker_id: 'cli-w' });
      await sdk.jobs.complete(claimed!.id, { worker_id: 'cli-w', lease_id: claimed!.lease_id! });
      const b = await sdk.jobs.enqueue({ queue_name: 'cli-tail', payload: { n: 2 } });
      assert.equal(await exited, 0, stderr);
      const events = stdout.trim().split('\n').map((l) => JSON.parse(l));
      assert.deepEqual(events.map((e) => [e.event, e.data.job_id]), [['job.created', a.id], ['job.created', b.id]]);
    } finally {
      child.kill('SIGKILL');
    }
    // Ctrl-C ends it cleanly.
    const live = spawn(process.execPath, [BIN, 'tail'], { env: { PATH: process.env.PATH, HOME: home, SLUICE_URL: n.node.url, SLUICE_API_KEY: key }, stdio: ['ignore', 'ignore', 'pipe'] });
    let liveErr = '';
    live.stderr.on('data', (b) => (liveErr += b));
    const liveExit = new Promise<number | null>((resolve) => live.once('close', resolve));
    try {
      for (let i = 0; !liveErr.includes('listening on'); i++) {
        assert.ok(i < 750, `tail did not connect: ${liveErr}`);
        await sleep(20);
      }
      live.kill('SIGINT');
      assert.equal(await liveExit, 0);
    } finally {
      live.kill('SIGKILL');
    }
    await fails(['tail', '--queue', '-x-'], 2);
    await fails(['tail', '--event', 'not-an-event'], 1, /VALIDATION_ERROR/);
  });

  test('admin org create, keys (also admin key) create, list and revoke; auth failures exit 3', async () => {
    const org = await okJson(['admin', 'org', 'create', '--name', 'Acme', '--slug', 'cli-acme', '--plan', 'starter'], { env: { SLUICE_ADMIN_KEY: ADMIN } });
    assert.equal(org.organization.plan, 'starter');
    const orgKey = org.api_key.key as string;
    const human = await ok(['admin', 'org', 'create', '--name', 'Beta', '--slug', 'cli-beta', '--admin-key', ADMIN]);
    assert.match(human.stdout, /^api_key\s+svc_test_/m);
    assert.match(human.stderr, /shown this once/);
    await fails(['admin', 'org', 'create', '--name', 'X', '--slug', 'cli-x'], 2, /no admin key/);
    await fails(['admin', 'org', 'create', '--name', 'X', '--slug', 'cli-x', '--admin-key', 'wrong-admin-key-000000'], 3, /UNAUTHORIZED/);
    await fails(['admin', 'org', 'create', '--name', 'X', '--slug', 'cli-acme', '--admin-key', ADMIN], 1, /SLUG_TAKEN/);

    const reader = await okJson(['keys', 'create', '--name', 'reader', '--permissions', 'jobs:read'], { env: { SLUICE_API_KEY: orgKey } });
    assert.deepEqual(reader.permissions, ['jobs:read']);
    assert.ok((await okJson<any[]>(['keys', 'list'], { env: { SLUICE_API_KEY: orgKey } })).some((k) => k.id === reader.id));
    await ok(['jobs', 'list'], { env: { SLUICE_API_KEY: reader.key } });
    await fails(['enqueue', 'q', '{}'], 3, /FORBIDDEN/, { env: { SLUICE_API_KEY: reader.key } });
    await fails(['keys', 'create', '--name', 'x', '--permissions', 'jobs:delete'], 2, /unknown permission/);
    assert.match((await ok(['keys', 'revoke', reader.id], { env: { SLUICE_API_KEY: orgKey } })).stdout, /revoked/);
    await fails(['jobs', 'list'], 3, /UNAUTHORIZED/, { env: { SLUICE_API_KEY: reader.key } });
    // The same under `admin key`, beside `admin org`.
    const other = await okJson(['admin', 'key', 'create', '--name', 'other'], { env: { SLUICE_API_KEY: orgKey } });
    assert.ok((await okJson<any[]>(['admin', 'key', 'list'], { env: { SLUICE_API_KEY: orgKey } })).some((k) => k.id === other.id));
    assert.match((await ok(['admin', 'key', 'revoke', other.id], { env: { SLUICE_API_KEY: orgKey } })).stdout, /revoked/);
    await fails(['jobs', 'list'], 3, /UNAUTHORIZED/, { env: { SLUICE_API_KEY: other.key } });
    assert.match((await ok(['--help'])).stdout, /admin key create\s+the same as keys create/);
    await fails(['jobs', 'list'], 2, /no API key/, { env: { SLUICE_API_KEY: undefined } });
  });

  test('profiles, precedence, and the exit codes of a quota and of an unreachable service', async () => {
    // A home of its own: this test writes (and breaks) the profile file.
    const own = fs.mkdtempSync(path.join(home, 'profiles-'));
    const config = path.join(own, '.config/sluice/config.json');
    fs.mkdirSync(path.dirname(config), { recursive: true });
    const org = await sdk.organizations.register({ name: 'Free', slug: 'cli-free' });
    fs.writeFileSync(
      config,
      JSON.stringify({ default: 'main', profiles: { main: { url: n.node.url, api_key: key }, free: { url: n.node.url, api_key: org.api_key.key } } }),
      { mode: 0o600 },
    );
    const noEnv = { HOME: own, SLUICE_URL: undefined, SLUICE_API_KEY: undefined };
    const mine = await okJson(['enqueue', 'cli-profile', '{}'], { env: noEnv });
    assert.equal((await sdk.jobs.get(mine.id)).id, mine.id, 'the default profile is the main organization');
    const theirs = await okJson(['enqueue', 'cli-profile', '{}', '--profile', 'free'], { env: noEnv });
    await assert.rejects(sdk.jobs.get(theirs.id), /not found/i);
    // The environment beats the default profile; --profile beats the environment; flags beat all.
    await fails(['jobs', 'list'], 3, /UNAUTHORIZED/, { env: { HOME: own, SLUICE_API_KEY: 'svc_test_wrong' } });
    await ok(['jobs', 'list', '--profile', 'main'], { env: { HOME: own, SLUICE_API_KEY: 'svc_test_wrong' } });
    await fails(['jobs', 'list', '--profile', 'main', '--api-key', 'svc_test_wrong'], 3, undefined, { env: { HOME: own } });
    await fails(['jobs', 'list', '--profile', 'nope'], 2, /no profile "nope".*profiles: main, free/, { env: { HOME: own } });

    // Free plan: 10 active jobs, then 429 QUOTA_EXCEEDED.
    const free = { env: { SLUICE_PROFILE: 'free', ...noEnv } };
    const freeSdk = new SluiceClient({ url: n.node.url, apiKey: org.api_key.key });
    assert.equal((await freeSdk.jobs.enqueueBulk(Array.from({ length: 9 }, () => ({ payload: {} })), { queue_name: 'cli-quota' })).success_count, 9);
    await fails(['enqueue', 'cli-quota', '{}'], 5, /QUOTA_EXCEEDED/, free);
    fs.chmodSync(config, 0o644);
    assert.match((await ok(['queues', 'list'], { env: noEnv })).stderr, /readable by other users/);
    fs.writeFileSync(config, '{"profiles": ');
    await fails(['jobs', 'list'], 2, /not valid JSON/, { env: noEnv });
    fs.rmSync(config);

    await fails(['jobs', 'list', '--url', `http://127.0.0.1:${await freePort()}`], 6, /CONNECTION_FAILED: .*ECONNREFUSED/);
    await fails(['jobs', 'list', '--url', 'localhost:8080'], 2, /absolute http\(s\) URL/);
  });

  test('help, usage errors', async () => {
    assert.match((await ok(['help'])).stdout, /Exit codes: 0 ok; 1/);
    assert.match((await ok(['dlq', 'purge', '--help'])).stdout, /--older-than/);
    assert.match((await ok(['--version'])).stdout, /^\d+\.\d+\.\d+/);
    await fails([], 2);
    await fails(['frobnicate'], 2, /unknown command "frobnicate"/);
    await fails(['queues'], 2, /expected one of list, stats, pause, resume/);
    await fails(['queues', 'list', '--bogus'], 2, /Unknown option '--bogus'/);
  });
});
