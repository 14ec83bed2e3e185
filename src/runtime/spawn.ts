// Starts a worker thread from a TypeScript module. Node 20 does not carry tsx's loader hooks into workers,
// so the worker first registers tsx, then imports its entry.
import { Worker, type WorkerOptions } from 'node:worker_threads';

export function spawnWorker(entry: URL, options: WorkerOptions): Worker {
  const code = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(code, { ...options, eval: true });
}
