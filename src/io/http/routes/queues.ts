// Queue actions, each run by the queue's actor: create, pause (claims answer {jobs: []} at once), resume,
// configure, delete (409 while live jobs remain). Reads are in queue-queries.ts.
import Type from 'typebox';
import { notFound, validationError } from '../../../errors.js';
import type { QueueView } from '../../../actors/queue/queue-actor.js';
import type { Request, Response, Route } from '../router.js';
import { validator } from '../validate.js';
import { isoOf } from '../present.js';
import { Queue, QueueDeleted } from '../schemas.js';
import { QueueName, QUEUE_NAME_PATTERN } from './jobs.js';
import type { Services } from './services.js';

const MaxRetries = Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()]);
const LeaseSecs = Type.Union([Type.Integer({ minimum: 5, maximum: 3600 }), Type.Null()]);

const CreateBody = validator(
  Type.Object({
    name: Type.Optional(QueueName),
    queue_name: Type.Optional(QueueName),
    max_retries: Type.Optional(MaxRetries),
    lease_duration_secs: Type.Optional(LeaseSecs),
  }),
);
const PauseBody = validator(Type.Object({ reason: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()])) }));
const ConfigBody = validator(Type.Object({ max_retries: Type.Optional(MaxRetries), lease_duration_secs: Type.Optional(LeaseSecs) }));

const presentQueue = (q: QueueView) => ({ ...q, created_at: isoOf(q.created_at), updated_at: isoOf(q.updated_at) });

function queueName(req: Request): string {
  const name = req.params.name!;
  if (!QUEUE_NAME_PATTERN.test(name)) throw notFound(`Queue '${name}'`);
  return name;
}

export function queueRoutes(s: Services): Route[] {
  const act =
    (op: 'pause' | 'resume' | 'configure' | 'deleteQueue', args: (req: Request) => unknown) =>
    async (req: Request): Promise<Response> => {
      const name = queueName(req);
      const reply = await s.pool.ask<QueueView | { name: string; deleted: true }>(req.principal.organizationId, name, op, args(req));
      return { status: 200, body: 'deleted' in reply ? reply : presentQueue(reply) };
    };

  const create = async (req: Request): Promise<Response> => {
    const body = CreateBody(req.body);
    const name = body.name ?? body.queue_name;
    if (!name) throw validationError([{ field: 'name', message: 'is required' }]);
    const org = req.principal.organizationId;
    await s.quotas.reserve(org, 'queues');
    try {
      const reply = await s.pool.ask<QueueView>(org, name, 'createQueue', {
        max_retries: body.max_retries ?? null,
        lease_duration_secs: body.lease_duration_secs ?? null,
      });
      return { status: 201, body: presentQueue(reply) };
    } catch (err) {
      s.quotas.release(org, 'queues');
      throw err;
    }
  };

  const ok = (description: string) => ({ 200: { description, schema: Queue } });
  return [
    {
      method: 'POST',
      path: '/api/v1/queues',
      permission: 'queues:write',
      handler: create,
      doc: {
        operationId: 'createQueue',
        summary: 'Create a queue',
        description: 'name (alias queue_name), with optional defaults for its jobs. 409 if it exists.',
        body: CreateBody.schema,
        responses: { 201: { description: 'Created', schema: Queue } },
        errors: ['CONFLICT', 'QUOTA_EXCEEDED', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/queues/:name/pause',
      permission: 'queues:write',
      handler: act('pause', (req) => ({ reason: PauseBody(req.body).reason ?? null })),
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
      handler: act('resume', () => ({})),
      doc: { operationId: 'resumeQueue', summary: 'Resume a paused queue', responses: ok('The queue'), errors: ['SHARD_MOVED'] },
    },
    {
      method: 'PUT',
      path: '/api/v1/queues/:name/config',
      permission: 'queues:write',
      handler: act('configure', (req) => ConfigBody(req.body)),
      doc: {
        operationId: 'configureQueue',
        summary: 'Set the defaults for new jobs (null clears one)',
        body: ConfigBody.schema,
        responses: ok('The queue'),
        errors: ['SHARD_MOVED'],
      },
    },
    {
      method: 'DELETE',
      path: '/api/v1/queues/:name',
      permission: 'queues:write',
      handler: act('deleteQueue', () => ({})),
      doc: {
        operationId: 'deleteQueue',
        summary: 'Delete a queue (409 while it has pending, scheduled or processing jobs)',
        responses: { 200: { description: 'Deleted', schema: QueueDeleted } },
        errors: ['CONFLICT', 'SHARD_MOVED'],
      },
    },
  ];
}
