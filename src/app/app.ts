// The use cases of a node, one module per resource, built once over the node's AppContext. REST, gRPC and the
// background services all call these; none of them writes an operation of its own.
import type { AppContext } from './context.js';
import { DeadLetters } from './dlq.js';
import { Jobs } from './jobs.js';
import { Queues } from './queues.js';

export interface App {
  ctx: AppContext;
  jobs: Jobs;
  queues: Queues;
  dlq: DeadLetters;
}

export function createApp(ctx: AppContext): App {
  const jobs = new Jobs(ctx);
  return { ctx, jobs, queues: new Queues(ctx), dlq: new DeadLetters(ctx, jobs) };
}
