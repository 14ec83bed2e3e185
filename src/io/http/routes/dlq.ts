// Dead-letter queue actions (REST adapter): retry and purge. The operations are src/app/dlq.ts; the list is
// in job-queries.ts.
import Type, { type TObject } from 'typebox';
import type { App } from '../../../app/app.js';
import { DLQ_LIMITS, DlqPurgeBody, DlqRetryBody } from '../../../app/dlq.js';
import { QueueName, Uuid } from '../../../app/fields.js';
import type { Request, Response, Route } from '../router.js';
import { DlqPurgeResult, DlqRetryResult } from '../schemas.js';

const { MAX_IDS, MAX_BY_QUEUE } = DLQ_LIMITS;

export function dlqRoutes(app: App): Route[] {
  const retry = async (req: Request): Promise<Response> => ({ status: 200, body: await app.dlq.retry(req.principal.organizationId, DlqRetryBody(req.body)) });
  const purge = async (req: Request): Promise<Response> => ({ status: 200, body: await app.dlq.purge(req.principal.organizationId, DlqPurgeBody(req.body)) });

  return [
    {
      method: 'POST',
      path: '/api/v1/jobs/dlq/retry',
      permission: 'dlq:write',
      handler: retry,
      doc: {
        operationId: 'retryDeadLetterJobs',
        summary: 'Retry dead-lettered jobs',
        description: `By job_ids (up to ${MAX_IDS}), or the oldest of queue_name up to limit (default 100, at most ${MAX_BY_QUEUE}). Retry counts are reset.`,
        // job_ids or queue_name: the use case refuses a body with neither.
        body: Type.Union([
          Type.Object({ job_ids: Type.Array(Uuid, { minItems: 1, maxItems: MAX_IDS }) }),
          Type.Object({ queue_name: QueueName, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_BY_QUEUE })) }),
        ]),
        responses: { 200: { description: 'What was retried, and why the others were not', schema: DlqRetryResult } },
        errors: ['QUOTA_EXCEEDED', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/dlq/purge',
      permission: 'dlq:write',
      handler: purge,
      doc: {
        operationId: 'purgeDeadLetterJobs',
        summary: 'Delete dead-lettered jobs',
        description: 'Every given filter applies (job_ids, queue_name, older_than: dead-lettered before that instant). confirm: true is required.',
        // confirm: true is checked by the use case (a purge cannot be undone).
        body: Type.Object({ ...(DlqPurgeBody.schema as TObject).properties, confirm: Type.Literal(true) }),
        responses: { 200: { description: 'How many jobs were deleted', schema: DlqPurgeResult } },
      },
    },
  ];
}
