// Schedule routes (REST adapter): create, list, get, update, delete, pause, resume, manual trigger (two paths),
// and the run history (two paths: /runs, and /history as clients of the hosted service call it). The operations
// are src/app/schedules.ts; here: the OpenAPI doc and presentation. Reads need jobs:read, writes jobs:write.
import Type from 'typebox';
import type { App } from '../../../app/app.js';
import { idOf } from '../../../app/fields.js';
import type { RunRecord } from '../../../app/scheduler.js';
import { CreateScheduleBody as CreateBody, TriggerScheduleBody as TriggerBody, UpdateScheduleBody as UpdateBody } from '../../../app/schedules.js';
import type { ScheduleRow } from '../../db/sql/getSchedule.js';
import type { ScheduleRunRow } from '../../db/sql/listScheduleRuns.js';
import { cursorCodec, pageResponse, parseLimit, readCursor, pagedDoc } from '../cursor.js';
import { isoOf, presentJob } from '../../present.js';
import type { Request, Response, Route } from '../router.js';
import { Deleted, Job, JsonObject } from '../schemas.js';
import { JOB_ADMISSION } from './jobs.js';

/** Keyset over (created_at, id), newest first. */
const SCHEDULES_CURSOR = cursorCodec('schedules', ['time', 'uuid']);
/** Keyset over (triggered_at, id), newest first. */
const RUNS_CURSOR = cursorCodec('schedule-runs', ['time', 'uuid']);

const Time = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const Schedule = Type.Object({
  id: Type.String({ format: 'uuid' }),
  organization_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  cron_expression: Type.String(),
  timezone: Type.String(),
  queue_name: Type.String(),
  payload_template: JsonObject,
  priority: Type.Integer(),
  max_retries: Type.Union([Type.Integer(), Type.Null()], { description: 'null: the queue or service default' }),
  timeout_seconds: Type.Union([Type.Integer(), Type.Null()], { description: 'null: the service default' }),
  paused: Type.Boolean(),
  is_active: Type.Boolean({ description: 'not paused (the same fact as paused, as clients of the hosted service read it)' }),
  next_run_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'null while paused' }),
  last_run_at: Time,
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
}, { $id: 'Schedule' });
const Run = Type.Object({
  id: Type.String({ format: 'uuid' }),
  schedule_id: Type.String({ format: 'uuid' }),
  scheduled_for: Type.String({ format: 'date-time', description: 'the cron time (a manual run: the trigger time)' }),
  triggered_at: Type.String({ format: 'date-time' }),
  manual: Type.Boolean(),
  job_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
  status: Type.Union([Type.Literal('enqueued'), Type.Literal('failed')]),
  error: Type.Union([Type.String(), Type.Null()], { description: 'why a failed run made no job (a quota, for instance)' }),
}, { $id: 'ScheduleRun' });

function presentSchedule(row: ScheduleRow): Record<string, unknown> {
  return {
    id: row.id,
    organization_id: row.organization_id,
    name: row.name,
    description: row.description,
    cron_expression: row.cron_expression,
    timezone: row.timezone,
    queue_name: row.queue_name,
    payload_template: row.payload_template,
    priority: row.priority,
    max_retries: row.max_retries,
    timeout_seconds: row.timeout_seconds,
    paused: row.paused,
    is_active: !row.paused,
    next_run_at: isoOf(row.next_run_at),
    last_run_at: isoOf(row.last_run_at),
    created_at: isoOf(row.created_at),
    updated_at: isoOf(row.updated_at),
  };
}

function presentRun(r: RunRecord | ScheduleRunRow): Record<string, unknown> {
  return {
    id: r.id,
    schedule_id: r.schedule_id,
    scheduled_for: isoOf(r.scheduled_for),
    triggered_at: isoOf(r.triggered_at),
    manual: r.manual,
    job_id: r.job_id,
    status: r.status,
    error: r.error,
  };
}

export function scheduleRoutes(app: App): Route[] {
  const { schedules } = app;
  const org = (req: Request) => req.principal.organizationId;
  const scheduleId = (req: Request): string => idOf('Schedule', req.params.id!);
  const answer = (row: ScheduleRow): Response => ({ status: 200, body: presentSchedule(row) });

  const create = async (req: Request): Promise<Response> => ({
    status: 201,
    body: presentSchedule(await schedules.create(org(req), CreateBody(req.body))),
  });

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const rows = await schedules.list(org(req), readCursor(req.query, SCHEDULES_CURSOR), limit);
    return pageResponse(req, rows, limit, SCHEDULES_CURSOR, (r) => [r.cursor_at, r.id], presentSchedule);
  };

  const get = async (req: Request): Promise<Response> => answer(await schedules.get(org(req), scheduleId(req)));
  const update = async (req: Request): Promise<Response> => {
    const body = UpdateBody(req.body);
    return answer(await schedules.update(org(req), scheduleId(req), body));
  };
  const remove = async (req: Request): Promise<Response> => ({ status: 200, body: await schedules.delete(org(req), scheduleId(req)) });
  const pause = async (req: Request): Promise<Response> => answer(await schedules.pause(org(req), scheduleId(req)));
  const resume = async (req: Request): Promise<Response> => answer(await schedules.resume(org(req), scheduleId(req)));

  const trigger = async (org: string, id: string): Promise<Response> => {
    const { run, job } = await schedules.trigger(org, idOf('Schedule', id));
    return { status: 201, body: { ...presentRun(run), job: presentJob(job) } };
  };

  const runs = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const rows = await schedules.runs(org(req), scheduleId(req), readCursor(req.query, RUNS_CURSOR), limit);
    return pageResponse(req, rows, limit, RUNS_CURSOR, (r) => [r.cursor_at, r.id], presentRun);
  };

  const one = (description: string) => ({ 200: { description, schema: Schedule } });
  const Triggered = Type.Intersect([Run, Type.Object({ job: Job })], { $id: 'TriggeredRun' });
  const triggerDoc = {
    description: 'Enqueues the job now, counted against jobs_per_day and active_jobs (429 at the limit), and records a manual run.',
    responses: { 201: { description: 'The manual run, with its job', schema: Triggered } },
    errors: JOB_ADMISSION,
  };

  return [
    {
      method: 'POST',
      path: '/api/v1/schedules',
      permission: 'jobs:write',
      handler: create,
      doc: {
        operationId: 'createSchedule',
        summary: 'Create a schedule',
        description:
          'A 6-field cron expression (with seconds) in an IANA time zone; each fire enqueues payload_template into queue_name. Quota: schedules. 413 when payload_template exceeds the plan payload cap.',
        body: CreateBody.schema,
        responses: { 201: { description: 'The schedule, with its first fire time', schema: Schedule } },
        errors: ['QUOTA_EXCEEDED'],
      },
    },
    {
      method: 'GET',
      path: '/api/v1/schedules',
      permission: 'jobs:read',
      handler: list,
      doc: { operationId: 'listSchedules', summary: "List the organization's schedules, newest first, a page at a time", ...pagedDoc('A page of schedules', Schedule) },
    },
    { method: 'GET', path: '/api/v1/schedules/:id', permission: 'jobs:read', handler: get, doc: { operationId: 'getSchedule', summary: 'Get a schedule', responses: one('The schedule') } },
    {
      method: 'PUT',
      path: '/api/v1/schedules/:id',
      permission: 'jobs:write',
      handler: update,
      doc: {
        operationId: 'updateSchedule',
        summary: 'Update a schedule',
        description: 'Fields left out keep their value; null clears max_retries or timeout_seconds. The next fire time is recomputed from now.',
        body: UpdateBody.schema,
        responses: one('The updated schedule'),
      },
    },
    {
      method: 'DELETE',
      path: '/api/v1/schedules/:id',
      permission: 'jobs:write',
      handler: remove,
      doc: {
        operationId: 'deleteSchedule',
        summary: 'Delete a schedule and its run history (its jobs stay)',
        responses: { 200: { description: 'Deleted', schema: Deleted } },
      },
    },
    {
      method: 'POST',
      path: '/api/v1/schedules/:id/pause',
      permission: 'jobs:write',
      handler: pause,
      doc: { operationId: 'pauseSchedule', summary: 'Pause a schedule (it stops firing)', responses: one('The paused schedule') },
    },
    {
      method: 'POST',
      path: '/api/v1/schedules/:id/resume',
      permission: 'jobs:write',
      handler: resume,
      doc: { operationId: 'resumeSchedule', summary: 'Resume a schedule from now (fire times missed while paused are skipped)', responses: one('The schedule, with its next fire time') },
    },
    {
      method: 'POST',
      path: '/api/v1/schedules/trigger',
      permission: 'jobs:write',
      handler: (req) => trigger(req.principal.organizationId, TriggerBody(req.body).schedule_id),
      doc: {
        operationId: 'triggerScheduleById',
        summary: 'Trigger a schedule now (its id in the body)',
        body: TriggerBody.schema,
        ...triggerDoc,
        errors: [...triggerDoc.errors, 'NOT_FOUND'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/schedules/:id/trigger',
      permission: 'jobs:write',
      handler: (req) => trigger(req.principal.organizationId, req.params.id!),
      doc: { operationId: 'triggerSchedule', summary: 'Trigger a schedule now', ...triggerDoc },
    },
    {
      method: 'GET',
      path: '/api/v1/schedules/:id/runs',
      permission: 'jobs:read',
      handler: runs,
      doc: { operationId: 'listScheduleRuns', summary: "A schedule's runs (automatic and manual), newest first", ...pagedDoc('A page of runs', Run) },
    },
    {
      // The name clients of the hosted service use for the same list: the same answer and cursors as /runs.
      method: 'GET',
      path: '/api/v1/schedules/:id/history',
      permission: 'jobs:read',
      handler: runs,
      doc: {
        operationId: 'listScheduleHistory',
        summary: "A schedule's execution history: the same list as /runs (same paging, same cursors)",
        ...pagedDoc('A page of runs', Run),
      },
    },
  ];
}
