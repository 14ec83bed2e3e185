// Jobs: every operation on jobs, written once, for REST, gRPC, incoming webhooks and the scheduler alike.
//
//   enqueue     validate the definition's times (expires_at in the future and after scheduled_at) and URL,
//               admit it against the quotas (413, 429), ask the queue's actor to insert it (commit before reply);
//               a duplicate idempotency key answers the job holding it (created: false) and gives the admission back
//   bulk        each item validated alone (an invalid item is reported, not fatal), the valid ones admitted
//               together, then enqueued with one message per queue (enqueueMany)
//   claim       the queue's actor hands out up to `limit` jobs under leases (long poll with wait_ms); jobs
//               claimed for a client that left are unclaimed (pending again at once, no attempt spent)
//   complete / fail / heartbeat / progress    the actor holding the job checks the lease, on worker_id alone when no
//               lease_id is sent (409 LEASE_EXPIRED;
//               JOB_CANCELLED when the job was cancelled under this very worker: docs/flow-control.md)
//   completeMany    a batch acknowledgement: one ask per queue actor for all its items, one outcome per item
//               (a stale lease fails its own item only)
//   explain     why a job is not running: src/app/explain.ts
//   cancel / priority    live jobs only; a terminal job answers 409 JOB_NOT_LIVE naming its status
//   retry / revive       a dead-lettered or cancelled job comes back pending with a fresh retry budget,
//               counted as a creation; workflow jobs are retried with their workflow (409 WORKFLOW_JOB)
//   get / list / statuses / stats     reads, straight from the store: every state an actor reported is
//               committed before its reply, so the store is never behind an answer given
import Type, { type Static } from 'typebox';
import type { ClaimReply, CompleteInput, CompleteOutcome, EnqueueInput, ReviveInput, ReviveOutcome } from '../actors/queue/queue-actor.js';
import type { JobStatus } from '../actors/records.js';
import { AppError, notFound, validationError, type FieldProblem, type WireError } from '../errors.js';
import { getJob } from '../io/db/sql/getJob.js';
import { getJobByKey } from '../io/db/sql/getJobByKey.js';
import { jobStats, type StatusCounts } from '../io/db/sql/jobStats.js';
import { jobStatuses, type JobStatusRow } from '../io/db/sql/jobStatuses.js';
import { listJobs, type JobFilter, type JobKey } from '../io/db/sql/listJobs.js';
import { terminalJobs } from '../io/db/sql/terminalJobs.js';
import type { Row } from '../io/db/store.js';
import { validator, type Valid } from '../io/validate.js';
import { policyOf, urlProblem, type UrlPolicy } from '../io/webhooks/ssrf.js';
import type { QueueOps } from '../runtime/protocol.js';
import type { AppContext } from './context.js';
import { explainJob, type Explanation } from './explain.js';
import { JsonObject, LeaseId, LeaseSecs, MaxRetries, parseTime, Priority, QueueName, TagList, TagMap, Uuid, WorkerId } from './fields.js';
import type { Admission } from './quotas.js';

/** One year: an idempotency window longer than that is a key held for good (omit the TTL). */
const IDEMPOTENCY_TTL_MAX = 31_536_000;
/** A debounce delay or bound of at most a day. */
const DEBOUNCE_MAX_MS = 86_400_000;

export const JobDefinition = Type.Object({
  queue_name: QueueName,
  payload: JsonObject,
  idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  priority: Type.Optional(Priority),
  scheduled_at: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
  expires_at: Type.Optional(
    Type.Union([Type.String({ maxLength: 64 }), Type.Null()], { description: 'not started by then (RFC 3339), the job is cancelled with last_error "expired"' }),
  ),
  max_retries: Type.Optional(MaxRetries),
  timeout_seconds: Type.Optional(LeaseSecs),
  completion_webhook: Type.Optional(Type.Union([Type.String({ maxLength: 2048 }), Type.Null()])),
  completion_webhook_secret: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 256 }), Type.Null()])),
  tags: Type.Optional(Type.Union([TagMap, TagList])),
  concurrency_key: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()])),
  idempotency_ttl_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: IDEMPOTENCY_TTL_MAX })),
  debounce: Type.Optional(
    Type.Object({
      key: Type.String({ minLength: 1, maxLength: 255 }),
      delay_ms: Type.Integer({ minimum: 0, maximum: DEBOUNCE_MAX_MS }),
      max_delay_ms: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: DEBOUNCE_MAX_MS }), Type.Null()])),
    }),
  ),
});
export type JobDefinition = Static<typeof JobDefinition>;
export const EnqueueBody = validator(JobDefinition);

export const BULK_MAX = 100;
// Top-level fields are defaults for the items; a bare array of definitions is accepted too.
export const BulkBody = validator(
  Type.Object({
    jobs: Type.Array(Type.Unknown(), { minItems: 1, maxItems: BULK_MAX }),
    queue_name: Type.Optional(QueueName),
    priority: Type.Optional(Priority),
    max_retries: Type.Optional(MaxRetries),
    timeout_seconds: Type.Optional(LeaseSecs),
  }),
);
export type BulkRequest = Valid<typeof BulkBody>;

/**
 * Jobs one claim may take: a worker's whole prefetch in one answer (graphile-worker's batched worker holds 500),
 * as many as one batch acknowledgement reports. Capped at 100, an SDK worker holding 500 jobs refilled them 100 at
 * a time, and its claims, not the engine, set its rate (docs/BENCHMARKS.md, nineteenth session).
 */
export const CLAIM_MAX = 500;
export const ClaimBody = validator(
  Type.Object({
    queue_name: QueueName,
    worker_id: WorkerId,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: CLAIM_MAX })),
    lease_duration_secs: Type.Optional(LeaseSecs),
    wait_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 30_000 })),
  }),
);
export type ClaimRequest = Valid<typeof ClaimBody>;

// lease_id may be left out: the lease is then fenced on worker_id alone, as a heartbeat's is (clients written
// for the hosted service send none). A lease_id that is sent must match.
export const CompleteBody = validator(Type.Object({ worker_id: WorkerId, lease_id: Type.Optional(LeaseId), result: Type.Optional(Type.Unknown()) }));
/** Items of one batch acknowledgement: enough for a worker's whole prefetch, small enough to answer at once. */
export const ACK_MAX = 500;
/**
 * A batch acknowledgement; `worker_id` at the top is the default of the items. `claim` asks, in the same request,
 * for the next jobs of a queue for that worker (no waiting): one round trip per batch instead of two.
 */
export const CompleteManyBody = validator(
  Type.Object({
    worker_id: Type.Optional(WorkerId),
    jobs: Type.Array(
      Type.Object({ id: Uuid, worker_id: Type.Optional(WorkerId), lease_id: Type.Optional(LeaseId), result: Type.Optional(Type.Unknown()) }),
      { minItems: 1, maxItems: ACK_MAX },
    ),
    claim: Type.Optional(
      Type.Object(
        {
          queue_name: QueueName,
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: CLAIM_MAX })),
          lease_duration_secs: Type.Optional(LeaseSecs),
        },
        { additionalProperties: false, description: 'claims without waiting: a wait_ms here is refused' },
      ),
    ),
  }),
);
export type CompleteManyRequest = Valid<typeof CompleteManyBody>;
export const FailBody = validator(
  Type.Object({
    worker_id: WorkerId,
    lease_id: Type.Optional(LeaseId),
    error: Type.String({ minLength: 1, maxLength: 10_000 }),
    retryable: Type.Optional(Type.Boolean()),
  }),
);
export const HeartbeatBody = validator(
  Type.Object({ worker_id: WorkerId, lease_id: Type.Optional(LeaseId), lease_duration_secs: Type.Optional(LeaseSecs) }),
);
/** Progress data is shown on the job and sent in events: kept small. */
export const PROGRESS_DATA_MAX_BYTES = 16_384;
export const ProgressBody = validator(
  Type.Object({
    worker_id: WorkerId,
    lease_id: Type.Optional(LeaseId),
    progress: Type.Number({ minimum: 0, maximum: 100 }),
    message: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
    data: Type.Optional(Type.Unknown()),
  }),
);
export type ProgressRequest = Valid<typeof ProgressBody>;
export type CompleteRequest = Valid<typeof CompleteBody>;
export type FailRequest = Valid<typeof FailBody>;
export type HeartbeatRequest = Valid<typeof HeartbeatBody>;

export const PriorityBody = validator(Type.Object({ priority: Priority }));

export const MAX_STATUS_IDS = 100;

/** The new job (its row with the payload), or the existing job holding the idempotency key. */
export interface Enqueued {
  created: boolean;
  job: Row;
}

/** One item of completeEach: completed, or why not. */
export type CompleteEachOutcome = { id: string; completed_at: number } | { id: string; error: AppError };

/** The outcome of a batch acknowledgement, in the shape of a bulk enqueue's; with `claim`, the jobs it claimed. */
export interface AckOutcome {
  succeeded: Array<{ index: number; id: string; status: 'completed'; completed_at: number }>;
  failed: Array<{ index: number; id: string; error: Record<string, unknown> }>;
  total: number;
  success_count: number;
  failure_count: number;
  jobs?: ClaimReply['jobs'];
  /** Why the claim asked for alongside got nothing (the completions above stand). */
  claim_error?: Record<string, unknown>;
}

export interface BulkOutcome {
  /** `job_id` repeats `id` (clients of the hosted service read it). */
  succeeded: Array<{ index: number; id: string; job_id: string; created: boolean }>;
  failed: Array<{ index: number; error: Record<string, unknown> }>;
  total: number;
  success_count: number;
  failure_count: number;
}

/** A terminal job to revive, with the queue whose actor holds it once live. */
export type Revival = ReviveInput & { queue_name: string };

/**
 * A job's expires_at as epoch ms (null when absent), or a problem: an instant that is already past, or not after
 * its scheduled_at, would cancel the job before it could ever run.
 */
export function expiryOf(value: string | null | undefined, scheduledAt: number | null, now: number, problems: FieldProblem[], field = 'expires_at'): number | null {
  const at = parseTime(field, value);
  if (at === null) return null;
  if (at <= now) problems.push({ field, message: 'must be in the future' });
  else if (scheduledAt !== null && at <= scheduledAt) problems.push({ field, message: 'must be after scheduled_at' });
  return at;
}

/** A job definition compiled for the queue actor, with its payload size (the quota's payload cap). */
export interface CompiledJob {
  queue: string;
  input: EnqueueInput;
  bytes: number;
}

/**
 * A workflow job comes back with its workflow (POST /workflows/:id/retry), which re-blocks it behind parents that
 * have not completed and runs the workflow again; reviving it alone would run it out of order.
 */
export const workflowJob = (workflowId: string): AppError =>
  new AppError('WORKFLOW_JOB', `The job belongs to workflow ${workflowId}: retry the workflow (POST /api/v1/workflows/${workflowId}/retry)`, {
    workflow_id: workflowId,
  });

export class Jobs {
  private readonly urlPolicy: UrlPolicy;

  constructor(private readonly c: AppContext) {
    this.urlPolicy = policyOf(c.config);
  }

  /** A validated definition, compiled for the queue actor (422 on a bad time or URL). */
  compile(def: JobDefinition): CompiledJob {
    const problems: FieldProblem[] = [];
    if (def.idempotency_ttl_secs !== undefined && def.idempotency_key === undefined) {
      problems.push({ field: 'idempotency_ttl_secs', message: 'needs an idempotency_key' });
    }
    const d = def.debounce;
    if (d !== undefined) {
      // Both dedupe; together, which one answers a duplicate would be ambiguous. A debounced job's run time is the debounce's.
      if (def.idempotency_key !== undefined) problems.push({ field: 'debounce', message: 'cannot be combined with idempotency_key' });
      if (def.scheduled_at !== undefined && def.scheduled_at !== null) problems.push({ field: 'debounce', message: 'cannot be combined with scheduled_at' });
      if (d.max_delay_ms != null && d.max_delay_ms < d.delay_ms) problems.push({ field: 'debounce.max_delay_ms', message: 'must be at least delay_ms' });
    }
    if (problems.length > 0) throw validationError(problems, `${problems[0]!.field} ${problems[0]!.message}`);
    const scheduledAt = parseTime('scheduled_at', def.scheduled_at);
    const expiresAt = expiryOf(def.expires_at, scheduledAt, this.c.clock.now(), problems);
    if (problems.length > 0) throw validationError(problems, `${problems[0]!.field} ${problems[0]!.message}`);
    const bytes = Buffer.byteLength(JSON.stringify(def.payload));
    return {
      queue: def.queue_name,
      bytes,
      input: {
        payload: def.payload,
        payload_bytes: bytes,
        priority: def.priority ?? 0,
        max_retries: def.max_retries ?? null,
        timeout_seconds: def.timeout_seconds ?? null,
        scheduled_at: scheduledAt,
        expires_at: expiresAt,
        idempotency_key: def.idempotency_key ?? null,
        tags: Array.isArray(def.tags) ? Object.fromEntries(def.tags.map((t) => [t, ''])) : (def.tags ?? {}),
        completion_webhook: this.completionWebhook(def.completion_webhook),
        completion_webhook_secret: def.completion_webhook_secret ?? null,
        concurrency_key: def.concurrency_key ?? null,
        idempotency_ttl_secs: def.idempotency_ttl_secs ?? null,
        debounce: d === undefined ? null : { key: d.key, delay_ms: d.delay_ms, max_delay_ms: d.max_delay_ms ?? null },
      },
    };
  }

  /** One job: admitted against the job quotas (413, 429), then enqueued. */
  async enqueue(org: string, def: JobDefinition): Promise<Enqueued> {
    const { queue, input, bytes } = this.compile(def);
    return this.enqueueAdmitted(org, queue, input, await this.c.quotas.admitJobs(org, [bytes]));
  }

  /**
   * Items are validated one by one: an invalid item is reported without sinking the valid ones. The valid ones
   * are admitted together (a quota that cannot take them all refuses the request).
   */
  async bulk(org: string, request: BulkRequest): Promise<BulkOutcome> {
    const { jobs, ...defaults } = request;
    const failed: BulkOutcome['failed'] = [];
    const valid: Array<{ index: number } & CompiledJob> = [];
    const merging = Object.keys(defaults).length > 0;
    jobs.forEach((item, index) => {
      try {
        const merged = merging && item !== null && typeof item === 'object' && !Array.isArray(item) ? { ...defaults, ...item } : item;
        const { queue, input, bytes } = this.compile(EnqueueBody(merged));
        valid.push({ index, queue, input, bytes });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        failed.push({ index, error: err.toBody() });
      }
    });
    const succeeded: BulkOutcome['succeeded'] = [];
    if (valid.length > 0) {
      const admission = await this.c.quotas.admitJobs(org, valid.map((v) => v.bytes));
      // One message per queue for all its jobs; queues in order of their first job.
      const byQueue = new Map<string, Array<{ index: number } & CompiledJob>>();
      for (const v of valid) {
        let items = byQueue.get(v.queue);
        if (!items) byQueue.set(v.queue, (items = []));
        items.push(v);
      }
      const results = await Promise.allSettled(
        [...byQueue].map(([queue, items]) => this.enqueueManyAdmitted(org, queue, items.map((v) => v.input), admission)),
      );
      [...byQueue.values()].forEach((items, q) => {
        const r = results[q]!;
        items.forEach(({ index }, k) => {
          const o = r.status === 'fulfilled' ? r.value[k]! : r.reason;
          if (o instanceof Error) failed.push({ index, error: (o instanceof AppError ? o : new AppError('INTERNAL')).toBody() });
          else succeeded.push({ index, id: o.id, job_id: o.id, created: o.created });
        });
      });
      succeeded.sort((a, b) => a.index - b.index);
    }
    failed.sort((a, b) => a.index - b.index);
    return { succeeded, failed, total: jobs.length, success_count: succeeded.length, failure_count: failed.length };
  }

  /**
   * Enqueues one job admitted by quotas.admitJobs: the one path by which a job is created (POST /jobs, bulk,
   * incoming webhooks, schedule fires), so idempotency, quota release and job routing behave the same wherever
   * a job comes from. A job that was not created (an error, or a duplicate idempotency key) gives its admission
   * back.
   */
  async enqueueAdmitted(org: string, queue: string, input: EnqueueInput, admission: Admission): Promise<Enqueued> {
    let reply: QueueOps['enqueue']['reply'];
    try {
      reply = await this.c.actors.ask(org, queue, 'enqueue', input);
    } catch (err) {
      this.c.quotas.releaseJobs(org, admission, 1);
      throw err;
    }
    if (reply.created) {
      this.c.places.remember(org, reply.job.id, queue);
      return { created: true, job: { ...reply.job, payload: input.payload } };
    }
    this.c.quotas.releaseJobs(org, admission, 1);
    return { created: false, job: await this.holder(org, reply) };
  }

  /**
   * Many jobs of one queue admitted together (a bulk request): one message to the queue's actor, each job under
   * the rules of enqueueAdmitted. Each comes back as its id (created or not), or the error that refused it.
   */
  private async enqueueManyAdmitted(org: string, queue: string, inputs: EnqueueInput[], admission: Admission): Promise<Array<{ id: string; created: boolean } | AppError>> {
    let replies: QueueOps['enqueueMany']['reply'];
    try {
      replies = await this.c.actors.ask(org, queue, 'enqueueMany', { inputs });
    } catch (err) {
      this.c.quotas.releaseJobs(org, admission, inputs.length);
      throw err;
    }
    // Jobs created are answered as they are; only a duplicate waits, for the row that holds its key.
    const out: Array<{ id: string; created: boolean } | AppError | Promise<{ id: string; created: boolean } | AppError>> = [];
    let refused = 0;
    let holders = false;
    for (const r of replies) {
      if (r.created) {
        this.c.places.remember(org, r.id, queue);
        out.push({ id: r.id, created: true });
        continue;
      }
      refused++;
      if ('error' in r) {
        out.push(AppError.fromWire(r.error));
        continue;
      }
      holders = true;
      out.push(
        this.holder(org, r).then(
          (row) => ({ id: row.id as string, created: false }),
          (err: unknown) => (err instanceof AppError ? err : new AppError('INTERNAL')),
        ),
      );
    }
    this.c.quotas.releaseJobs(org, admission, refused);
    return holders ? Promise.all(out) : (out as Array<{ id: string; created: boolean } | AppError>);
  }

  /** The job that answers an enqueue that made none: the one holding its idempotency key, or the debounced one that took its payload. */
  private async holder(org: string, reply: { idempotency_key: string } | { debounced: true; id: string }): Promise<Row> {
    if ('debounced' in reply) {
      const job = await getJob(this.c.store, org, reply.id);
      if (!job) throw new AppError('UNAVAILABLE', 'The debounced job could not be read; retry');
      return job;
    }
    const existing = await getJobByKey(this.c.store, org, reply.idempotency_key);
    if (!existing) throw new AppError('UNAVAILABLE', 'The job holding this idempotency key could not be read; retry');
    return existing;
  }

  /** Claims for a worker, remembering where each job lives: the claimed rows, payloads included. */
  async claim(org: string, r: ClaimRequest): Promise<ClaimReply['jobs']> {
    const reply = await this.c.actors.ask(org, r.queue_name, 'claim', {
      worker_id: r.worker_id,
      limit: r.limit ?? 1,
      lease_duration_secs: r.lease_duration_secs ?? null,
      wait_ms: r.wait_ms ?? 0,
    });
    for (const j of reply.jobs) this.c.places.remember(org, j.id as string, r.queue_name);
    return reply.jobs;
  }

  /**
   * Jobs claimed for a worker that never got them (its long poll or stream was gone when they came): back to
   * pending at once, not after their lease. Best effort: a failure only leaves them to their lease expiry.
   */
  unclaim(org: string, jobs: ClaimReply['jobs']): void {
    const byQueue = new Map<string, Array<{ id: string; lease_id: string }>>();
    for (const j of jobs) {
      const queue = j.queue_name as string;
      byQueue.set(queue, [...(byQueue.get(queue) ?? []), { id: j.id as string, lease_id: j.lease_id as string }]);
    }
    for (const [queue, items] of byQueue) this.c.actors.ask(org, queue, 'unclaim', { items }).catch(() => {});
  }

  async complete(org: string, id: string, r: CompleteRequest): Promise<QueueOps['complete']['reply']> {
    const queue = await this.queueOf(org, id);
    return this.leased(org, id, r.worker_id, this.c.actors.ask(org, queue, 'complete', { id, worker_id: r.worker_id, lease_id: r.lease_id ?? null, result: r.result ?? null }));
  }

  /**
   * Completes many jobs in one request: the items of each queue go to its actor in one message, so a worker acks
   * its whole prefetch at the cost of one request and one commit. Each item succeeds or fails alone; an item
   * without a worker_id takes the request's (422 when neither says).
   */
  async completeMany(org: string, r: CompleteManyRequest): Promise<AckOutcome> {
    const missing = r.jobs.findIndex((j) => j.worker_id === undefined && r.worker_id === undefined);
    if (missing >= 0) throw validationError([{ field: `jobs[${missing}].worker_id`, message: 'is required when the request gives no worker_id' }]);
    const next = r.claim;
    if (next && r.worker_id === undefined) throw validationError([{ field: 'worker_id', message: 'is required with claim: the jobs claimed are leased to it' }]);
    // The claim is asked once every completion has been asked: an actor takes its messages in order, so the claim
    // finds the slots (max_concurrency, concurrency keys) the completions freed, and usually rides in their commit.
    const claiming: { reply: Promise<ClaimReply['jobs']> | null } = { reply: null };
    const outcomes = await this.completeEach(
      org,
      r.jobs.map((j) => ({ id: j.id, worker_id: (j.worker_id ?? r.worker_id)!, lease_id: j.lease_id ?? null, result: j.result ?? null })),
      next
        ? () => {
            claiming.reply = this.claim(org, { queue_name: next.queue_name, worker_id: r.worker_id!, limit: next.limit, lease_duration_secs: next.lease_duration_secs });
            // Settled before the completions are: handled below, not an unhandled rejection meanwhile.
            claiming.reply.catch(() => {});
          }
        : undefined,
    );
    const out: AckOutcome = { succeeded: [], failed: [], total: r.jobs.length, success_count: 0, failure_count: 0 };
    if (claiming.reply !== null) {
      // The completions stand whatever the claim does: its failure is reported beside them, not instead of them.
      try {
        out.jobs = await claiming.reply;
      } catch (err) {
        out.jobs = [];
        out.claim_error = (err instanceof AppError ? err : new AppError('UNAVAILABLE', 'The claim could not be made; retry')).toBody();
      }
    }
    outcomes.forEach((o, index) => {
      if ('error' in o) out.failed.push({ index, id: o.id, error: o.error.toBody() });
      else out.succeeded.push({ index, id: o.id, status: 'completed', completed_at: o.completed_at });
    });
    out.success_count = out.succeeded.length;
    out.failure_count = out.failed.length;
    return out;
  }

  /**
   * The completions of completeMany, one outcome per item in order (also the gRPC stream's batched completes):
   * one ask per queue actor for all its items; an unknown id is NOT_FOUND, a stale lease LEASE_EXPIRED (or
   * JOB_CANCELLED, as `complete` tells it), an actor that could not take its items fails each of them.
   */
  async completeEach(org: string, items: CompleteInput[], asked?: () => void): Promise<CompleteEachOutcome[]> {
    const outcomes: CompleteEachOutcome[] = new Array(items.length);
    const byQueue = new Map<string, Array<{ index: number; input: CompleteInput }>>();
    const place = (index: number, input: CompleteInput, queue: string | null) => {
      if (queue === null) {
        outcomes[index] = { id: input.id, error: notFound('Job') };
        return;
      }
      let list = byQueue.get(queue);
      if (!list) byQueue.set(queue, (list = []));
      list.push({ index, input });
    };
    // Most jobs' places are known here (this node relayed their claim): only the others wait for the store, which
    // keeps a batch of hundreds from costing a promise per item.
    const unknown: Array<Promise<void>> = [];
    items.forEach((j, index) => {
      const id = j.id.toLowerCase();
      const input = id === j.id ? j : { ...j, id };
      const queue = this.c.places.cached(org, id);
      if (queue !== undefined) place(index, input, queue);
      else unknown.push(this.c.places.find(org, id).then((q) => place(index, input, q)));
    });
    if (unknown.length > 0) await Promise.all(unknown);
    const answers = [...byQueue].map(async ([queue, list]) => {
      let replies: CompleteOutcome[];
      try {
        replies = await this.c.actors.ask(org, queue, 'completeMany', { items: list.map((i) => i.input) });
      } catch (err) {
        // The actor could not take the batch (its store or its node): every item of that queue says why.
        const error = err instanceof AppError ? err : new AppError('UNAVAILABLE', 'The acknowledgement could not be made; retry');
        for (const { index, input } of list) outcomes[index] = { id: input.id, error };
        return;
      }
      const refused: Array<Promise<void>> = [];
      replies.forEach((reply, k) => {
        const { index, input } = list[k]!;
        if (reply.ok) outcomes[index] = { id: reply.id, completed_at: reply.completed_at };
        else refused.push(this.whyNot(org, input, reply.error).then((error) => void (outcomes[index] = { id: reply.id, error })));
      });
      if (refused.length > 0) await Promise.all(refused);
    });
    // Every actor has been asked (each ask is sent before its function's first await).
    asked?.();
    await Promise.all(answers);
    return outcomes;
  }

  async fail(org: string, id: string, r: FailRequest): Promise<QueueOps['fail']['reply']> {
    const queue = await this.queueOf(org, id);
    return this.leased(org, id, r.worker_id, this.c.actors.ask(org, queue, 'fail', {
      id,
      worker_id: r.worker_id,
      lease_id: r.lease_id ?? null,
      error: r.error,
      retryable: r.retryable ?? true,
    }));
  }

  async heartbeat(org: string, id: string, r: HeartbeatRequest): Promise<QueueOps['heartbeat']['reply']> {
    const queue = await this.queueOf(org, id);
    return this.leased(org, id, r.worker_id, this.c.actors.ask(org, queue, 'heartbeat', {
      id,
      worker_id: r.worker_id,
      lease_id: r.lease_id ?? null,
      lease_duration_secs: r.lease_duration_secs ?? null,
    }));
  }

  /** The lease holder's progress report: stored on the job, published as job.progress. */
  async progress(org: string, id: string, r: ProgressRequest): Promise<QueueOps['progress']['reply']> {
    const data = r.data ?? null;
    if (data !== null && Buffer.byteLength(JSON.stringify(data)) > PROGRESS_DATA_MAX_BYTES) {
      throw validationError([{ field: 'data', message: `must be at most ${PROGRESS_DATA_MAX_BYTES} bytes of JSON` }]);
    }
    const queue = await this.queueOf(org, id);
    return this.leased(org, id, r.worker_id, this.c.actors.ask(org, queue, 'progress', {
      id,
      worker_id: r.worker_id,
      lease_id: r.lease_id ?? null,
      progress: r.progress,
      message: r.message ?? null,
      data,
    }));
  }

  /** Why the job is not running: every reason that holds now (docs/flow-control.md). */
  explain(org: string, id: string): Promise<Explanation> {
    return explainJob(this.c, org, id);
  }

  async cancel(org: string, id: string): Promise<NonNullable<QueueOps['cancel']['reply']>> {
    const reply = await this.c.actors.ask(org, await this.queueOf(org, id), 'cancel', { id });
    return reply ?? this.notLive(org, id, 'it can no longer be cancelled');
  }

  async setPriority(org: string, id: string, priority: number): Promise<NonNullable<QueueOps['priority']['reply']>> {
    const reply = await this.c.actors.ask(org, await this.queueOf(org, id), 'priority', { id, priority });
    return reply ?? this.notLive(org, id, 'only pending or scheduled jobs can change priority');
  }

  /** A dead-lettered or cancelled job, pending again with its retry count reset: the job as it now is. */
  async retry(org: string, id: string): Promise<Row> {
    const [row] = await terminalJobs(this.c.store, org, { ids: [id], statuses: ['deadletter', 'cancelled'] });
    if (!row) return this.notLive(org, id, 'only dead-lettered or cancelled jobs can be retried');
    if (row.workflow_id) throw workflowJob(row.workflow_id);
    const [outcome] = await this.revive(org, [row], ['deadletter', 'cancelled']);
    if (!outcome?.revived) return this.notLive(org, id, outcome?.reason ?? 'it cannot be retried');
    return outcome.job;
  }

  /**
   * Revives terminal jobs (job, DLQ and workflow retry), each counted as a creation: the one place where revived
   * jobs are admitted against the quotas. All are admitted at once, before anything changes (413, 429); then
   * `admitted`, the caller's last check, may still refuse (its error is thrown, the admission given back); then
   * each queue's actor revives its jobs. Jobs not revived give their admission back, and the first failure of
   * an actor is thrown once every queue answered.
   */
  async revive(org: string, jobs: Revival[], from: JobStatus[], admitted?: () => Promise<void>): Promise<ReviveOutcome[]> {
    const admission = await this.c.quotas.admitJobs(org, jobs.map(() => 0));
    try {
      await admitted?.();
    } catch (err) {
      this.c.quotas.releaseJobs(org, admission, jobs.length);
      throw err;
    }
    const byQueue = new Map<string, ReviveInput[]>();
    for (const { queue_name, id, priority, max_retries, timeout_seconds, last_error, idempotency_key, callback, workflow_id, blocked, concurrency_key } of jobs) {
      const inputs = byQueue.get(queue_name) ?? [];
      byQueue.set(queue_name, inputs);
      inputs.push({ id, priority, max_retries, timeout_seconds, last_error, idempotency_key, callback, workflow_id, blocked, concurrency_key });
    }
    const results = await Promise.allSettled(
      [...byQueue].map(async ([queue, inputs]) => {
        const outcomes = await this.c.actors.ask(org, queue, 'revive', { jobs: inputs, from });
        for (const o of outcomes) if (o.revived) this.c.places.remember(org, o.id, queue);
        return outcomes;
      }),
    );
    const outcomes = results.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    this.c.quotas.releaseJobs(org, admission, jobs.length - outcomes.filter((o) => o.revived).length);
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) throw failure.reason;
    return outcomes;
  }

  async get(org: string, id: string): Promise<Row> {
    const row = await getJob(this.c.store, org, id);
    if (!row) throw notFound('Job');
    return row;
  }

  /** A page of jobs, newest first, strictly after the keyset `after`; one row more than `limit` says there is a next page. */
  list(org: string, filter: JobFilter, after: JobKey | null, limit: number): Promise<Row[]> {
    return listJobs(this.c.store, org, filter, after, limit);
  }

  /** In the order asked, each id once; ids that are unknown (or another organization's) are left out. */
  async statuses(org: string, ids: string[]): Promise<JobStatusRow[]> {
    const unique = [...new Set(ids)];
    const byId = new Map((await jobStatuses(this.c.store, org, unique)).map((r) => [r.id, r]));
    return unique.flatMap((id) => byId.get(id) ?? []);
  }

  stats(org: string, queue: string | null): Promise<StatusCounts> {
    return jobStats(this.c.store, org, queue);
  }

  /**
   * A lease operation's answer. When the lease is gone because the job was cancelled under this very worker, says
   * so: still 409, so a client that only reads the status stops as before. Only this failure path pays the read.
   */
  private async leased<T>(org: string, id: string, worker: string, answer: Promise<T>): Promise<T> {
    try {
      return await answer;
    } catch (err) {
      throw err instanceof AppError ? await this.cancelledUnder(org, id, worker, err) : err;
    }
  }

  /** Why one item of a batch acknowledgement was refused, told as `leased` tells it. */
  private whyNot(org: string, input: CompleteInput, error: WireError): Promise<AppError> {
    return this.cancelledUnder(org, input.id, input.worker_id, AppError.fromWire(error));
  }

  /** JOB_CANCELLED instead of LEASE_EXPIRED when the job was cancelled while this worker held it. */
  private async cancelledUnder(org: string, id: string, worker: string, err: AppError): Promise<AppError> {
    if (err.code !== 'LEASE_EXPIRED') return err;
    const row = await getJob(this.c.store, org, id);
    if (row?.status === 'cancelled' && row.assigned_worker_id === worker) {
      return new AppError('JOB_CANCELLED', 'The job was cancelled while this worker held it; stop working on it', { job_status: 'cancelled' });
    }
    return err;
  }

  /** Which queue actor holds the job, or 404. */
  private async queueOf(org: string, id: string): Promise<string> {
    const queue = await this.c.places.find(org, id);
    if (queue === null) throw notFound('Job');
    return queue;
  }

  /** Re-reads a job a queue actor did not hold: 404 when it does not exist, otherwise 409 naming its status. */
  private async notLive(org: string, id: string, what: string): Promise<never> {
    const row = await getJob(this.c.store, org, id);
    if (!row) throw notFound('Job');
    throw new AppError('JOB_NOT_LIVE', `The job is ${row.status}; ${what}`, { job_status: row.status });
  }

  /** An absolute http(s) URL that passes the SSRF rules of outgoing webhooks (https and a public host in production). */
  private completionWebhook(url: string | null | undefined): string | null {
    if (url === undefined || url === null) return null;
    const problem = urlProblem(url, this.urlPolicy);
    if (problem !== null) throw validationError([{ field: 'completion_webhook', message: problem }], `completion_webhook ${problem}`);
    return new URL(url).toString();
  }
}
