// Workflow routes: create a dependency graph of jobs, list, get (each job's progress), cancel, retry. The
// coordination behind them is src/runtime/workflows.ts; what the routes add is validation and presentation.
import Type from 'typebox';
import { graphProblems, WORKFLOW_MAX_JOBS } from '../../../actors/workflow/graph.js';
import { notFound, validationError } from '../../../errors.js';
import type { WorkflowCoordinator } from '../../../runtime/workflows.js';
import { getWorkflow, type WorkflowJobRow, type WorkflowRow } from '../../db/sql/getWorkflow.js';
import { listWorkflows } from '../../db/sql/listWorkflows.js';
import { cursorCodec, pageResponse, parseLimit, readCursor } from '../cursor.js';
import { isoOf } from '../../present.js';
import { oneOf, single } from '../query.js';
import type { Request, Response, Route } from '../router.js';
import { JobStatus, JsonObject } from '../schemas.js';
import { validator } from '../../validate.js';
import { QueueName } from '../../../app/fields.js';
import { JOB_ADMISSION } from './jobs.js';
import type { Services } from './services.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const JobName = Type.String({ minLength: 1, maxLength: 100 });

const CreateBody = validator(
  Type.Object({
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
    jobs: Type.Array(
      Type.Object({
        name: JobName,
        queue_name: QueueName,
        payload: JsonObject,
        depends_on: Type.Optional(Type.Array(JobName, { maxItems: WORKFLOW_MAX_JOBS, uniqueItems: true })),
        priority: Type.Optional(Type.Integer({ minimum: -100, maximum: 100 })),
        max_retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
        timeout_seconds: Type.Optional(Type.Integer({ minimum: 5, maximum: 3600 })),
        tags: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 100 }), Type.String({ maxLength: 256 }))),
      }),
      { minItems: 1, maxItems: WORKFLOW_MAX_JOBS },
    ),
  }),
);

const STATUSES = ['creating', 'running', 'completed', 'failed', 'cancelled'] as const;
const WorkflowStatusSchema = Type.Union(STATUSES.map((s) => Type.Literal(s)), { $id: 'WorkflowStatus' });
const Time = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const WorkflowSummary = Type.Object(
  {
  id: Type.String({ format: 'uuid' }),
  organization_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  status: WorkflowStatusSchema,
  job_count: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  completed_at: Time,
  },
  { $id: 'WorkflowSummary' },
);
const WorkflowDetail = Type.Intersect(
  [
    WorkflowSummary,
    Type.Object({
      jobs: Type.Array(
      Type.Object({
        name: Type.String(),
        id: Type.String({ format: 'uuid' }),
        queue_name: Type.String(),
        status: Type.Union([JobStatus, Type.Null()], { description: 'the job status; null once retention deleted the job' }),
        depends_on: Type.Array(Type.String()),
        dependencies_met: Type.Boolean(),
      }),
    ),
    }),
  ],
  { $id: 'Workflow' },
);

/** Keyset over (created_at, id), newest first. */
const WORKFLOWS_CURSOR = cursorCodec('workflows', ['time', 'uuid']);

function presentWorkflow(w: WorkflowRow & { job_count: number }): Record<string, unknown> {
  return {
    id: w.id,
    organization_id: w.organization_id,
    name: w.name,
    status: w.status,
    job_count: w.job_count,
    created_at: isoOf(w.created_at),
    updated_at: isoOf(w.updated_at),
    completed_at: isoOf(w.completed_at),
  };
}

function presentDetail(w: WorkflowRow & { jobs: WorkflowJobRow[] }): Record<string, unknown> {
  return {
    ...presentWorkflow({ ...w, job_count: w.jobs.length }),
    jobs: w.jobs.map((j) => ({
      name: j.name,
      id: j.job_id,
      queue_name: j.queue_name,
      status: j.status,
      depends_on: j.depends_on,
      dependencies_met: j.dependencies_met ?? true,
    })),
  };
}

export function workflowRoutes(s: Services, workflows: WorkflowCoordinator): Route[] {
  const idOf = (req: Request): string => {
    const id = req.params.id!;
    if (!UUID.test(id)) throw notFound('Workflow');
    return id.toLowerCase();
  };

  const detail = async (org: string, id: string, status = 200): Promise<Response> => {
    const w = await getWorkflow(s.store, org, id);
    if (!w) throw notFound('Workflow');
    return { status, body: presentDetail(w) };
  };

  const create = async (req: Request): Promise<Response> => {
    const body = CreateBody(req.body);
    const jobs = body.jobs.map((j) => ({ ...j, depends_on: j.depends_on ?? [] }));
    const problems = graphProblems(jobs);
    if (problems.length > 0) throw validationError(problems, `${problems[0]!.field} ${problems[0]!.message}`);
    const org = req.principal.organizationId;
    const id = await workflows.create(
      org,
      body.name,
      jobs.map((j) => ({
        name: j.name,
        queue_name: j.queue_name,
        payload: j.payload,
        depends_on: j.depends_on,
        priority: j.priority ?? 0,
        max_retries: j.max_retries ?? null,
        timeout_seconds: j.timeout_seconds ?? null,
        tags: j.tags ?? {},
      })),
    );
    return detail(org, id, 201);
  };

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, WORKFLOWS_CURSOR);
    const status = oneOf('status', single(req.query, 'status'), STATUSES);
    const rows = await listWorkflows(s.store, req.principal.organizationId, { status }, after, limit);
    return pageResponse(req, rows, limit, WORKFLOWS_CURSOR, (r) => [r.cursor_at, r.id], presentWorkflow);
  };

  const get = (req: Request): Promise<Response> => detail(req.principal.organizationId, idOf(req));

  const cancel = async (req: Request): Promise<Response> => {
    const org = req.principal.organizationId;
    const id = idOf(req);
    await workflows.cancel(org, id);
    return detail(org, id);
  };

  const retry = async (req: Request): Promise<Response> => {
    const org = req.principal.organizationId;
    const id = idOf(req);
    await workflows.retry(org, id);
    return detail(org, id);
  };

  const one = (description: string) => ({ 200: { description, schema: WorkflowDetail } });
  return [
    {
      method: 'POST',
      path: '/api/v1/workflows',
      permission: 'jobs:write',
      handler: create,
      doc: {
        operationId: 'createWorkflow',
        summary: `Create a workflow: a dependency graph of 1 to ${WORKFLOW_MAX_JOBS} jobs`,
        description:
          'Jobs without depends_on run first; a job runs once every job it depends on completed. Names are unique within the workflow; ' +
          'unknown names, self-dependencies and cycles are 422. Not available on the Free plan; every job counts against the job quotas. ' +
          'A job that is dead-lettered or cancelled cancels the jobs that depend on it, directly or not.',
        body: CreateBody.schema,
        responses: { 201: { description: 'The running workflow with its jobs', schema: WorkflowDetail } },
        errors: JOB_ADMISSION,
      },
    },
    {
      method: 'GET',
      path: '/api/v1/workflows',
      permission: 'jobs:read',
      handler: list,
      doc: {
        operationId: 'listWorkflows',
        summary: "List the organization's workflows, newest first, a page at a time",
        query: {
          limit: { schema: Type.Integer({ minimum: 1, maximum: 100, default: 20 }), description: 'page size' },
          cursor: { schema: Type.String(), description: 'X-Next-Cursor of the previous page (opaque)' },
          status: { schema: WorkflowStatusSchema, description: 'only workflows in this status' },
        },
        responses: {
          200: {
            description: 'A page of workflows (without their jobs)',
            schema: Type.Array(WorkflowSummary),
            headers: { 'X-Next-Cursor': 'absent on the last page', Link: '<…&cursor={next}>; rel="next"; absent on the last page' },
          },
        },
      },
    },
    {
      method: 'GET',
      path: '/api/v1/workflows/:id',
      permission: 'jobs:read',
      handler: get,
      doc: { operationId: 'getWorkflow', summary: 'Get a workflow with the status of each of its jobs', responses: one('The workflow') },
    },
    {
      method: 'POST',
      path: '/api/v1/workflows/:id/cancel',
      permission: 'jobs:write',
      handler: cancel,
      doc: {
        operationId: 'cancelWorkflow',
        summary: 'Cancel a running (or failed) workflow: every job not finished is cancelled',
        description: '409 when the workflow is completed or cancelled already.',
        responses: one('The cancelled workflow'),
        errors: ['WORKFLOW_NOT_LIVE', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/workflows/:id/retry',
      permission: 'jobs:write',
      handler: retry,
      doc: {
        operationId: 'retryWorkflow',
        summary: 'Retry a failed or cancelled workflow end to end',
        description:
          'Its dead-lettered and cancelled jobs come back with a fresh retry budget (each counts as a job creation against the quotas, ' +
          'checked first, and the workflow takes a workflows slot again); a job whose parents have not completed waits for them. ' +
          '409 for a running or completed workflow.',
        responses: one('The running workflow'),
        errors: ['WORKFLOW_NOT_LIVE', ...JOB_ADMISSION],
      },
    },
  ];
}
