// The first requests a node answers: after a restart, and after it sat idle for 5 s and for 35 s (its pools close
// connections idle for 30 s, except the ones they keep open): `node --import tsx bench/first-request.ts`. One
// request at a time, each timed from the client; a fresh database, on PostgreSQL. BENCH_SERVER_ROOT and
// BENCH_COMPILED as in bench/lib.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, expectStatus, freshDatabase, sleep, startServer } from './lib.js';

const db = await freshDatabase();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-first-'));
try {
  // A first run creates the schema and the default key; the measured node is a restart on them.
  const first = await startServer(db.url);
  expectStatus(await new Client(first.url, first.key, 1).post('/api/v1/jobs', { queue_name: 'warm', payload: {} }), 201, 'enqueue');
  fs.cpSync(first.dataDir, dataDir, { recursive: true });
  await first.stop();
  const server = await startServer(db.url, { dataDir });
  try {
    const client = new Client(server.url, server.key, 1);
    const timed = async (label: string, p: string, body: unknown, status: number) => {
      const t = performance.now();
      expectStatus(await client.post(p, body), status, label);
      console.log(`[bench] first-request: ${label}: ${(performance.now() - t).toFixed(1)} ms`);
    };
    await timed('after the restart, enqueue to queue a', '/api/v1/jobs', { queue_name: 'a', payload: {} }, 201);
    await timed('then enqueue to queue b', '/api/v1/jobs', { queue_name: 'b', payload: {} }, 201);
    await timed('then enqueue to queue a', '/api/v1/jobs', { queue_name: 'a', payload: {} }, 201);
    for (const idle of [5, 35]) {
      await sleep(idle * 1000);
      await timed(`after ${idle} s idle, enqueue to queue a`, '/api/v1/jobs', { queue_name: 'a', payload: {} }, 201);
      await timed('then again', '/api/v1/jobs', { queue_name: 'a', payload: {} }, 201);
    }
  } finally {
    await server.stop();
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
  await db.drop();
}
