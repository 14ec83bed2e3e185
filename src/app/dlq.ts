// The dead-letter queue: retry (by ids, or a queue's oldest up to a limit; retry counts reset, each revived job
// counted as a creation) and purge (by ids, queue and/or age; `confirm: true` required). The list is the job
// list fixed to `deadletter` (Jobs.list).
import Type from 'typebox';
import { validationError } from '../errors.js';
import { purgeDeadLetters } from '../io/db/sql/purgeDeadLetters.js';
import { terminalJobs, type TerminalJob } from '../io/db/sql/terminalJobs.js';
import { validator, type Valid } from '../io/validate.js';
import type { AppContext } from './context.js';
import { parseTime, QueueName, Uuid } from './fields.js';
import { workflowJob, type Jobs } from './jobs.js';

const MAX_IDS = 100;
const MAX_BY_QUEUE = 1000;

export const DlqRetryBody = validator(
  Type.Object({
    job_ids: Type.Optional(Type.Array(Uuid, { minItems: 1, maxItems: MAX_IDS })),
    queue_name: Type.Optional(QueueName),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_BY_QUEUE })),
  }),
);

export const DlqPurgeBody = validator(
  Type.Object({
    job_ids: Type.Optional(Type.Array(Uuid, { minItems: 1, maxItems: MAX_IDS })),
    queue_name: Type.Optional(QueueName),
    older_than: Type.Optional(Type.String({ maxLength: 64 })),
    confirm: Type.Optional(Type.Boolean()),
  }),
);

export const DLQ_LIMITS = { MAX_IDS, MAX_BY_QUEUE };

export interface DlqRetried {
  retried: number;
  job_ids: string[];
  failed: Array<{ id: string; error: string }>;
}

export class DeadLetters {
  constructor(
    private readonly c: AppContext,
    private readonly jobs: Jobs,
  ) {}

  async retry(org: string, body: Valid<typeof DlqRetryBody>): Promise<DlqRetried> {
    if (!body.job_ids && !body.queue_name) {
      throw validationError([{ field: 'job_ids', message: 'job_ids or queue_name is required' }]);
    }
    const ids = body.job_ids?.map((id) => id.toLowerCase());
    const rows = await terminalJobs(this.c.store, org, {
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
    const outcomes = (await Promise.all([...byQueue.values()].map((jobs) => this.jobs.revive(org, jobs, ['deadletter'])))).flat();
    const retried = outcomes.filter((o) => o.revived).map((o) => o.id);
    const failed = [
      ...outcomes.flatMap((o) => (o.revived ? [] : [{ id: o.id, error: o.reason }])),
      ...inWorkflows.map((r) => ({ id: r.id, error: workflowJob(r.workflow_id!).message })),
      ...(ids ?? []).filter((id) => !rows.some((r) => r.id === id)).map((id) => ({ id, error: 'not in the dead-letter queue' })),
    ];
    return { retried: retried.length, job_ids: retried, failed };
  }

  async purge(org: string, body: Valid<typeof DlqPurgeBody>): Promise<{ purged: number }> {
    if (body.confirm !== true) {
      throw validationError([{ field: 'confirm', message: 'must be true: a purge cannot be undone' }]);
    }
    const olderThan = parseTime('older_than', body.older_than);
    const purged = await purgeDeadLetters(this.c.store, org, {
      ids: body.job_ids?.map((id) => id.toLowerCase()) ?? null,
      queue: body.queue_name ?? null,
      olderThan: olderThan === null ? null : new Date(olderThan),
    });
    return { purged };
  }
}
