// What one message to a worker thread and its answer cost the sender, one round trip at a time (the case of a
// lightly loaded node, whose actor thread sleeps between messages). docs/BENCHMARKS.md, "third session".
//
//   node --import tsx bench/thread-hop.ts [round-trips=20000]
import { Worker } from 'node:worker_threads';

const n = Number(process.argv[2] ?? 20_000);
// The echo side in plain JavaScript: the reply of a claim that found nothing.
const worker = new Worker(
  `const { parentPort } = require('node:worker_threads');
   parentPort.on('message', () => parentPort.postMessage([{ id: 1, ok: true, value: { jobs: [] } }]));`,
  { eval: true },
);
// The shape of a claim as the pool posts it.
const ask = [{ t: 'queue', id: 1, org: '0195f6c2-7d0a-7c4e-9a55-0b6f1f1d2e3a', queue: 'q', op: 'claim', args: { worker_id: 'w1', limit: 1, wait_ms: 0 } }];
let done = 0;
let cpu0 = process.cpuUsage();
let t0 = performance.now();
worker.on('message', () => {
  if (done === 100) {
    // Warmed up: measure from here.
    cpu0 = process.cpuUsage();
    t0 = performance.now();
  }
  if (++done < n + 100) return void setImmediate(() => worker.postMessage(ask));
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - t0;
  console.log(
    `${n} round trips: ${((wall * 1000) / n).toFixed(1)} µs of wall time each, ${((cpu.user + cpu.system) / n).toFixed(1)} µs of the sender's CPU (${(cpu.system / n).toFixed(1)} in the kernel)`,
  );
  void worker.terminate();
});
worker.postMessage(ask);
