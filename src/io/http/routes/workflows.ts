// Workflow routes (REST adapter): create a dependency graph of jobs, list, get (each job's progress), cancel,
// retry. The operations and the coordination behind them are src/app/workflows.ts; here: the OpenAPI doc and
// presentation.
import Type from 'typebox';
import type { App } from '../../../app/app.js';
import { idOf } from '../../../app/fields.js';
import { CreateWorkflowBody as CreateBody, type WorkflowGraph } from '../../../app/workflows.js';
import { WORKFLOW_MAX_JOBS } from '../../../actors/workflow/graph.js';
import type { WorkflowRow } from '../../db/sql/getWorkflow.js';
import { cursorCodec, pageResponse, parseLimit, readCursor, pagedDoc } from '../cursor.js';
import { isoOf } from '../../present.js';
import { oneOf, single } from '../query.js';
import type { Request, Response, Route } from '../router.js';
import { JobStatus } from '../schemas.js';
import { JOB_ADMISSION } from './jobs.js';

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
      workflow_id: Type.String({ format: 'uuid', description: 'the same as id' }),
      job_ids: Type.Array(Type.String({ format: 'uuid' }), { description: 'the ids of its jobs, in the order of the request' }),
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

function presentDetail(w: WorkflowGraph): Record<string, unknown> {
  return {
    ...presentWorkflow({ ...w, job_count: w.jobs.length }),
    // workflow_id and job_ids: what clients of the hosted service read from the create answer.
    workflow_id: w.id,
    job_ids: w.jobs.map((j) => j.job_id),
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

export function workflowRoutes(app: App): Route[] {
  const { workflows } = app;
  const org = (req: Request) => req.principal.organizationId;
  const workflowId = (req: Request): string => idOf('Workflow', req.params.id!);
  const answer = (w: WorkflowGraph, status = 200): Response => ({ status, body: presentDetail(w) });

  const create = async (req: Request): Promise<Response> => answer(await workflows.create(org(req), CreateBody(req.body)), 201);

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, WORKFLOWS_CURSOR);
    const status = oneOf('status', single(req.query, 'status'), STATUSES);
    const rows = await workflows.list(org(req), { status }, after, limit);
    return pageResponse(req, rows, limit, WORKFLOWS_CURSOR, (r) => [r.cursor_at, r.id], presentWorkflow);
  };

  const get = async (req: Request): Promise<Response> => answer(await workflows.get(org(req), workflowId(req)));
  const cancel = async (req: Request): Promise<Response> => answer(await workflows.cancel(org(req), workflowId(req)));
  const retry = async (req: Request): Promise<Response> => answer(await workflows.retry(org(req), workflowId(req)));

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
          'Jobs without depends_on run first; a job runs once every job it depends on completed. Names (`key` is accepted as another name for `name`) are unique within the workflow; ' +
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
        ...pagedDoc('A page of workflows (without their jobs)', WorkflowSummary, {
          status: { schema: WorkflowStatusSchema, description: 'only workflows in this status' },
        }),
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
