// A commit the store refuses: every request in the failed batch gets 503 (never a false success), the
// actor's memory is rolled back (rebuilt from the store), and the queue keeps working afterwards.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestNode, type TestNode } from './helpers.js';

let n: TestNode;
before(async () => {
  n = await startTestNode({ env: { ACTOR_THREADS: '1' } });
  // A real failure inside the real store: any job whose payload carries "explode" aborts its statement.
  await n.node.store.exec(`
    CREATE FUNCTION explode_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.payload ? 'explode' THEN RAISE EXCEPTION 'refused by test trigger'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER explode BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION explode_on_insert();`);
});
after(() => n.stop());

test('a failed commit answers 503 and leaves no trace in memory or store', async () => {
  const ok = await n.api.enqueue({ queue_name: 'cf', payload: { n: 1 } });
  const [bad, innocent] = await Promise.all([
    n.api.post('/api/v1/jobs', { queue_name: 'cf', payload: { explode: true } }),
    n.api.post('/api/v1/jobs', { queue_name: 'cf', payload: { n: 2 } }),
  ]);
  assert.equal(bad.status, 503);
  assert.equal(bad.body.code, 'UNAVAILABLE');
  // Same batch or the next: either way never acknowledged unless it is really there.
  if (innocent.status === 201) assert.equal((await n.api.get(`/api/v1/jobs/${innocent.body.id}`)).status, 200);
  else assert.equal(innocent.status, 503);

  const claimed = await n.api.claim('cf', { limit: 10 });
  const expected = [ok.id, ...(innocent.status === 201 ? [innocent.body.id] : [])];
  assert.deepEqual(claimed.map((j) => j.id).sort(), expected.sort());
  const rows = await n.node.store.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE payload ? 'explode'`);
  assert.equal(rows[0]!.n, 0);

  const later = await n.api.enqueue({ queue_name: 'cf', payload: { n: 3 } });
  const [c] = await n.api.claim('cf');
  assert.equal(c.id, later.id);
});
