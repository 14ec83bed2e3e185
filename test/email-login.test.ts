// Email login end to end: the node sends real SMTP to a listener on loopback (smtp-server), the test reads the
// code from the mail and logs in with it. Also: 5 attempts per code then it is dead, 10-minute expiry, 5 codes
// per address per hour (429 + Retry-After), and no difference an outsider could see between a known address
// and an unknown one.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { ManualClock } from '../src/clock.js';
import { Api, sleep, startTestNode, type TestNode } from './helpers.js';
import { assertError, assertInvalid } from './http-assert.js';

const START = '/api/v1/auth/email/start';
const VERIFY = '/api/v1/auth/email/verify';

interface Received {
  from: string;
  to: string[];
  raw: string;
}

/** A real SMTP server on 127.0.0.1 that keeps what it receives. No TLS, no AUTH: loopback only. */
async function smtpListener(): Promise<{ port: number; mails: Received[]; close(): Promise<void> }> {
  const mails: Received[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        mails.push({ from, to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString('utf8') });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('email login through SMTP', () => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12));
  let smtp: Awaited<ReturnType<typeof smtpListener>>;
  let n: TestNode;
  let anon: Api;
  let org: { id: string; key: string };

  /** The code of the next mail to `to` (waits for it; mails read once are consumed). */
  const codeFor = async (to: string): Promise<string> => {
    for (let i = 0; i < 250; i++) {
      const at = smtp.mails.findIndex((m) => m.to.includes(to));
      if (at >= 0) {
        const [mail] = smtp.mails.splice(at, 1);
        const m = /^Subject: Your Sluice login code: (\d{6})\r?$/m.exec(mail!.raw);
        assert.ok(m, `no code in the mail:\n${mail!.raw}`);
        assert.ok(mail!.raw.includes(m[1]!), 'the body repeats the code');
        return m[1]!;
      }
      await sleep(20);
    }
    throw new Error(`no mail to ${to} arrived`);
  };
  const start = (email: string) => anon.post(START, { email });
  const verify = (email: string, code: string) => anon.post(VERIFY, { email, code });
  /** A code that is not `code`. */
  const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

  /** An organization owned by `email`, created through the open registration route. */
  const register = async (slug: string, email: string) => {
    const r = await anon.post('/api/v1/organizations', { name: slug, slug, owner_email: email });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return { id: r.body.organization.id as string, key: r.body.api_key.key as string };
  };

  before(async () => {
    smtp = await smtpListener();
    n = await startTestNode({
      clock,
      env: { SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: 'Sluice Test <login@sluice.test>', REGISTRATION_MODE: 'open' },
    });
    anon = n.api.as('');
    org = await register('mail-owner', 'owner@example.com');
  });
  after(async () => {
    await n.stop();
    await smtp.close();
  });

  test('start mails a 6-digit code; verify trades it for tokens of the owned organization (via email, no key, "*")', async () => {
    const r = await start('owner@example.com');
    assert.equal(r.status, 202);
    assert.deepEqual(r.body, { sent: true });
    const code = await codeFor('owner@example.com');
    assert.match(code, /^\d{6}$/);

    const v = await verify('owner@example.com', code);
    assert.equal(v.status, 200, JSON.stringify(v.body));
    assert.equal(v.body.token_type, 'Bearer');
    assert.equal(v.body.expires_in, 3600);
    const jwt = anon.as(v.body.access_token);
    const me = await jwt.get('/api/v1/auth/me');
    assert.equal(me.status, 200);
    assert.equal(me.body.organization_id, org.id);
    assert.equal(me.body.api_key_id, null);
    assert.equal(me.body.via, 'email');
    assert.deepEqual(me.body.permissions, ['*']);
    // A full session: it may manage keys, and it refreshes.
    assert.equal((await jwt.post('/api/v1/api-keys', { name: 'made-by-email' })).status, 201);
    const refreshed = await anon.post('/api/v1/auth/refresh', { refresh_token: v.body.refresh_token });
    assert.equal(refreshed.status, 200);
    assert.equal((await anon.as(refreshed.body.access_token).get('/api/v1/auth/me')).body.via, 'email');

    // A code logs in once.
    assertError(await verify('owner@example.com', code), 401, 'UNAUTHORIZED');
    // Logout ends the email session like any other.
    assert.equal((await jwt.post('/api/v1/auth/logout')).status, 200);
    assertError(await jwt.get('/api/v1/auth/me'), 401, 'UNAUTHORIZED');
  });

  test('the mail comes from MAIL_FROM to the owner address; addresses compare case-insensitively', async () => {
    await register('mixed-case', 'Mixed.Case@Example.com');
    assert.equal((await start('MIXED.case@example.COM')).status, 202);
    const mail = await (async () => {
      for (let i = 0; i < 250 && !smtp.mails.some((m) => m.to.includes('mixed.case@example.com')); i++) await sleep(20);
      return smtp.mails.find((m) => m.to.includes('mixed.case@example.com'));
    })();
    assert.ok(mail);
    assert.equal(mail.from, 'login@sluice.test');
    const code = await codeFor('mixed.case@example.com');
    assert.equal((await verify('Mixed.Case@example.com', code)).status, 200);
  });

  test('brute force stops: 5 wrong codes kill the code, the 6th try fails even with the right one', async () => {
    const email = 'target@example.com';
    const victim = await register('brute-force', email);
    await start(email);
    const code = await codeFor(email);
    for (let i = 0; i < 5; i++) assertError(await verify(email, wrong(code)), 401, 'UNAUTHORIZED');
    assertError(await verify(email, code), 401, 'UNAUTHORIZED');
    const rows = await n.node.store.query('SELECT attempts, used_at FROM email_login_codes WHERE organization_id = $1', [victim.id]);
    assert.deepEqual(
      rows.map((r) => r.attempts),
      [5],
    );
    // A new code works again.
    await start(email);
    const next = await codeFor(email);
    assert.equal((await verify(email, next)).status, 200);
  });

  test('a code lives 10 minutes; a newer code ends the older ones', async () => {
    const email = 'slow@example.com';
    await register('slow-reader', email);
    await start(email);
    const late = await codeFor(email);
    await clock.advance(10 * 60_000);
    assertError(await verify(email, late), 401, 'UNAUTHORIZED');

    await start(email);
    const first = await codeFor(email);
    await start(email);
    const second = await codeFor(email);
    if (first !== second) assertError(await verify(email, first), 401, 'UNAUTHORIZED');
    await clock.advance(10 * 60_000 - 1_000);
    assert.equal((await verify(email, second)).status, 200);
  });

  test('an unknown address gets the same 202 and no mail', async () => {
    const r = await start('nobody@example.com');
    assert.equal(r.status, 202);
    assert.deepEqual(r.body, { sent: true });
    // A mail to a known address sent after it arrives; none went to the unknown one before or since.
    await start('owner@example.com');
    await codeFor('owner@example.com');
    await sleep(200);
    assert.ok(!smtp.mails.some((m) => m.to.includes('nobody@example.com')), 'a mail went to an unknown address');
    assertError(await verify('nobody@example.com', '123456'), 401, 'UNAUTHORIZED');
    const codes = await n.node.store.query("SELECT count(*)::int AS n FROM email_login_codes WHERE email = 'nobody@example.com'");
    assert.equal(codes[0]!.n, 0);
  });

  test('at most 5 codes per address per hour: the 6th is 429 with Retry-After, known address or not', async () => {
    for (const email of ['limited@example.com', 'unknown-limited@example.com']) {
      if (email === 'limited@example.com') await register('limited', email);
      for (let i = 0; i < 5; i++) {
        assert.equal((await start(email)).status, 202);
        await clock.advance(60_000);
      }
      const refused = await start(email);
      assertError(refused, 429, 'RATE_LIMITED', ['retry_after']);
      // The first of the five leaves the hour 55 minutes from now.
      assert.equal(refused.headers.get('retry-after'), String(55 * 60));
      assert.equal(refused.body.retry_after, 55 * 60);
      await clock.advance(55 * 60_000 - 1_000);
      assertError(await start(email), 429, 'RATE_LIMITED', ['retry_after']);
      await clock.advance(1_000);
      assert.equal((await start(email)).status, 202);
      assertError(await start(email), 429, 'RATE_LIMITED', ['retry_after']);
    }
    // Other addresses are not held back.
    assert.equal((await start('owner@example.com')).status, 202);
    await codeFor('owner@example.com');
    // Drain the mails of this test.
    for (let i = 0; i < 6; i++) await codeFor('limited@example.com');
  });

  test('six starts at once admit exactly five', async () => {
    const email = 'burst@example.com';
    const answers = await Promise.all(Array.from({ length: 6 }, () => start(email)));
    assert.deepEqual(
      answers.map((a) => a.status).sort(),
      [202, 202, 202, 202, 202, 429],
    );
  });

  test('422 for a missing or malformed email or code', async () => {
    assertInvalid(await anon.post(START, {}), 'email');
    assertInvalid(await anon.post(START), 'email');
    assertInvalid(await anon.post(START, { email: 'no-at-sign' }), 'email');
    assertInvalid(await anon.post(START, { email: 42 }), 'email');
    assertInvalid(await anon.post(VERIFY, {}), 'email', 'code');
    assertInvalid(await anon.post(VERIFY, { email: 'owner@example.com', code: '12345' }), 'code');
    assertInvalid(await anon.post(VERIFY, { email: 'owner@example.com', code: '1234567' }), 'code');
    assertInvalid(await anon.post(VERIFY, { email: 'owner@example.com', code: 123456 }), 'code');
    assertInvalid(await anon.post(VERIFY, { email: 'owner@example.com', code: 'abcdef' }), 'code');
  });

  test('several organizations with one owner address: the oldest', async () => {
    const email = 'many@example.com';
    const oldest = await register('many-1', email);
    await clock.advance(1_000);
    await register('many-2', email);
    await start(email);
    const v = await verify(email, await codeFor(email));
    assert.equal((await anon.as(v.body.access_token).get('/api/v1/auth/me')).body.organization_id, oldest.id);
  });
});

test('without SMTP_URL the code goes to the log and email login still works', async () => {
  // The node logs through console.error: captured for the whole test (boot lines included, to keep output clean).
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => {
    lines.push(args.map(String).join(' '));
  };
  let n: TestNode | null = null;
  try {
    n = await startTestNode({ env: { REGISTRATION_MODE: 'open', LOG_LEVEL: 'info' } });
    const anon = n.api.as('');
    await anon.post('/api/v1/organizations', { name: 'Logged', slug: 'logged', owner_email: 'log@example.com' });
    assert.equal((await anon.post(START, { email: 'log@example.com' })).status, 202);
    const m = /login code: (\d{6})/.exec(lines.join('\n'));
    assert.ok(m, `no code in the log:\n${lines.join('\n')}`);
    assert.ok(lines.some((l) => l.includes('mail to log@example.com')));
    assert.equal((await anon.post(VERIFY, { email: 'log@example.com', code: m[1] })).status, 200);
  } finally {
    await n?.stop();
    console.error = original;
  }
});
