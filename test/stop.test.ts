// Stopping a node whose store no longer answers: SIGTERM drains and stops, but a stop that cannot finish (here the
// shards table held under an exclusive lock, so neither a commit nor the shards' hand-over can run; the lock may
// also catch the end of the node's boot, which a signal then waits for) ends at STOP_TIMEOUT_MS with status 1, and a
// second signal ends it at once. A node that can stop exits 0 (build.test.ts).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import pg from 'pg';
import { freePort, freshStore, sleep, spawnNode, STORE } from './helpers.js';

const SKIP = STORE !== 'pg' && 'a lock from another session stands in for a store that no longer answers: PostgreSQL only';

/** The exit code, or null if the process was still running after `ms`. */
async function exitWithin(child: ChildProcess, ms: number): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  return Promise.race([new Promise<number | null>((r) => child.once('exit', (code) => r(code))), sleep(ms).then(() => null)]);
}

/** A node on a fresh store, and a session that holds the shards table under an exclusive lock until released. */
async function stuckNode(env: Record<string, string>) {
  const store = await freshStore();
  const node = await spawnNode({ ...store.env, PORT: String(await freePort()), ...env });
  const lock = new pg.Client(store.env.DATABASE_URL);
  await lock.connect();
  await lock.query('BEGIN');
  await lock.query('LOCK TABLE shards IN ACCESS EXCLUSIVE MODE');
  return {
    node,
    async dispose() {
      if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGKILL');
      await lock.query('ROLLBACK').catch(() => {});
      await lock.end().catch(() => {});
      await store.dispose();
    },
  };
}

test('a stop that cannot finish ends at STOP_TIMEOUT_MS with status 1', { skip: SKIP }, async () => {
  const s = await stuckNode({ STOP_TIMEOUT_MS: '1500' });
  try {
    s.node.child.kill('SIGTERM');
    const code = await exitWithin(s.node.child, 30_000);
    assert.equal(code, 1, `exit code; output:\n${s.node.output()}`);
    assert.match(s.node.output(), /did not stop within STOP_TIMEOUT_MS \(1500 ms\): exiting now/);
  } finally {
    await s.dispose();
  }
});

test('a second signal while stopping ends the process at once', { skip: SKIP }, async () => {
  const s = await stuckNode({ STOP_TIMEOUT_MS: '600000' });
  try {
    s.node.child.kill('SIGTERM');
    for (let i = 0; i < 200 && !/SIGTERM: draining and stopping/.test(s.node.output()); i++) await sleep(25);
    assert.match(s.node.output(), /SIGTERM: draining and stopping/);
    assert.equal(await exitWithin(s.node.child, 1_000), null, 'the stop is stuck behind the lock');
    assert.equal(s.node.child.signalCode, null);
    s.node.child.kill('SIGINT');
    const code = await exitWithin(s.node.child, 30_000);
    assert.equal(code, 1, `exit code; output:\n${s.node.output()}`);
    assert.match(s.node.output(), /SIGINT again while stopping: exiting now/);
  } finally {
    await s.dispose();
  }
});
