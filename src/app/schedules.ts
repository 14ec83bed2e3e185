// Schedules: every operation on cron schedules, written once.
//
//   create      the definition checked whole (422 for a cron expression or zone that cannot fire, 413 for a
//               payload template over the plan's cap), a `schedules` slot reserved (429), then the row, with
//               its first fire time (none when created paused); a failed insert gives the slot back
//   update      fields left out keep their value, null clears description, max_retries and timeout_seconds; the next fire
//               time is recomputed from now; an unchanged payload template is not re-checked against the cap
//   delete      the row and its run history; only a delete that removed a row gives the slot back
//   pause / resume    resuming starts from now: fire times missed while paused are not owed
//   trigger     a job now and a manual run (the scheduler's path); quota refusals go to the caller
//   get / list / runs    reads, straight from the store
// Each committed change is handed to the scheduler (scheduler.ts), which keeps the next fire times.
import { randomUUID } from 'node:crypto';
import Type from 'typebox';
import { upgradeTo } from '../actors/org/plans.js';
import { AppError, notFound, validationError } from '../errors.js';
import { createSchedule, type ScheduleFields } from '../io/db/sql/createSchedule.js';
import { deleteSchedule } from '../io/db/sql/deleteSchedule.js';
import { getSchedule, type ScheduleRow } from '../io/db/sql/getSchedule.js';
import { listScheduleRuns, type ScheduleRunRow } from '../io/db/sql/listScheduleRuns.js';
import { listSchedules } from '../io/db/sql/listSchedules.js';
import { setSchedulePaused } from '../io/db/sql/setSchedulePaused.js';
import { updateSchedule } from '../io/db/sql/updateSchedule.js';
import type { Row } from '../io/db/store.js';
import { validator, type Valid } from '../io/validate.js';
import type { AppContext } from './context.js';
import { cronProblems, nextFire } from './cron.js';
import { LeaseSecs, MaxRetries, Priority, QueueName, Uuid } from './fields.js';
import type { RunRecord, Scheduler } from './scheduler.js';

const Definition = {
  name: Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' }),
  description: Type.Union([Type.String({ maxLength: 1000 }), Type.Null()], { description: 'free text (null: none)' }),
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

export const CreateScheduleBody = validator(
  Type.Object({
    name: Definition.name,
    description: Type.Optional(Definition.description),
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

export const UpdateScheduleBody = validator(
  Type.Object({
    name: Type.Optional(Definition.name),
    description: Type.Optional(Definition.description),
    cron_expression: Type.Optional(Definition.cron_expression),
    timezone: Type.Optional(Definition.timezone),
    queue_name: Type.Optional(Definition.queue_name),
    payload_template: Type.Optional(Definition.payload_template),
    priority: Type.Optional(Definition.priority),
    max_retries: Type.Optional(Definition.max_retries),
    timeout_seconds: Type.Optional(Definition.timeout_seconds),
  }),
);

export const TriggerScheduleBody = validator(Type.Object({ schedule_id: Uuid }));

/** Keyset of the schedule list and of the run history: (created_at | triggered_at to the microsecond, id). */
export type ScheduleKey = [at: string, id: string];

export class Schedules {
  constructor(
    private readonly c: AppContext,
    private readonly scheduler: Scheduler,
  ) {}

  async create(org: string, body: Valid<typeof CreateScheduleBody>): Promise<ScheduleRow> {
    const id = randomUUID();
    const now = this.c.clock.now();
    const fields = await this.checked(
      org,
      id,
      {
        name: body.name,
        description: body.description ?? null,
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
    await this.c.quotas.reserve(org, 'schedules');
    const row = await createSchedule(this.c.store, id, org, fields, new Date(now)).catch((err) => {
      this.c.quotas.release(org, 'schedules');
      throw err;
    });
    return this.tracked(row);
  }

  /** A page of schedules, newest first, strictly after `after`; one row more than `limit` says there is a next page. */
  list(org: string, after: ScheduleKey | null, limit: number): Promise<Array<ScheduleRow & { cursor_at: string }>> {
    return listSchedules(this.c.store, org, after, limit);
  }

  async get(org: string, id: string): Promise<ScheduleRow> {
    const row = await getSchedule(this.c.store, org, id);
    if (!row) throw notFound('Schedule');
    return row;
  }

  /** Fields left out keep their value; null clears description, max_retries and timeout_seconds. next_run_at is recomputed from now. */
  async update(org: string, id: string, body: Valid<typeof UpdateScheduleBody>): Promise<ScheduleRow> {
    const cur = await this.get(org, id);
    const now = this.c.clock.now();
    const fields = await this.checked(
      org,
      cur.id,
      {
        name: body.name ?? cur.name,
        description: body.description === undefined ? cur.description : body.description,
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
    const row = await updateSchedule(this.c.store, org, cur.id, fields, new Date(now));
    if (!row) throw notFound('Schedule');
    return this.tracked(row);
  }

  async delete(org: string, id: string): Promise<{ id: string; deleted: true }> {
    if (!(await deleteSchedule(this.c.store, org, id))) throw notFound('Schedule');
    this.scheduler.track(org, id, '', '', null);
    this.announce(org, id);
    this.c.quotas.release(org, 'schedules');
    return { id, deleted: true };
  }

  pause(org: string, id: string): Promise<ScheduleRow> {
    return this.setPaused(org, id, true);
  }

  resume(org: string, id: string): Promise<ScheduleRow> {
    return this.setPaused(org, id, false);
  }

  /** A job now (counted against the job quotas: 413, 429) and a manual run. */
  async trigger(org: string, id: string): Promise<{ run: RunRecord; job: Row }> {
    return this.scheduler.trigger(await this.get(org, id));
  }

  /** A page of one schedule's runs, newest first (404 for a schedule the organization does not have). */
  async runs(org: string, id: string, after: ScheduleKey | null, limit: number): Promise<ScheduleRunRow[]> {
    const row = await this.get(org, id);
    return listScheduleRuns(this.c.store, org, row.id, after, limit);
  }

  private async setPaused(org: string, id: string, paused: boolean): Promise<ScheduleRow> {
    const cur = await this.get(org, id);
    const now = this.c.clock.now();
    // Resuming starts from now: fire times missed while paused are not owed.
    const next = paused ? null : new Date(nextFire({ expression: cur.cron_expression, timezone: cur.timezone, seed: cur.id }, now));
    const row = await setSchedulePaused(this.c.store, org, cur.id, paused, next, new Date(now));
    if (!row) throw notFound('Schedule');
    return this.tracked(row);
  }

  /**
   * The definition checked as a whole: 422 for a cron expression or zone that cannot fire, 413 for a new
   * payload template over the plan's cap (an unchanged one is not re-checked: a plan downgrade must not block
   * a rename).
   */
  private async checked(org: string, id: string, f: Omit<ScheduleFields, 'next_run_at'>, now: number, newPayload: boolean): Promise<ScheduleFields> {
    const problems = cronProblems({ expression: f.cron_expression, timezone: f.timezone, seed: id }, now);
    if (problems.length > 0) throw validationError(problems, `${problems[0]!.field} ${problems[0]!.message}`);
    if (newPayload) await this.withinPayloadCap(org, f.payload_template);
    return { ...f, next_run_at: f.paused ? null : new Date(nextFire({ expression: f.cron_expression, timezone: f.timezone, seed: id }, now)) };
  }

  private async withinPayloadCap(org: string, payload: Record<string, unknown>): Promise<void> {
    const bytes = Buffer.byteLength(JSON.stringify(payload));
    const { plan, limits } = await this.c.quotas.usage(org);
    const cap = limits.max_payload_bytes;
    if (cap !== null && bytes > cap) {
      throw new AppError('PAYLOAD_TOO_LARGE', `The payload template is ${bytes} bytes; the ${plan.tier} plan allows ${cap} per job`, {
        current: bytes,
        limit: cap,
        plan: plan.tier,
        upgrade_to: upgradeTo(plan.tier),
      });
    }
  }

  /** A committed row handed to the scheduler, which keeps its next fire time. */
  private tracked(row: ScheduleRow): ScheduleRow {
    const next = row.next_run_at === null ? null : new Date(row.next_run_at).getTime();
    this.scheduler.track(row.organization_id, row.id, row.cron_expression, row.timezone, next);
    this.announce(row.organization_id, row.id);
    return row;
  }

  /** Tells the other nodes (the leader's scheduler) that the schedule changed. */
  private announce(organizationId: string, id: string): void {
    this.c.invalidations
      .publish({ kind: 'schedule', organizationId, id })
      .catch((err) => this.c.log.error('could not announce a schedule change to the other nodes', err));
  }
}
