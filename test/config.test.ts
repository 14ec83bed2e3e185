// Configuration is checked once: every invalid setting is reported together, defaults are applied, and the
// result is frozen.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, defaultActorThreads, loadConfig } from '../src/config.js';

test('defaults', () => {
  const c = loadConfig({});
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.logFormat, 'text');
  assert.equal(c.port, 8080);
  assert.equal(c.grpcPort, 50051);
  assert.equal(c.databaseUrl, null);
  assert.equal(c.retryUnitMs, 60_000);
  assert.equal(c.defaultMaxRetries, 3);
  assert.equal(c.defaultTimeoutSeconds, 300);
  assert.equal(c.production, false);
  // Many nodes: a node that stops renewing loses its shards 10 s after its last renewal (issue 11).
  assert.equal(c.clusterLeaseMs, 10_000);
  assert.equal(c.shardCount, 256);
  assert.equal(c.actorThreads, defaultActorThreads());
  assert.deepEqual([1, 2, 3, 8].map((n) => defaultActorThreads(n)), [0, 0, 3, 8], 'none on two cores or fewer (actors on the main thread)');
  assert.ok(Object.isFrozen(c));
});

test('every invalid setting is reported at once', () => {
  try {
    loadConfig({ PORT: 'http', RETRY_UNIT_MS: '0', ACTOR_THREADS: '1.5', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud' });
    assert.fail('should throw');
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.equal(err.problems.length, 5);
    for (const name of ['PORT', 'RETRY_UNIT_MS', 'ACTOR_THREADS', 'DATABASE_URL', 'LOG_LEVEL']) {
      assert.ok(err.message.includes(name), `${name} is named`);
    }
  }
});

test('NODE_ENV=production needs a JWT secret', () => {
  assert.throws(() => loadConfig({ NODE_ENV: 'production' }), /JWT_SECRET is required/);
  assert.equal(loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32) }).production, true);
});

test('HOST: this machine only outside production, every interface in production, unless set', () => {
  assert.equal(loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32) }).host, '0.0.0.0');
  assert.equal(loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32), HOST: '10.0.0.5' }).host, '10.0.0.5');
  assert.equal(loadConfig({ HOST: '0.0.0.0' }).host, '0.0.0.0');
});

test('LOG_FORMAT', () => {
  assert.equal(loadConfig({ LOG_FORMAT: 'json' }).logFormat, 'json');
  assert.throws(() => loadConfig({ LOG_FORMAT: 'xml' }), /LOG_FORMAT/);
});

test('PLAN_<TIER>_<RESOURCE> overrides', () => {
  const c = loadConfig({ PLAN_FREE_ACTIVE_JOBS: '50', PLAN_PRO_QUEUES: 'unlimited' });
  assert.deepEqual(c.planOverrides, { free: { active_jobs: 50 }, pro: { queues: null } });
  assert.throws(() => loadConfig({ PLAN_GOLD_QUEUES: '1', PLAN_FREE_QUEUES: '-1', PLAN_FREE_NOPE: '1' }), (err: ConfigError) => err.problems.length === 3);
});

test('worker staleness and the public URL', () => {
  const d = loadConfig({});
  assert.equal(d.workerStaleSeconds, 120);
  assert.equal(d.publicUrl, null);
  const c = loadConfig({ WORKER_STALE_SECONDS: '30', PUBLIC_URL: 'https://queue.example.com/' });
  assert.equal(c.workerStaleSeconds, 30);
  assert.equal(c.publicUrl, 'https://queue.example.com');
  assert.throws(() => loadConfig({ WORKER_STALE_SECONDS: '0', PUBLIC_URL: 'queue.example.com' }), (err: ConfigError) => err.problems.length === 2);
});
