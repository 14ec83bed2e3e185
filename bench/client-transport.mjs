// What one request costs a Node client through the global fetch and through node:http with a keep-alive agent (the
// SDK's transport since the seventeenth session, docs/BENCHMARKS.md): a local node:http server answers every POST
// with N jobs of claim-sized JSON; the client sends 1,000 sequential requests with a 112-item acknowledgement body
// and parses each answer. The CPU figure is the whole process's (client and server), so only the difference
// between the two lines is the client's.
//
//   node bench/client-transport.mjs [jobs-per-answer=285]
import http from 'node:http';

const JOBS = Number(process.argv[2] ?? 285);
const ROUNDS = 1_000;
const job = {
  id: '0192f0a0-aaaa-bbbb-cccc-ddddeeeeffff', queue_name: 'bench-sdk', payload: { n: 12345 }, status: 'processing', priority: 0,
  retry_count: 0, max_retries: 3, timeout_seconds: 300, lease_id: 'e0c4b3a2-1111-2222-3333-444455556666', worker_id: 'w-1',
  created_at: '2026-11-28T01:29:13.123Z', started_at: '2026-11-28T01:29:13.456Z', lease_expires_at: '2026-11-28T01:34:13.456Z',
  tags: [], progress: null, result: null, error: null,
};
const answer = JSON.stringify({ jobs: Array(JOBS).fill(job) });
const ack = JSON.stringify({ items: Array.from({ length: 112 }, () => ({ id: job.id, lease_id: job.lease_id, result: null })) });
const headers = { 'content-type': 'application/json', authorization: 'Bearer x', accept: 'application/json' };

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(answer));
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/`;
const agent = new http.Agent({ keepAlive: true });

async function viaFetch() {
  const r = await fetch(url, { method: 'POST', headers, body: ack, signal: new AbortController().signal });
  return JSON.parse(await r.text());
}

function viaHttp() {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
    });
    req.on('error', reject);
    req.end(ack);
  });
}

for (const [name, send] of [['fetch', viaFetch], ['http', viaHttp], ['fetch', viaFetch], ['http', viaHttp]]) {
  for (let i = 0; i < 200; i++) await send();
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < ROUNDS; i++) await send();
  const used = process.cpuUsage(cpu);
  const wall = ((performance.now() - t0) / ROUNDS) * 1000;
  console.log(`${name.padEnd(5)} per request: wall ${wall.toFixed(0)} µs, CPU (client and server) ${((used.user + used.system) / ROUNDS).toFixed(0)} µs`);
}
server.close();
agent.destroy();
