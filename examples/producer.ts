// A producer with idempotency keys: each job is keyed by the business event it stands for (here an order id),
// so sending it twice (a retry after a timeout, a redelivered message, a second run of this script) enqueues
// it once. With a key the SDK also retries the request by itself after a dropped connection or a 503.
//   node --import tsx examples/producer.ts      (run it twice: the second run creates nothing)
import { client } from './client.js';

const orders = [
  { id: 'order-1001', email: 'ada@example.com' },
  { id: 'order-1002', email: 'grace@example.com' },
  { id: 'order-1003', email: 'not-an-address' }, // dead-lettered by examples/worker.ts at once
];

for (const order of orders) {
  const job = await client.jobs.enqueue({
    queue_name: 'emails',
    payload: { to: order.email, subject: `Your order ${order.id}` },
    idempotency_key: `receipt:${order.id}`,
    tags: { kind: 'receipt', order: order.id },
  });
  console.log(`${job.created ? 'enqueued' : 'already there'}  ${job.id}  ${order.id}`);
}

// Many at once: up to 100 per request; every item keyed, so the whole request is safe to retry.
const batch = Array.from({ length: 20 }, (_, i) => ({
  payload: { to: `user${i}@example.com`, subject: 'Newsletter #42' },
  idempotency_key: `newsletter-42:user${i}`,
  priority: -10, // after the receipts
}));
const bulk = await client.jobs.enqueueBulk(batch, { queue_name: 'emails' });
const created = bulk.succeeded.filter((s) => s.created).length;
console.log(`newsletter: ${created} enqueued, ${bulk.success_count - created} already there, ${bulk.failure_count} refused`);

const stats = await client.queues.stats('emails');
console.log(`queue emails: ${stats.pending} pending, ${stats.processing} processing, ${stats.completed} completed`);
