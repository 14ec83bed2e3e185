// The use cases of a node, one module per resource, built once over the node's AppContext. REST, gRPC and the
// background services all call these; none of them writes an operation of its own.
import type { AppContext } from './context.js';
import { DeadLetters } from './dlq.js';
import { IncomingWebhooks } from './incoming-webhooks.js';
import { Jobs } from './jobs.js';
import { Queues } from './queues.js';
import { Webhooks } from './webhooks.js';
import { Workers } from './workers.js';

export interface App {
  ctx: AppContext;
  jobs: Jobs;
  queues: Queues;
  dlq: DeadLetters;
  workers: Workers;
  incomingWebhooks: IncomingWebhooks;
  webhooks: Webhooks;
}

export function createApp(ctx: AppContext): App {
  const jobs = new Jobs(ctx);
  return {
    ctx,
    jobs,
    queues: new Queues(ctx),
    dlq: new DeadLetters(ctx, jobs),
    workers: new Workers(ctx),
    incomingWebhooks: new IncomingWebhooks(ctx, jobs),
    webhooks: new Webhooks(ctx),
  };
}
