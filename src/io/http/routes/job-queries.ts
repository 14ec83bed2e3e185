// The read side of jobs (REST adapter): the list (and the DLQ list, the same list fixed to deadletter), batch
// status, counts per status, and a job's neighbours in its workflow. Query strings are parsed here; the reads are src/app/jobs.ts.
import Type from 'typebox';
import type { JobStatus } from '../../../actors/records.js';
import { validationError } from '../../../errors.js';
import type { App } from '../../../app/app.js';
import { idOf, isUuid, queueNameValid } from '../../../app/fields.js';
import { MAX_STATUS_IDS } from '../../../app/jobs.js';
import type { Dependency } from '../../db/sql/jobDependencies.js';
import { JOB_STATUSES } from '../../db/sql/jobStats.js';
import type { JobFilter, JobKey } from '../../db/sql/listJobs.js';
import type { Row } from '../../db/store.js';
import { cursorCodec, pageResponse, parseLimit, readCursor, pagedDoc } from '../cursor.js';
import { isoOf, presentJob } from '../../present.js';
import { isoTime, oneOf, single, tagFilters } from '../query.js';
import type { Request, Response, Route, RouteDoc } from '../router.js';
import { Job, JobDependencies, JobStats, JobStatus as JobStatusSchema, JobStatusLine } from '../schemas.js';

/** Keyset over (created_at, id), newest first. The DLQ list names itself, so its cursors fail on the job list. */
const JOBS_CURSOR = cursorCodec('jobs', ['time', 'uuid']);
const DLQ_CURSOR = cursorCodec('dlq', ['time', 'uuid']);


/** `queue_name` (alias `queue`): a queue name, or 422. */
function queueFilter(q: URLSearchParams): string | null {
  const name = single(q, 'queue_name', 'queue');
  if (name !== null && !queueNameValid(name)) {
    throw validationError(
      [{ field: 'queue_name', message: 'must be 1 to 100 characters of A-Z a-z 0-9 . _ -, not starting with . or -' }],
      'queue_name is not a valid queue name',
    );
  }
  return name;
}

function jobFilter(q: URLSearchParams, status: JobStatus | null): JobFilter {
  const tags = tagFilters(q);
  const createdAfter = isoTime('created_after', single(q, 'created_after'));
  const createdBefore = isoTime('created_before', single(q, 'created_before'));
  return { queueName: queueFilter(q), status, tagKeys: tags.keys, tagValues: tags.values, createdAfter, createdBefore };
}

// What the OpenAPI document says of these routes.
const Time = Type.String({ format: 'date-time' });
/** The filters of the job lists. */
const FILTERS: NonNullable<RouteDoc['query']> = {
  queue_name: { schema: Type.String(), description: 'only this queue (alias: queue)' },
  queue: { schema: Type.String(), description: 'alias of queue_name' },
  tag: { schema: Type.String(), description: '"key" (has the tag) or "key:value"; repeatable, all must match' },
  created_after: { schema: Time, description: 'created strictly after this instant' },
  created_before: { schema: Time, description: 'created strictly before this instant' },
};

const keyOf = (row: Row): JobKey => [row.cursor_at as string, row.id as string];

export function jobQueryRoutes(app: App): Route[] {
  const page = async (req: Request, codec: typeof JOBS_CURSOR, status: JobStatus | null): Promise<Response> => {
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, codec);
    const filter = jobFilter(req.query, status);
    const rows = await app.jobs.list(req.principal.organizationId, filter, after, limit);
    return pageResponse(req, rows, limit, codec, keyOf, presentJob);
  };

  const list = (req: Request) => page(req, JOBS_CURSOR, oneOf('status', single(req.query, 'status'), JOB_STATUSES));

  // Fixed to deadletter; a `status` parameter is not a filter here and is ignored.
  const dlq = (req: Request) => page(req, DLQ_CURSOR, 'deadletter');

  const status = async (req: Request): Promise<Response> => {
    const given = req.query
      .getAll('ids')
      .flatMap((v) => v.split(','))
      .map((v) => v.trim())
      .filter((v) => v.length > 0);
    if (given.length === 0) {
      throw validationError([{ field: 'ids', message: 'is required: a comma-separated list of job ids' }], 'ids is required');
    }
    if (given.length > MAX_STATUS_IDS) {
      throw validationError([{ field: 'ids', message: `must hold at most ${MAX_STATUS_IDS} ids` }], `at most ${MAX_STATUS_IDS} ids per request`);
    }
    const bad = given.filter((id) => !isUuid(id));
    if (bad.length > 0) {
      throw validationError(
        bad.slice(0, 10).map((id) => ({ field: 'ids', message: `"${id.slice(0, 64)}" is not a job id` })),
        'ids must be job ids (UUIDs)',
      );
    }
    const rows = await app.jobs.statuses(req.principal.organizationId, given.map((id) => id.toLowerCase()));
    return { status: 200, body: rows.map((r) => ({ id: r.id, status: r.status, queue_name: r.queue_name, retry_count: r.retry_count, updated_at: isoOf(r.updated_at) })) };
  };

  const stats = async (req: Request): Promise<Response> => {
    const queueName = queueFilter(req.query);
    const counts = await app.jobs.stats(req.principal.organizationId, queueName);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    // The counts also at the top level: clients written for the hosted service read them there.
    return { status: 200, body: { queue_name: queueName, counts, total, ...counts } };
  };

  const dependencies = async (req: Request): Promise<Response> => {
    const id = idOf('Job', req.params.id!);
    const n = await app.workflows.neighbours(req.principal.organizationId, id);
    const entry = (d: Dependency) => ({ id: d.job_id, job_id: d.job_id, name: d.name, status: d.status });
    return { status: 200, body: { job_id: id, workflow_id: n.workflow_id, dependencies: n.dependencies.map(entry), dependents: n.dependents.map(entry) } };
  };

  return [
    {
      method: 'GET',
      path: '/api/v1/jobs/:id/dependencies',
      permission: 'jobs:read',
      handler: dependencies,
      doc: {
        operationId: 'listJobDependencies',
        summary: "A job's dependencies and dependents in its workflow",
        description:
          'dependencies: the jobs it waits for (its depends_on); dependents: the jobs that wait for it; each with its id, its name in the ' +
          'workflow and its status. Both empty for a job outside any workflow. Jobs deleted by retention are left out.',
        responses: { 200: { description: 'Its neighbours in the workflow graph', schema: JobDependencies } },
      },
    },
    {
      method: 'GET',
      path: '/api/v1/jobs',
      permission: 'jobs:read',
      handler: list,
      doc: {
        operationId: 'listJobs',
        summary: 'List jobs, newest first, a page at a time',
        description: 'Ordered by created_at then id, descending. The cursor is a keyset: pages stay stable while jobs are inserted.',
        ...pagedDoc('A page of jobs', Job, { ...FILTERS, status: { schema: JobStatusSchema, description: 'only jobs in this status' } }),
      },
    },
    {
      method: 'GET',
      path: '/api/v1/jobs/status',
      permission: 'jobs:read',
      handler: status,
      doc: {
        operationId: 'getJobStatuses',
        summary: 'Batch status of up to 100 jobs',
        description: 'In the order asked; ids that do not exist in the organization are left out.',
        query: { ids: { schema: Type.String(), required: true, description: 'comma-separated job ids (repeatable), at most 100' } },
        responses: {
          200: {
            description: 'One line per known job',
            schema: Type.Array(JobStatusLine),
          },
        },
      },
    },
    {
      method: 'GET',
      path: '/api/v1/jobs/stats',
      permission: 'jobs:read',
      handler: stats,
      doc: {
        operationId: 'getJobStats',
        summary: 'Job counts per status, for the organization or one queue',
        query: { queue_name: FILTERS.queue_name!, queue: FILTERS.queue! },
        responses: {
          200: {
            description: 'Counts (every status present)',
            schema: JobStats,
          },
        },
      },
    },
    {
      method: 'GET',
      path: '/api/v1/jobs/dlq',
      permission: 'dlq:read',
      handler: dlq,
      doc: {
        operationId: 'listDeadLetterJobs',
        summary: 'List dead-lettered jobs, with payloads and error history',
        description: 'GET /api/v1/jobs fixed to status deadletter (a status parameter is ignored); its own cursors.',
        ...pagedDoc('A page of dead-lettered jobs', Job, FILTERS),
      },
    },
  ];
}
