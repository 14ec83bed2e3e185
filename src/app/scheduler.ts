// The scheduler: fires every active schedule of every organization at its cron times, on the main thread.
//
// Many nodes: only the node that leads the cluster-wide tasks fires (`lead`); it loads every active schedule
// when it takes the lead, and forgets them when it loses it.
//
// State: each active schedule's next fire time, in a min-heap (cron-parser's next() costs up to a millisecond,
// so a fire time is computed once per fire, never per tick). The schedule use cases (schedules.ts) call track()
// after each committed change (create, update, pause, resume, delete) on their node, and announce it to the
// other nodes, whose schedulers read the row again (`changed`): the leader learns every change at once. Heap
// entries are never removed: a change bumps the schedule's version and the older entry is skipped when it
// surfaces.
//
// Firing: real time arms one setTimeout for the earliest fire time; a ManualClock fires whatever is due on each
// advance, and advance() waits for those fires. A due schedule is read again from the store and fires only if
// its row still holds this fire time (a change or another node may have moved it). Its job goes through the
// path of POST /api/v1/jobs (quota admission, payload cap, Jobs.enqueueAdmitted) with the
// idempotency key `schedule:<id>:<fire time ms>`: a crash between the enqueue and the schedule row update, or
// a second node on the same store, cannot make a second job for one fire time. Then one statement records the
// run and moves next_run_at forward.
//
// Missed fires: a node down across several fire times fires once, for the latest of them, then carries on from
// now (no storm of catch-up jobs). An automatic fire refused by a quota (or failing otherwise) is recorded as a
// failed run and the schedule moves on; a manual trigger answers the refusal to its caller instead.
import { randomUUID } from 'node:crypto';
import { Heap } from '../actors/heap.js';
import { ManualClock } from '../clock.js';
import { AppError } from '../errors.js';
import { activeSchedules } from '../io/db/sql/activeSchedules.js';
import { getSchedule, type ScheduleRow } from '../io/db/sql/getSchedule.js';
import { recordScheduleRun } from '../io/db/sql/recordScheduleRun.js';
import type { Row } from '../io/db/store.js';
import type { AppContext } from './context.js';
import { latestFire, nextFire, type Cron } from './cron.js';
import type { Enqueued, Jobs } from './jobs.js';

/** A run as the history shows it. */
export interface RunRecord {
  id: string;
  schedule_id: string;
  scheduled_for: number;
  triggered_at: number;
  manual: boolean;
  job_id: string | null;
  status: 'enqueued' | 'failed';
  error: string | null;
}

interface Active {
  organizationId: string;
  cron: Cron;
  at: number;
  version: number;
}

interface Entry {
  id: string;
  at: number;
  version: number;
}

/** Fires started together; the rest wait for a slot (a thousand schedules due at midnight). */
const CONCURRENT_FIRES = 64;
/** setTimeout's ceiling (about 24.8 days); a later fire time is re-armed when this one expires. */
const MAX_DELAY_MS = 2 ** 31 - 1;

export class Scheduler {
  private heap = Scheduler.emptyHeap();
  private readonly active = new Map<string, Active>();
  private version = 0;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  private unhook: (() => void) | null = null;
  private leading = false;

  constructor(
    private readonly c: AppContext,
    private readonly jobs: Jobs,
  ) {}

  private static emptyHeap(): Heap<Entry> {
    return new Heap<Entry>((a, b) => a.at < b.at);
  }

  /** Listens to a ManualClock's advances; fires nothing until this node leads. */
  start(): void {
    if (this.c.clock instanceof ManualClock) this.unhook = this.c.clock.onAdvance(() => this.fireDue());
  }

  /** This node takes the lead (load every active schedule and fire them) or loses it (forget them). */
  async lead(on: boolean): Promise<void> {
    this.leading = on;
    this.heap = Scheduler.emptyHeap();
    this.active.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
    if (!on) return;
    for (const s of await activeSchedules(this.c.store)) {
      this.track(s.organization_id, s.id, s.cron_expression, s.timezone, new Date(s.next_run_at).getTime());
    }
    this.arm();
  }

  /** Another node committed a change to this schedule: the leader reads it again. */
  async changed(organizationId: string, id: string): Promise<void> {
    if (!this.leading) return;
    const row = await getSchedule(this.c.store, organizationId, id);
    const next = row && !row.paused && row.next_run_at !== null ? new Date(row.next_run_at).getTime() : null;
    this.track(organizationId, id, row?.cron_expression ?? '', row?.timezone ?? '', next);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unhook?.();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** A schedule as committed: its next fire time, or null when it no longer fires (paused, deleted). */
  track(organizationId: string, id: string, expression: string, timezone: string, nextRunAt: number | null): void {
    if (!this.leading) return;
    const version = ++this.version;
    if (nextRunAt === null) {
      this.active.delete(id);
    } else {
      this.active.set(id, { organizationId, cron: { expression, timezone, seed: id }, at: nextRunAt, version });
      this.heap.push({ id, at: nextRunAt, version });
    }
    // Changes leave stale entries behind; rebuild when they outnumber the live ones.
    if (this.heap.size > 2 * this.active.size + 1024) this.compact();
    this.arm();
  }

  /** Fires every schedule that is due now, and resolves when their runs are recorded. */
  fireDue(): Promise<void> {
    this.running = this.running.then(() => this.runDue()).catch((err) => this.c.log.error('scheduler: a round of fires failed', err));
    return this.running;
  }

  /**
   * A manual trigger: a job now, and a manual run. Quota and payload refusals are thrown to the caller; nothing
   * is recorded for them.
   */
  async trigger(row: ScheduleRow): Promise<{ run: RunRecord; job: Row }> {
    const now = this.c.clock.now();
    const id = randomUUID();
    // Each trigger is its own job: the run id keeps two triggers (or a trigger and a fire) apart.
    const { job } = await this.enqueue(row, `schedule:${row.id}:manual:${id}`);
    const run: RunRecord = {
      id,
      schedule_id: row.id,
      scheduled_for: now,
      triggered_at: now,
      manual: true,
      job_id: job.id as string,
      status: 'enqueued',
      error: null,
    };
    await this.record(row.organization_id, run, null);
    this.published(row, run);
    return { run, job };
  }

  private async runDue(): Promise<void> {
    while (!this.stopped) {
      const now = this.c.clock.now();
      const due: Array<[string, Active]> = [];
      for (let e = this.heap.peek(); e !== undefined && e.at <= now; e = this.heap.peek()) {
        this.heap.pop();
        const s = this.active.get(e.id);
        if (s && s.version === e.version) due.push([e.id, s]);
      }
      if (due.length === 0) break;
      for (let i = 0; i < due.length; i += CONCURRENT_FIRES) {
        await Promise.all(due.slice(i, i + CONCURRENT_FIRES).map(([id, s]) => this.fire(id, s, now)));
      }
    }
    this.arm();
  }

  private async fire(id: string, s: Active, now: number): Promise<void> {
    const due = s.at;
    let scheduledFor = due;
    let next: number;
    try {
      next = nextFire(s.cron, due);
      if (next <= now) {
        // Down across several fire times: one fire, for the latest.
        scheduledFor = latestFire(s.cron, now);
        next = nextFire(s.cron, now);
      }
    } catch (err) {
      // Validated at creation, so only a time-zone database change could get here: stop firing it, say why.
      this.active.delete(id);
      this.c.log.error(`schedule ${id} has no next fire time and stops firing`, err);
      return;
    }
    // Its next entry goes in now, under the same version: a change committed meanwhile makes it stale.
    if (!this.leading) return;
    s.at = next;
    this.heap.push({ id, at: next, version: s.version });
    try {
      const row = await getSchedule(this.c.store, s.organizationId, id);
      if (!row || row.paused || row.next_run_at === null || new Date(row.next_run_at).getTime() !== due) return;
      const run: RunRecord = {
        id: randomUUID(),
        schedule_id: id,
        scheduled_for: scheduledFor,
        triggered_at: now,
        manual: false,
        job_id: null,
        status: 'enqueued',
        error: null,
      };
      try {
        run.job_id = (await this.enqueue(row, `schedule:${id}:${scheduledFor}`)).job.id as string;
      } catch (err) {
        run.status = 'failed';
        run.error = err instanceof AppError ? err.message : 'internal error';
        if (!(err instanceof AppError)) this.c.log.error(`schedule ${id}: the job of ${new Date(scheduledFor).toISOString()} failed`, err);
      }
      if ((await this.record(s.organizationId, run, { from: due, to: next })) && run.status === 'enqueued') this.published(row, run);
    } catch (err) {
      this.c.log.error(`schedule ${id}: the fire of ${new Date(scheduledFor).toISOString()} could not be recorded`, err);
    }
  }

  /** The job of one fire, through the path of POST /api/v1/jobs. */
  private async enqueue(row: ScheduleRow, idempotencyKey: string): Promise<Enqueued> {
    const payload = row.payload_template;
    const admission = await this.c.quotas.admitJobs(row.organization_id, [Buffer.byteLength(JSON.stringify(payload))]);
    return this.jobs.enqueueAdmitted(
      row.organization_id,
      row.queue_name,
      {
        payload,
        priority: row.priority,
        max_retries: row.max_retries,
        timeout_seconds: row.timeout_seconds,
        scheduled_at: null,
        idempotency_key: idempotencyKey,
        tags: {},
        completion_webhook: null,
        completion_webhook_secret: null,
      },
      admission,
    );
  }

  private record(organizationId: string, run: RunRecord, advance: { from: number; to: number } | null): Promise<boolean> {
    return recordScheduleRun(this.c.store, {
      id: run.id,
      scheduleId: run.schedule_id,
      organizationId,
      scheduledFor: new Date(run.scheduled_for),
      triggeredAt: new Date(run.triggered_at),
      manual: run.manual,
      jobId: run.job_id,
      status: run.status,
      error: run.error,
      advance: advance && { from: new Date(advance.from), to: new Date(advance.to) },
    });
  }

  private published(row: ScheduleRow, run: RunRecord): void {
    this.c.events.publish(row.organization_id, 'schedule.triggered', {
      schedule_id: row.id,
      job_id: run.job_id,
      queue_name: row.queue_name,
      manual: run.manual,
    });
  }

  /** Real time: one timer, for the earliest live entry. */
  private arm(): void {
    if (this.c.clock.manual || this.stopped) return;
    for (let e = this.heap.peek(); e !== undefined && this.active.get(e.id)?.version !== e.version; e = this.heap.peek()) this.heap.pop();
    const top = this.heap.peek();
    const at = top?.at ?? Infinity;
    if (this.timer && at === this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = at;
    if (top === undefined) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.timerAt = Infinity;
        void this.fireDue();
      },
      Math.min(Math.max(0, at - this.c.clock.now()), MAX_DELAY_MS),
    );
    this.timer.unref();
  }

  private compact(): void {
    this.heap = Scheduler.emptyHeap();
    for (const [id, s] of this.active) this.heap.push({ id, at: s.at, version: s.version });
  }
}
