// Write-ahead under kill -9: a node taking enqueues under load is killed; after a restart on the same store
// every job whose 201 reached the client exists with its payload, leases granted before the crash are still
// honoured, and the rebuilt actors hand out the surviving jobs.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Api, freePort, freshStore, sleep, spawnNode } from './helpers.js';

test('kill -9 during enqueue load loses no acknowledged job', async () => {
  const store = await freshStore();
  const port = String(await freePort());
  const first = await spawnNode({ ...store.env, PORT: port });
  try {
    const key = fs.readFileSync(path.join(store.env.DATA_DIR!, 'default-api-key'), 'utf8').trim();
    const api = new Api(first.url, key);

    for (let i = 0; i < 5; i++) await api.enqueue({ queue_name: 'leased', payload: { i } });
    const leased = await api.claim('leased', { limit: 5, lease_duration_secs: 600 });
    assert.equal(leased.length, 5);

    const acked = new Map<string, number>();
    let stop = false;
    let next = 0;
    let errors = 0;
    const loops = Array.from({ length: 32 }, async () => {
      while (!stop) {
        const k = next++;
        try {
          const r = await api.post('/api/v1/jobs', { queue_name: 'crash', payload: { k } });
          if (r.status === 201) acked.set(r.body.id, k);
        } catch {
          errors++; // the connection died with the process: not acknowledged
        }
      }
    });
    const until = Date.now() + 10_000;
    while (acked.size < 1_000 && Date.now() < until) await sleep(20);
    first.child.kill('SIGKILL');
    stop = true;
    await Promise.all(loops);
    await new Promise((r) => (first.child.exitCode !== null || first.child.signalCode !== null ? r(null) : first.child.once('exit', r)));
    assert.ok(acked.size >= 1_000, `only ${acked.size} enqueues acknowledged before the kill`);

    const second = await spawnNode({ ...store.env, PORT: port });
    try {
      const api2 = new Api(second.url, key);
      const ids = [...acked.keys()];
      let missing = 0;
      let wrong = 0;
      for (let i = 0; i < ids.length; i += 50) {
        await Promise.all(
          ids.slice(i, i + 50).map(async (id) => {
            const r = await api2.get(`/api/v1/jobs/${id}`);
            if (r.status !== 200) missing++;
            else if (r.body.payload?.k !== acked.get(id)) wrong++;
          }),
        );
      }
      assert.equal(missing, 0, `${missing} of ${ids.length} acknowledged jobs lost`);
      assert.equal(wrong, 0);

      for (const j of leased) {
        const done = await api2.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: 'w1', lease_id: j.lease_id });
        assert.equal(done.status, 200, 'a lease granted before the crash is still valid');
      }

      const seen = new Set<string>();
      for (;;) {
        const jobs = await api2.claim('crash', { limit: 100 });
        if (jobs.length === 0) break;
        for (const j of jobs) seen.add(j.id);
      }
      for (const id of ids) assert.ok(seen.has(id), `acknowledged job ${id} is claimable after the restart`);
    } finally {
      second.child.kill('SIGTERM');
      await new Promise((r) => second.child.once('exit', r));
    }
  } finally {
    if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
    await store.dispose();
  }
});
