// A worker on the SDK: claims jobs of the queue "emails", five at a time, and "sends" each one.
//   node --import tsx examples/worker.ts        (Ctrl-C or SIGTERM: finishes what it holds, then deregisters)
// Feed it with examples/producer.ts, or: sluice enqueue emails '{"to":"ada@example.com"}'
import { UnrecoverableError, Worker } from '../clients/typescript/src/index.js';
import { client } from './client.js';

interface Email {
  to: string;
  subject?: string;
}

async function send(email: Email, signal: AbortSignal): Promise<{ messageId: string }> {
  // Stands for the real SMTP call: pass it the signal so a lost lease or a shutdown stops it.
  await new Promise((resolve, reject) => {
    const t = setTimeout(resolve, 200 + Math.random() * 800);
    signal.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });
  if (Math.random() < 0.1) throw new Error('SMTP 451: try again later'); // retried with backoff
  return { messageId: `<${Date.now()}.${email.to}@example.com>` };
}

const worker = new Worker<Email>(
  client,
  'emails',
  async (job, { signal, attempt }) => {
    // A job that can never succeed goes to the dead-letter queue at once instead of using its retries.
    if (typeof job.payload.to !== 'string' || !job.payload.to.includes('@')) throw new UnrecoverableError(`bad address: ${String(job.payload.to)}`);
    console.log(`sending to ${job.payload.to} (attempt ${attempt})`);
    return send(job.payload, signal);
  },
  { concurrency: 5, handleSignals: true, workerId: 'example-email-worker' },
);

worker.on('ready', (id) => console.log(`worker ${id} is waiting for jobs of "emails"`));
worker.on('completed', (job, result) => console.log(`✓ ${job.id} ${JSON.stringify(result)}`));
worker.on('failed', (job, err, status) => console.log(`✗ ${job.id} ${err instanceof Error ? err.message : String(err)} → ${status}`));
worker.on('error', (err, context) => console.error(`worker error during ${context}:`, err instanceof Error ? err.message : err));
worker.on('closed', () => console.log('worker closed'));
