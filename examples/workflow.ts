// A workflow: a dependency graph of jobs. "extract" runs first, "transform" and "thumbnail" run in parallel
// once it completed, "load" waits for both. This script also runs the workers for its two queues, follows the
// workflow's events, and prints the outcome.
//   node --import tsx examples/workflow.ts      (workflows are not in the Free plan; `make run`'s default org has them)
import { Worker } from '../clients/typescript/src/index.js';
import { client } from './client.js';

const TERMINAL = new Set(['workflow.completed', 'workflow.failed', 'workflow.cancelled']);
let workflowId: string | null = null;
// Listen first (workflow.* events are published on the event stream, docs/workflows.md), then create.
let opened!: () => void;
const open = new Promise<void>((resolve) => (opened = resolve));
const events = client.events.stream({ events: 'workflow.*', onOpen: () => opened() });
const finished = (async () => {
  for await (const e of events) if (e.data.workflow_id === workflowId && TERMINAL.has(e.event)) return e.event;
  return 'stream ended';
})();
await open;

const wf = await client.workflows.create({
  name: `nightly import ${new Date().toISOString()}`,
  jobs: [
    { name: 'extract', queue_name: 'etl', payload: { source: 's3://bucket/export.csv' } },
    { name: 'transform', queue_name: 'etl', payload: { step: 'normalize' }, depends_on: ['extract'] },
    { name: 'thumbnail', queue_name: 'media', payload: { size: 256 }, depends_on: ['extract'] },
    { name: 'load', queue_name: 'etl', payload: { table: 'orders' }, depends_on: ['transform', 'thumbnail'] },
  ],
});
workflowId = wf.id;
console.log(`workflow ${wf.id}: ${wf.jobs.map((j) => `${j.name}${j.dependencies_met ? '' : ' (waiting)'}`).join(', ')}`);
const names = new Map(wf.jobs.map((j) => [j.id, j.name]));

const handler = async (job: { id: string; queue_name: string }) => {
  console.log(`  running ${names.get(job.id) ?? job.id} on ${job.queue_name}`);
  await new Promise((r) => setTimeout(r, 300));
  return { ok: true };
};
const workers = [new Worker(client, 'etl', handler, { concurrency: 2 }), new Worker(client, 'media', handler)];

console.log(await finished);
events.close();
const final = await client.workflows.get(wf.id);
for (const j of final.jobs) console.log(`  ${j.name.padEnd(10)} ${j.status}`);
await Promise.all(workers.map((w) => w.close()));
