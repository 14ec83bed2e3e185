// Starts a worker thread from one of our modules, named by its .ts URL. Under tsx (make run, tests) Node 20
// does not carry tsx's loader hooks into workers, so the worker first registers tsx, then imports its entry.
// The compiled build (`make build`, dist/) has no tsx: this module is then a .js file itself, and the entry's
// compiled .js sibling starts as a plain ES module worker.
import { Worker, type WorkerOptions } from 'node:worker_threads';

const COMPILED = import.meta.url.endsWith('.js');

export function spawnWorker(entry: URL, options: WorkerOptions): Worker {
  if (COMPILED) return new Worker(new URL(entry.href.replace(/\.ts$/, '.js')), options);
  const code = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(code, { ...options, eval: true });
}
