// The use cases of a node, one module per resource, built once over the node's AppContext. REST, gRPC and the
// background services all call these; none of them writes an operation of its own.
import { ApiCalls } from './api-calls.js';
import { ApiKeys } from './api-keys.js';
import { Authenticator, Sessions } from './auth.js';
import type { AppContext } from './context.js';
import { Dashboard } from './dashboard.js';
import { Deliveries } from './deliveries.js';
import { DeadLetters } from './dlq.js';
import { IncomingWebhooks } from './incoming-webhooks.js';
import { Jobs } from './jobs.js';
import { Organizations } from './organizations.js';
import { Queues } from './queues.js';
import { RateLimiter } from './rate-limit.js';
import { Scheduler } from './scheduler.js';
import { Schedules } from './schedules.js';
import { Webhooks } from './webhooks.js';
import { Workers } from './workers.js';
import { Workflows } from './workflows.js';

export interface App {
  ctx: AppContext;
  jobs: Jobs;
  queues: Queues;
  dlq: DeadLetters;
  workers: Workers;
  incomingWebhooks: IncomingWebhooks;
  webhooks: Webhooks;
  /** Outgoing webhook deliveries and completion callbacks (the node starts and stops them). */
  deliveries: Deliveries;
  schedules: Schedules;
  /** Fires the schedules (the node starts and stops it). */
  scheduler: Scheduler;
  /** Workflow operations and their coordination (the node starts and stops its reconciliation). */
  workflows: Workflows;
  /** Credentials: key lookups, JWTs, revocations. */
  auth: Authenticator;
  sessions: Sessions;
  apiKeys: ApiKeys;
  organizations: Organizations;
  /** The admission of every authenticated request, and its count. */
  limiter: RateLimiter;
  apiCalls: ApiCalls;
  /** The organization's overview (GET /api/v1/dashboard). */
  dashboard: Dashboard;
}

/** `version`: the node's, which the dashboard overview reports. */
export function createApp(ctx: AppContext, version: string): App {
  const jobs = new Jobs(ctx);
  const workers = new Workers(ctx);
  const scheduler = new Scheduler(ctx, jobs);
  const auth = new Authenticator(ctx);
  const limiter = new RateLimiter(ctx.actors, ctx.clock);
  const apiCalls = new ApiCalls(ctx.store, ctx.clock, ctx.log);
  const deliveries = new Deliveries(ctx);
  return {
    ctx,
    jobs,
    queues: new Queues(ctx),
    dlq: new DeadLetters(ctx, jobs),
    workers,
    incomingWebhooks: new IncomingWebhooks(ctx, jobs),
    webhooks: new Webhooks(ctx, deliveries),
    deliveries,
    schedules: new Schedules(ctx, scheduler),
    scheduler,
    workflows: new Workflows(ctx, jobs),
    auth,
    sessions: new Sessions(ctx, auth),
    apiKeys: new ApiKeys(ctx, auth),
    organizations: new Organizations(ctx, limiter, apiCalls),
    limiter,
    apiCalls,
    dashboard: new Dashboard(ctx, workers, version),
  };
}
