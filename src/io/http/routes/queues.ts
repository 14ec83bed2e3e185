// Queue actions (REST adapter): create, pause, resume, configure, delete. The operations are src/app/queues.ts;
// reads are in queue-queries.ts.
import type { QueueView } from '../../../actors/queue/queue-actor.js';
import type { App } from '../../../app/app.js';
import { CreateQueueBody, PauseBody, QueueConfigBody } from '../../../app/queues.js';
import { isoOf } from '../../present.js';
import type { Request, Response, Route } from '../router.js';
import { Queue, QueueDeleted } from '../schemas.js';

/** `queue_name` repeats `name` (clients of the hosted service read it). */
const presentQueue = (q: QueueView) => ({
  ...q,
  queue_name: q.name,
  paused_at: isoOf(q.paused_at),
  created_at: isoOf(q.created_at),
  updated_at: isoOf(q.updated_at),
});

export function queueRoutes(app: App): Route[] {
  const { queues } = app;
  const org = (req: Request) => req.principal.organizationId;
  const view = (status: number) => (q: QueueView): Response => ({ status, body: presentQueue(q) });
  const handlers = {
    create: async (req: Request) => view(201)(await queues.create(org(req), CreateQueueBody(req.body))),
    pause: async (req: Request) => view(200)(await queues.pause(org(req), req.params.name!, PauseBody(req.body).reason ?? null)),
    resume: async (req: Request) => view(200)(await queues.resume(org(req), req.params.name!)),
    configure: async (req: Request) => view(200)(await queues.configure(org(req), req.params.name!, QueueConfigBody(req.body))),
    delete: async (req: Request): Promise<Response> => ({ status: 200, body: await queues.delete(org(req), req.params.name!) }),
  };

  const ok = (description: string) => ({ 200: { description, schema: Queue } });
  return [
    {
      method: 'POST',
      path: '/api/v1/queues',
      permission: 'queues:write',
      handler: handlers.create,
      doc: {
        operationId: 'createQueue',
        summary: 'Create a queue',
        description: 'name (alias queue_name), with optional defaults for its jobs. 409 if it exists.',
        body: CreateQueueBody.schema,
        responses: { 201: { description: 'Created', schema: Queue } },
        errors: ['QUEUE_EXISTS', 'QUOTA_EXCEEDED', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/queues/:name/pause',
      permission: 'queues:write',
      handler: handlers.pause,
      doc: {
        operationId: 'pauseQueue',
        summary: 'Pause a queue: claims return no jobs until resumed',
        body: PauseBody.schema,
        responses: ok('The paused queue'),
        errors: ['SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/queues/:name/resume',
      permission: 'queues:write',
      handler: handlers.resume,
      doc: { operationId: 'resumeQueue', summary: 'Resume a paused queue', responses: ok('The queue'), errors: ['SHARD_MOVED'] },
    },
    {
      method: 'PUT',
      path: '/api/v1/queues/:name/config',
      permission: 'queues:write',
      handler: handlers.configure,
      doc: {
        operationId: 'configureQueue',
        summary: 'Set the defaults for new jobs and the flow-control limits (null clears one)',
        description: 'concurrency_per_key, max_concurrency and rate_limit {jobs, per_seconds} apply to the next claim (docs/flow-control.md).',
        body: QueueConfigBody.schema,
        responses: ok('The queue'),
        errors: ['SHARD_MOVED'],
      },
    },
    {
      method: 'DELETE',
      path: '/api/v1/queues/:name',
      permission: 'queues:write',
      handler: handlers.delete,
      doc: {
        operationId: 'deleteQueue',
        summary: 'Delete a queue (409 while it has pending, scheduled or processing jobs)',
        responses: { 200: { description: 'Deleted', schema: QueueDeleted } },
        errors: ['QUEUE_NOT_EMPTY', 'SHARD_MOVED'],
      },
    },
  ];
}
