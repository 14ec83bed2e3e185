// Dead-letter queue actions: retry (by ids, or a queue's oldest up to a limit; retry count reset) and purge
// (by ids, queue and/or age; `confirm: true` required). Listing is in job-queries.ts.
import Type, { type TObject } from 'typebox';
import { validationError } from '../../../errors.js';
import { purgeDeadLetters } from '../../db/sql/purgeDeadLetters.js';
import { terminalJobs, type TerminalJob } from '../../db/sql/terminalJobs.js';
import type { Request, Response, Route } from '../router.js';
import { DlqPurgeResult, DlqRetryResult } from '../schemas.js';
import { validator } from '../validate.js';
import { QueueName, parseTime, Uuid, workflowJob } from './jobs.js';
import { reviveJobs, type Services } from './services.js';

const MAX_IDS = 100;
const MAX_BY_QUEUE = 1000;

const RetryBody = validator(
  Type.Object({
    job_ids: Type.Optional(Type.Array(Uuid, { minItems: 1, maxItems: MAX_IDS })),
    queue_name: Type.Optional(QueueName),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_BY_QUEUE })),
  }),
);

const PurgeBody = validator(
  Type.Object({
    job_ids: Type.Optional(Type.Array(Uuid, { minItems: 1, maxItems: MAX_IDS })),
    queue_name: Type.Optional(QueueName),
    older_than: Type.Optional(Type.String({ maxLength: 64 })),
    confirm: Type.Optional(Type.Boolean()),
  }),
);

export function dlqRoutes(s: Services): Route[] {
  const retry = async (req: Request): Promise<Response> => {
    const body = RetryBody(req.body);
    if (!body.job_ids && !body.queue_name) {
      throw validationError([{ field: 'job_ids', message: 'job_ids or queue_name is required' }]);
    }
    const org = req.principal.organizationId;
    const ids = body.job_ids?.map((id) => id.toLowerCase());
    const rows = await terminalJobs(s.store, org, {
      ids,
      queue: body.queue_name,
      statuses: ['deadletter'],
      limit: ids ? MAX_IDS : (body.limit ?? 100),
      // Named jobs are all read, so that a workflow job is answered why it was not retried.
      standalone: !ids,
    });
    const byQueue = new Map<string, TerminalJob[]>();
    // Workflow jobs are retried with their workflow (see workflowJob in jobs.ts).
    const inWorkflows = rows.filter((r) => r.workflow_id);
    for (const r of rows) if (!r.workflow_id) byQueue.set(r.queue_name, [...(byQueue.get(r.queue_name) ?? []), r]);
    const outcomes = (
      await Promise.all([...byQueue].map(([queue, jobs]) => reviveJobs(s, org, queue, jobs, ['deadletter'])))
    ).flat();
    const retried = outcomes.filter((o) => o.revived).map((o) => o.id);
    const failed = [
      ...outcomes.flatMap((o) => (o.revived ? [] : [{ id: o.id, error: o.reason }])),
      ...inWorkflows.map((r) => ({ id: r.id, error: workflowJob(r.workflow_id!).message })),
      ...(ids ?? []).filter((id) => !rows.some((r) => r.id === id)).map((id) => ({ id, error: 'not in the dead-letter queue' })),
    ];
    return { status: 200, body: { retried: retried.length, job_ids: retried, failed } };
  };

  const purge = async (req: Request): Promise<Response> => {
    const body = PurgeBody(req.body);
    if (body.confirm !== true) {
      throw validationError([{ field: 'confirm', message: 'must be true: a purge cannot be undone' }]);
    }
    const olderThan = parseTime('older_than', body.older_than);
    const purged = await purgeDeadLetters(s.store, req.principal.organizationId, {
      ids: body.job_ids?.map((id) => id.toLowerCase()) ?? null,
      queue: body.queue_name ?? null,
      olderThan: olderThan === null ? null : new Date(olderThan),
    });
    return { status: 200, body: { purged } };
  };

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
        // job_ids or queue_name: the handler refuses a body with neither.
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
        // confirm: true is checked by the handler (a purge cannot be undone).
        body: Type.Object({ ...(PurgeBody.schema as TObject).properties, confirm: Type.Literal(true) }),
        responses: { 200: { description: 'How many jobs were deleted', schema: DlqPurgeResult } },
      },
    },
  ];
}
