// A receiver of outgoing webhooks that checks X-Queue-Signature: sha256=HMAC(secret, "{X-Queue-Timestamp}.{raw
// body}"), over the raw bytes as they arrived, and refuses timestamps older than five minutes (replays).
//   WEBHOOK_SECRET=s3cret node --import tsx examples/webhook-receiver.ts --register
// --register also creates the endpoint on the service (for job.completed and job.failed) and sends a test
// delivery; without it, only the receiver runs (port: PORT, default 4000).
import http from 'node:http';
import { verifySignature } from '../clients/typescript/src/index.js';

const secret = process.env.WEBHOOK_SECRET ?? 's3cret';
const port = Number(process.env.PORT ?? 4000);

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    const ok = verifySignature({
      secret,
      signature: req.headers['x-queue-signature'] as string | undefined,
      timestamp: req.headers['x-queue-timestamp'] as string | undefined,
      rawBody: raw,
    });
    if (!ok) {
      console.log(`refused a delivery with a bad or missing signature (${req.headers['x-queue-event'] ?? 'no event'})`);
      res.writeHead(401).end();
      return;
    }
    // Answer fast with a 2xx; do the work elsewhere (a failed answer is retried: 5 attempts).
    res.writeHead(204).end();
    const envelope = JSON.parse(raw.toString('utf8')) as { id: string; event: string; data: Record<string, unknown> };
    console.log(`${envelope.event} ${envelope.id} attempt ${req.headers['x-queue-delivery-attempt']}: ${JSON.stringify(envelope.data)}`);
  });
});

server.listen(port, '127.0.0.1', async () => {
  console.log(`listening on http://127.0.0.1:${port}/hooks`);
  if (!process.argv.includes('--register')) return;
  const { client } = await import('./client.js');
  const hook = await client.webhooks.create({
    name: `example receiver ${port}`,
    url: `http://127.0.0.1:${port}/hooks`,
    events: ['job.completed', 'job.failed'],
    secret,
  });
  console.log(`registered webhook ${hook.id}; sending a test delivery`);
  const test = await client.webhooks.test(hook.id);
  console.log(`test delivery: ${test.status} (HTTP ${test.response_status})`);
  const stop = async () => {
    await client.webhooks.delete(hook.id);
    console.log(`deleted webhook ${hook.id}`);
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
});
