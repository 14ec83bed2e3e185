// Exactly-once claim: 5,000 jobs, 16 concurrent HTTP claim loops over two actor threads; every job is
// claimed by exactly one loop, and none twice.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestNode, type TestNode } from './helpers.js';

const JOBS = 5_000;
const LOOPS = 16;

let n: TestNode;
before(async () => {
  n = await startTestNode();
});
after(() => n.stop());

test(`${JOBS} jobs, ${LOOPS} concurrent claim loops: each job claimed exactly once`, async () => {
  const api = n.api;
  let next = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < JOBS) {
        const i = next++;
        await api.enqueue({ queue_name: 'once', payload: { i } });
      }
    }),
  );

  const claims = new Map<string, number>();
  let duplicates = 0;
  const deadline = Date.now() + 120_000;
  await Promise.all(
    Array.from({ length: LOOPS }, async (_, loop) => {
      let empty = 0;
      while (empty < 3 && Date.now() < deadline) {
        const r = await api.post('/api/v1/jobs/claim', { queue_name: 'once', worker_id: `w${loop}`, limit: 7 });
        assert.equal(r.status, 200);
        if (r.body.jobs.length === 0) {
          empty++;
          continue;
        }
        empty = 0;
        for (const j of r.body.jobs) {
          if (claims.has(j.id)) duplicates++;
          claims.set(j.id, loop);
          const done = await api.post(`/api/v1/jobs/${j.id}/complete`, { worker_id: `w${loop}`, lease_id: j.lease_id });
          assert.equal(done.status, 200);
        }
      }
    }),
  );
  assert.equal(duplicates, 0);
  assert.equal(claims.size, JOBS);
  const rows = await n.node.store.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM jobs WHERE queue_name = 'once' GROUP BY status`,
  );
  assert.deepEqual(rows, [{ status: 'completed', n: JOBS }]);
});
