// Schedule routes: create (quota `schedules`), list, get, update, delete, pause, resume, manual trigger, and
// the run history. Each committed change is handed to the scheduler, which keeps the next fire times. Reads
// need jobs:read, writes jobs:write.
import { randomUUID } from 'node:crypto';
import Type from 'typebox';
import { upgradeTo } from '../../../actors/org/plans.js';
import { AppError, notFound, validationError } from '../../../errors.js';
import { cronProblems, nextFire } from '../../../runtime/cron.js';
import type { RunRecord, Scheduler } from '../../../runtime/scheduler.js';
import { createSchedule, type ScheduleFields } from '../../db/sql/createSchedule.js';
import { deleteSchedule } from '../../db/sql/deleteSchedule.js';
import { getSchedule, type ScheduleRow } from '../../db/sql/getSchedule.js';
import { listScheduleRuns, type ScheduleRunRow } from '../../db/sql/listScheduleRuns.js';
import { listSchedules } from '../../db/sql/listSchedules.js';
import { setSchedulePaused } from '../../db/sql/setSchedulePaused.js';
import { updateSchedule } from '../../db/sql/updateSchedule.js';
import { cursorCodec, pageResponse, parseLimit, readCursor } from '../cursor.js';
import { isoOf, presentJob } from '../../present.js';
import type { Request, Response, Route } from '../router.js';
import { Deleted, Job, JsonObject } from '../schemas.js';
import { validator } from '../../validate.js';
import { LeaseSecs, MaxRetries, Priority, QueueName, Uuid } from '../../../app/fields.js';
import { JOB_ADMISSION } from './jobs.js';
import type { Services } from './services.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const Definition = {
  name: Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' }),
  cron_expression: Type.String({
    minLength: 1,
    maxLength: 200,
    description: '6 fields: second minute hour day-of-month month day-of-week, e.g. "0 */5 * * * *"',
  }),
  timezone: Type.String({ minLength: 1, maxLength: 100, description: 'IANA time zone name; default UTC' }),
  queue_name: QueueName,
  payload_template: Type.Unsafe<Record<string, unknown>>(Type.Object({}, { additionalProperties: true, description: 'the payload of every job it creates' })),
  priority: Priority,
  max_retries: Type.Union([MaxRetries, Type.Null()]),
  timeout_seconds: Type.Union([LeaseSecs, Type.Null()]),
};

const CreateBody = validator(
  Type.Object({
    name: Definition.name,
    cron_expression: Definition.cron_expression,
    timezone: Type.Optional(Definition.timezone),
    queue_name: Definition.queue_name,
    payload_template: Type.Optional(Definition.payload_template),
    priority: Type.Optional(Definition.priority),
    max_retries: Type.Optional(Definition.max_retries),
    timeout_seconds: Type.Optional(Definition.timeout_seconds),
    paused: Type.Optional(Type.Boolean({ description: 'create it paused' })),
  }),
);

const UpdateBody = validator(
  Type.Object({
    name: Type.Optional(Definition.name),
    cron_expression: Type.Optional(Definition.cron_expression),
    timezone: Type.Optional(Definition.timezone),
    queue_name: Type.Optional(Definition.queue_name),
    payload_template: Type.Optional(Definition.payload_template),
    priority: Type.Optional(Definition.priority),
    max_retries: Type.Optional(Definition.max_retries),
    timeout_seconds: Type.Optional(Definition.timeout_seconds),
  }),
);

const TriggerBody = validator(Type.Object({ schedule_id: Uuid }));

/** Keyset over (created_at, id), newest first. */
const SCHEDULES_CURSOR = cursorCodec('schedules', ['time', 'uuid']);
/** Keyset over (triggered_at, id), newest first. */
const RUNS_CURSOR = cursorCodec('schedule-runs', ['time', 'uuid']);

const Time = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const Schedule = Type.Object({
  id: Type.String({ format: 'uuid' }),
  organization_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  cron_expression: Type.String(),
  timezone: Type.String(),
  queue_name: Type.String(),
  payload_template: JsonObject,
  priority: Type.Integer(),
  max_retries: Type.Union([Type.Integer(), Type.Null()], { description: 'null: the queue or service default' }),
  timeout_seconds: Type.Union([Type.Integer(), Type.Null()], { description: 'null: the service default' }),
  paused: Type.Boolean(),
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
    cron_expression: row.cron_expression,
    timezone: row.timezone,
    queue_name: row.queue_name,
    payload_template: row.payload_template,
    priority: row.priority,
    max_retries: row.max_retries,
    timeout_seconds: row.timeout_seconds,
    paused: row.paused,
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

export function scheduleRoutes(s: Services, { scheduler }: { scheduler: Scheduler }): Route[] {
  const scheduleOf = async (org: string, id: string): Promise<ScheduleRow> => {
    const row = UUID.test(id) ? await getSchedule(s.store, org, id.toLowerCase()) : null;
    if (!row) throw notFound('Schedule');
    return row;
  };

  const withinPayloadCap = async (org: string, payload: Record<string, unknown>): Promise<void> => {
    const bytes = Buffer.byteLength(JSON.stringify(payload));
    const { plan, limits } = await s.quotas.usage(org);
    const cap = limits.max_payload_bytes;
    if (cap !== null && bytes > cap) {
      throw new AppError('PAYLOAD_TOO_LARGE', `The payload template is ${bytes} bytes; the ${plan.tier} plan allows ${cap} per job`, {
        current: bytes,
        limit: cap,
        plan: plan.tier,
        upgrade_to: upgradeTo(plan.tier),
      });
    }
  };

  /**
   * The definition checked as a whole: 422 for a cron expression or zone that cannot fire, 413 for a new
   * payload template over the plan's cap (an unchanged one is not re-checked: a plan downgrade must not block
   * a rename).
   */
  const checked = async (
    org: string,
    id: string,
    f: Omit<ScheduleFields, 'next_run_at'>,
    now: number,
    newPayload: boolean,
  ): Promise<ScheduleFields> => {
    const problems = cronProblems({ expression: f.cron_expression, timezone: f.timezone, seed: id }, now);
    if (problems.length > 0) throw validationError(problems, `${problems[0]!.field} ${problems[0]!.message}`);
    if (newPayload) await withinPayloadCap(org, f.payload_template);
    return { ...f, next_run_at: f.paused ? null : new Date(nextFire({ expression: f.cron_expression, timezone: f.timezone, seed: id }, now)) };
  };

  const tracked = (row: ScheduleRow): ScheduleRow => {
    scheduler.track(row.organization_id, row.id, row.cron_expression, row.timezone, row.next_run_at === null ? null : new Date(row.next_run_at).getTime());
    return row;
  };

  const create = async (req: Request): Promise<Response> => {
    const body = CreateBody(req.body);
    const org = req.principal.organizationId;
    const id = randomUUID();
    const now = s.clock.now();
    const fields = await checked(
      org,
      id,
      {
        name: body.name,
        cron_expression: body.cron_expression.trim(),
        timezone: body.timezone ?? 'UTC',
        queue_name: body.queue_name,
        payload_template: body.payload_template ?? {},
        priority: body.priority ?? 0,
        max_retries: body.max_retries ?? null,
        timeout_seconds: body.timeout_seconds ?? null,
        paused: body.paused ?? false,
      },
      now,
      true,
    );
    await s.quotas.reserve(org, 'schedules');
    const row = await createSchedule(s.store, id, org, fields, new Date(now)).catch((err) => {
      s.quotas.release(org, 'schedules');
      throw err;
    });
    return { status: 201, body: presentSchedule(tracked(row)) };
  };

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, SCHEDULES_CURSOR);
    const rows = await listSchedules(s.store, req.principal.organizationId, after, limit);
    return pageResponse(req, rows, limit, SCHEDULES_CURSOR, (r) => [r.cursor_at, r.id], presentSchedule);
  };

  const get = async (req: Request): Promise<Response> => ({
    status: 200,
    body: presentSchedule(await scheduleOf(req.principal.organizationId, req.params.id!)),
  });

  /** Fields left out keep their value; null clears max_retries and timeout_seconds. next_run_at is recomputed from now. */
  const update = async (req: Request): Promise<Response> => {
    const body = UpdateBody(req.body);
    const org = req.principal.organizationId;
    const cur = await scheduleOf(org, req.params.id!);
    const now = s.clock.now();
    const fields = await checked(
      org,
      cur.id,
      {
        name: body.name ?? cur.name,
        cron_expression: body.cron_expression?.trim() ?? cur.cron_expression,
        timezone: body.timezone ?? cur.timezone,
        queue_name: body.queue_name ?? cur.queue_name,
        payload_template: body.payload_template ?? cur.payload_template,
        priority: body.priority ?? cur.priority,
        max_retries: body.max_retries === undefined ? cur.max_retries : body.max_retries,
        timeout_seconds: body.timeout_seconds === undefined ? cur.timeout_seconds : body.timeout_seconds,
        paused: cur.paused,
      },
      now,
      body.payload_template !== undefined,
    );
    const row = await updateSchedule(s.store, org, cur.id, fields, new Date(now));
    if (!row) throw notFound('Schedule');
    return { status: 200, body: presentSchedule(tracked(row)) };
  };

  const remove = async (req: Request): Promise<Response> => {
    const org = req.principal.organizationId;
    const id = req.params.id!;
    if (!UUID.test(id) || !(await deleteSchedule(s.store, org, id.toLowerCase()))) throw notFound('Schedule');
    scheduler.track(org, id.toLowerCase(), '', '', null);
    s.quotas.release(org, 'schedules');
    return { status: 200, body: { id: id.toLowerCase(), deleted: true } };
  };

  const pausing = (paused: boolean) => async (req: Request): Promise<Response> => {
    const org = req.principal.organizationId;
    const cur = await scheduleOf(org, req.params.id!);
    const now = s.clock.now();
    // Resuming starts from now: fire times missed while paused are not owed.
    const next = paused ? null : new Date(nextFire({ expression: cur.cron_expression, timezone: cur.timezone, seed: cur.id }, now));
    const row = await setSchedulePaused(s.store, org, cur.id, paused, next, new Date(now));
    if (!row) throw notFound('Schedule');
    return { status: 200, body: presentSchedule(tracked(row)) };
  };

  const trigger = async (org: string, id: string): Promise<Response> => {
    const { run, job } = await scheduler.trigger(await scheduleOf(org, id));
    return { status: 201, body: { ...presentRun(run), job: presentJob(job) } };
  };

  const runs = async (req: Request): Promise<Response> => {
    const org = req.principal.organizationId;
    const { id } = await scheduleOf(org, req.params.id!);
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, RUNS_CURSOR);
    const rows = await listScheduleRuns(s.store, org, id, after, limit);
    return pageResponse(req, rows, limit, RUNS_CURSOR, (r) => [r.cursor_at, r.id], presentRun);
  };

  const page = (description: string, schema: Parameters<typeof Type.Array>[0]) => ({
    query: {
      limit: { schema: Type.Integer({ minimum: 1, maximum: 100, default: 20 }), description: 'page size' },
      cursor: { schema: Type.String(), description: 'X-Next-Cursor of the previous page (opaque)' },
    },
    responses: {
      200: {
        description,
        schema: Type.Array(schema),
        headers: { 'X-Next-Cursor': 'absent on the last page', Link: '<…&cursor={next}>; rel="next"; absent on the last page' },
      },
    },
  });
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
      doc: { operationId: 'listSchedules', summary: "List the organization's schedules, newest first, a page at a time", ...page('A page of schedules', Schedule) },
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
      handler: pausing(true),
      doc: { operationId: 'pauseSchedule', summary: 'Pause a schedule (it stops firing)', responses: one('The paused schedule') },
    },
    {
      method: 'POST',
      path: '/api/v1/schedules/:id/resume',
      permission: 'jobs:write',
      handler: pausing(false),
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
      doc: { operationId: 'listScheduleRuns', summary: "A schedule's runs (automatic and manual), newest first", ...page('A page of runs', Run) },
    },
  ];
}
