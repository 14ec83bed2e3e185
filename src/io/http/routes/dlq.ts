// Dead-letter queue actions (REST adapter): retry and purge. The operations are src/app/dlq.ts; the list is
// in job-queries.ts.
import type { App } from '../../../app/app.js';
import { DLQ_LIMITS, DlqPurgeBody, DlqRetryBody } from '../../../app/dlq.js';
import type { Request, Response, Route } from '../router.js';

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
        summary: 'Retry dead-lettered jobs',
        description: `By job_ids (up to ${MAX_IDS}), or the oldest of queue_name up to limit (default 100, at most ${MAX_BY_QUEUE}). Retry counts are reset.`,
        body: DlqRetryBody.schema,
        responses: { 200: { description: '{retried, job_ids, failed: [{id, error}]}' } },
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/dlq/purge',
      permission: 'dlq:write',
      handler: purge,
      doc: {
        summary: 'Delete dead-lettered jobs',
        description: 'Every given filter applies (job_ids, queue_name, older_than: dead-lettered before that instant). confirm: true is required.',
        body: DlqPurgeBody.schema,
        responses: { 200: { description: '{purged}' } },
      },
    },
  ];
}
