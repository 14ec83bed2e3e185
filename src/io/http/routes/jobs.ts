// Job routes: enqueue (one or bulk), get, claim, complete, fail, heartbeat, cancel, priority, retry.
import Type, { type Static, type TObject, type TSchema } from 'typebox';
import { AppError, notFound, validationError, type ErrorCode } from '../../../errors.js';
import type { ClaimReply, EnqueueInput } from '../../../actors/queue/queue-actor.js';
import { getJob } from '../../db/sql/getJob.js';
import { terminalJobs } from '../../db/sql/terminalJobs.js';
import { presentJob } from '../present.js';
import { BulkResult, ClaimedJobs, CreatedJob, Job, JobCancelled, JobCompleted, JobFailed, JobPriority, JsonObject, LeaseExtended } from '../schemas.js';
import type { Request, Response, Route } from '../router.js';
import { validator } from '../validate.js';
import type { Admission } from '../../../runtime/quotas.js';
import { enqueueAdmitted } from '../../../runtime/enqueue.js';
import { policyOf, urlProblem, type UrlPolicy } from '../../webhooks/ssrf.js';
import { reviveJobs, type Services } from './services.js';

export const QUEUE_NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/;
export const QueueName = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_][A-Za-z0-9._-]*$' });
export const Uuid = Type.String({ minLength: 36, maxLength: 36, pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' });
export const WorkerId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._-]+$' });
const LeaseId = Type.String({ minLength: 1, maxLength: 100 });
export const LeaseSecs = Type.Integer({ minimum: 5, maximum: 3600 });
export const Priority = Type.Integer({ minimum: -100, maximum: 100 });
export const MaxRetries = Type.Integer({ minimum: 0, maximum: 100 });

const JobDefinition = Type.Object({
    queue_name: QueueName,
    payload: JsonObject,
    idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    priority: Type.Optional(Priority),
    scheduled_at: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
    max_retries: Type.Optional(MaxRetries),
    timeout_seconds: Type.Optional(LeaseSecs),
    completion_webhook: Type.Optional(Type.Union([Type.String({ maxLength: 2048 }), Type.Null()])),
    completion_webhook_secret: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 256 }), Type.Null()])),
    tags: Type.Optional(
      Type.Union([
        Type.Record(Type.String({ minLength: 1, maxLength: 100 }), Type.String({ maxLength: 256 })),
        Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50 }),
      ]),
    ),
});
export const EnqueueBody = validator(JobDefinition);
/** What the document says of a bulk item: a job definition whose queue_name may come from the defaults. */
const BulkItem = Type.Object({ ...JobDefinition.properties, queue_name: Type.Optional(QueueName) });
/**
 * What creating jobs adds to a route's errors (OpenAPI): the job quotas (429) and a queue moving between nodes
 * (503). The plan's payload cap answers 413 PAYLOAD_TOO_LARGE, which every route with a body lists already.
 */
export const JOB_ADMISSION: ErrorCode[] = ['QUOTA_EXCEEDED', 'SHARD_MOVED'];

export const BULK_MAX = 100;
// Top-level fields are defaults for the items; a bare array of definitions is accepted too.
const BulkBody = validator(
  Type.Object({
    jobs: Type.Array(Type.Unknown(), { minItems: 1, maxItems: BULK_MAX }),
    queue_name: Type.Optional(QueueName),
    priority: Type.Optional(Priority),
    max_retries: Type.Optional(MaxRetries),
    timeout_seconds: Type.Optional(LeaseSecs),
  }),
);

const PriorityBody = validator(Type.Object({ priority: Priority }));

const ClaimBody = validator(
  Type.Object({
    queue_name: QueueName,
    worker_id: WorkerId,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    lease_duration_secs: Type.Optional(LeaseSecs),
    wait_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 30_000 })),
  }),
);

const CompleteBody = validator(Type.Object({ worker_id: WorkerId, lease_id: LeaseId, result: Type.Optional(Type.Unknown()) }));

const FailBody = validator(
  Type.Object({
    worker_id: WorkerId,
    lease_id: LeaseId,
    error: Type.String({ minLength: 1, maxLength: 10_000 }),
    retryable: Type.Optional(Type.Boolean()),
  }),
);

const HeartbeatBody = validator(
  Type.Object({ worker_id: WorkerId, lease_id: Type.Optional(LeaseId), lease_duration_secs: Type.Optional(LeaseSecs) }),
);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;

/** A job id as given by a client, or 404: a string that is not a UUID names no job. */
export function jobIdOf(id: string): string {
  if (!UUID.test(id)) throw notFound('Job');
  return id.toLowerCase();
}

const jobId = (req: Request): string => jobIdOf(req.params.id!);

export function parseTime(field: string, value: string | null | undefined): number | null {
  if (value === undefined || value === null) return null;
  const t = Date.parse(value);
  if (!ISO_8601.test(value) || Number.isNaN(t) || !calendarDay(value)) {
    throw validationError([{ field, message: 'must be an ISO 8601 timestamp with a time zone' }]);
  }
  return t;
}

/** Date.parse rolls impossible days over (2030-02-30 → March 2); the day must exist in its month. */
function calendarDay(value: string): boolean {
  const [y, m, d] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
  return m >= 1 && m <= 12 && d >= 1 && d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}

/** An absolute http(s) URL that passes the SSRF rules of outgoing webhooks (https and a public host in production). */
function parseWebhook(url: string | null | undefined, policy: UrlPolicy): string | null {
  if (url === undefined || url === null) return null;
  const problem = urlProblem(url, policy);
  if (problem !== null) throw validationError([{ field: 'completion_webhook', message: problem }], `completion_webhook ${problem}`);
  return new URL(url).toString();
}

/** A validated definition, compiled for the queue actor (422 on a bad time or URL). */
function compile(body: Static<typeof JobDefinition>, urlPolicy: UrlPolicy): { queue: string; input: EnqueueInput; bytes: number } {
  return {
    queue: body.queue_name,
    bytes: Buffer.byteLength(JSON.stringify(body.payload)),
    input: {
      payload: body.payload,
      priority: body.priority ?? 0,
      max_retries: body.max_retries ?? null,
      timeout_seconds: body.timeout_seconds ?? null,
      scheduled_at: parseTime('scheduled_at', body.scheduled_at),
      idempotency_key: body.idempotency_key ?? null,
      tags: Array.isArray(body.tags) ? Object.fromEntries(body.tags.map((t) => [t, ''])) : (body.tags ?? {}),
      completion_webhook: parseWebhook(body.completion_webhook, urlPolicy),
      completion_webhook_secret: body.completion_webhook_secret ?? null,
    },
  };
}

/** Enqueues one admitted job: 201 with the new job, or 200 with the job holding its idempotency key. */
async function submit(s: Services, org: string, queue: string, input: EnqueueInput, admission: Admission): Promise<Response> {
  const { created, job } = await enqueueAdmitted(s, org, queue, input, admission);
  return { status: created ? 201 : 200, body: { ...presentJob(job), created } };
}

/**
 * POST /api/v1/jobs for an organization: validate the create-job body, admit it against the job quotas (413,
 * 429), enqueue. Every single-job entry point (this route, the incoming webhook) goes through here.
 */
export async function enqueueJob(s: Services, org: string, body: unknown): Promise<Response> {
  const { queue, input, bytes } = compile(EnqueueBody(body), policyOf(s.config));
  return submit(s, org, queue, input, await s.quotas.admitJobs(org, [bytes]));
}

/**
 * A workflow job comes back with its workflow (POST /workflows/:id/retry), which re-blocks it behind parents that
 * have not completed and runs the workflow again; reviving it alone would run it out of order.
 */
export const workflowJob = (workflowId: string): AppError =>
  new AppError('CONFLICT', `The job belongs to workflow ${workflowId}: retry the workflow (POST /api/v1/workflows/${workflowId}/retry)`, {
    workflow_id: workflowId,
  });

/** Claims for a worker (the claim body), remembering where each job lives; the jobs as the API shows them. */
export async function claimJobs(s: Services, org: string, body: unknown): Promise<Record<string, unknown>[]> {
  const b = ClaimBody(body);
  const reply = await s.pool.ask<ClaimReply>(org, b.queue_name, 'claim', {
    worker_id: b.worker_id,
    limit: b.limit ?? 1,
    lease_duration_secs: b.lease_duration_secs ?? null,
    wait_ms: b.wait_ms ?? 0,
  });
  for (const j of reply.jobs) s.places.remember(org, j.id as string, b.queue_name);
  return reply.jobs.map(presentJob);
}

/**
 * Jobs claimed for a worker that never got them (its long poll or stream was gone when they came): back to
 * pending at once, not after their lease. Best effort: a failure only leaves them to their lease expiry.
 */
export function unclaimJobs(s: Services, org: string, jobs: Record<string, unknown>[]): void {
  const byQueue = new Map<string, Array<{ id: string; lease_id: string }>>();
  for (const j of jobs) {
    const queue = j.queue_name as string;
    byQueue.set(queue, [...(byQueue.get(queue) ?? []), { id: j.id as string, lease_id: j.lease_id as string }]);
  }
  for (const [queue, items] of byQueue) s.pool.ask(org, queue, 'unclaim', { items }).catch(() => {});
}

export type LeaseOp = 'complete' | 'fail' | 'heartbeat';
const LEASE_BODIES: Record<LeaseOp, (b: unknown) => Record<string, unknown>> = { complete: CompleteBody, fail: FailBody, heartbeat: HeartbeatBody };

/** Complete, fail or heartbeat the organization's job `id` (a lowercase UUID) under its lease: the actor's reply. */
export async function leaseAction(s: Services, org: string, op: LeaseOp, id: string, body: unknown): Promise<Record<string, unknown>> {
  const b = LEASE_BODIES[op](body);
  const queue = await s.places.find(org, id);
  if (queue === null) throw notFound('Job');
  const args =
    op === 'complete'
      ? { id, worker_id: b.worker_id, lease_id: b.lease_id, result: b.result ?? null }
      : op === 'fail'
        ? { id, worker_id: b.worker_id, lease_id: b.lease_id, error: b.error, retryable: b.retryable ?? true }
        : { id, worker_id: b.worker_id, lease_id: b.lease_id ?? null, lease_duration_secs: b.lease_duration_secs ?? null };
  return present(await s.pool.ask<Record<string, unknown>>(org, queue, op, args));
}

export function jobRoutes(s: Services): Route[] {
  const urlPolicy = policyOf(s.config);
  /** Which queue actor holds the job, or 404. */
  const placeOf = async (req: Request, id: string): Promise<string> => {
    const queue = await s.places.find(req.principal.organizationId, id);
    if (queue === null) throw notFound('Job');
    return queue;
  };

  /**
   * Items are validated one by one: an invalid item is reported without sinking the valid ones. The valid ones
   * are admitted together (a quota that cannot take them all refuses the request).
   */
  const bulk = async (req: Request): Promise<Response> => {
    const { jobs, ...defaults } = BulkBody(Array.isArray(req.body) ? { jobs: req.body } : req.body);
    const org = req.principal.organizationId;
    const failed: Array<{ index: number; error: Record<string, unknown> }> = [];
    const valid: Array<{ index: number } & ReturnType<typeof compile>> = [];
    jobs.forEach((item, index) => {
      try {
        const merged = item !== null && typeof item === 'object' && !Array.isArray(item) ? { ...defaults, ...item } : item;
        valid.push({ index, ...compile(EnqueueBody(merged), urlPolicy) });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        failed.push({ index, error: err.toBody() });
      }
    });
    const succeeded: Array<{ index: number; id: string; created: boolean }> = [];
    if (valid.length > 0) {
      const admission = await s.quotas.admitJobs(org, valid.map((v) => v.bytes));
      const outcomes = await Promise.allSettled(valid.map((v) => submit(s, org, v.queue, v.input, admission)));
      outcomes.forEach((o, i) => {
        const index = valid[i]!.index;
        if (o.status === 'fulfilled') {
          const job = o.value.body as { id: string; created: boolean };
          succeeded.push({ index, id: job.id, created: job.created });
        } else {
          const err = o.reason instanceof AppError ? o.reason : new AppError('INTERNAL');
          failed.push({ index, error: err.toBody() });
        }
      });
    }
    failed.sort((a, b) => a.index - b.index);
    return {
      status: 200,
      body: { succeeded, failed, total: jobs.length, success_count: succeeded.length, failure_count: failed.length },
    };
  };

  /** Re-reads a job a queue actor did not hold: 404 when it does not exist, otherwise 409 naming its status. */
  const notLive = async (org: string, id: string, what: string): Promise<never> => {
    const row = await getJob(s.store, org, id);
    if (!row) throw notFound('Job');
    throw new AppError('CONFLICT', `The job is ${row.status}; ${what}`, { job_status: row.status });
  };

  const priority = async (req: Request): Promise<Response> => {
    const id = jobId(req);
    const body = PriorityBody(req.body);
    const org = req.principal.organizationId;
    const queue = await placeOf(req, id);
    const reply = await s.pool.ask<Record<string, unknown> | null>(org, queue, 'priority', { id, priority: body.priority });
    return reply ? { status: 200, body: reply } : notLive(org, id, 'only pending or scheduled jobs can change priority');
  };

  const retry = async (req: Request): Promise<Response> => {
    const id = jobId(req);
    const org = req.principal.organizationId;
    const [row] = await terminalJobs(s.store, org, { ids: [id], statuses: ['deadletter', 'cancelled'] });
    if (!row) return notLive(org, id, 'only dead-lettered or cancelled jobs can be retried');
    if (row.workflow_id) throw workflowJob(row.workflow_id);
    const [outcome] = await reviveJobs(s, org, row.queue_name, [row], ['deadletter', 'cancelled']);
    if (!outcome?.revived) return notLive(org, id, outcome?.reason ?? 'it cannot be retried');
    return { status: 200, body: presentJob(outcome.job) };
  };

  const get = async (req: Request): Promise<Response> => {
    const row = await getJob(s.store, req.principal.organizationId, jobId(req));
    if (!row) throw notFound('Job');
    return { status: 200, body: presentJob(row) };
  };

  const claim = async (req: Request): Promise<Response> => {
    const org = req.principal.organizationId;
    const jobs = await claimJobs(s, org, req.body);
    return { status: 200, body: { jobs }, undelivered: () => unclaimJobs(s, org, jobs) };
  };

  const leaseOp =
    (op: LeaseOp) =>
    async (req: Request): Promise<Response> => ({
      status: 200,
      body: await leaseAction(s, req.principal.organizationId, op, jobId(req), req.body),
    });

  const cancel = async (req: Request): Promise<Response> => {
    const id = jobId(req);
    const org = req.principal.organizationId;
    const queue = await placeOf(req, id);
    const reply = await s.pool.ask<Record<string, unknown> | null>(org, queue, 'cancel', { id });
    if (reply) return { status: 200, body: reply };
    const row = await getJob(s.store, org, id);
    if (!row) throw notFound('Job');
    throw new AppError('CONFLICT', `The job is ${row.status} and can no longer be cancelled`, { job_status: row.status });
  };

  const ok = (description: string, schema?: TSchema) => ({ 200: { description, schema } });
  return [
    {
      method: 'POST',
      path: '/api/v1/jobs',
      permission: 'jobs:write',
      handler: (req) => enqueueJob(s, req.principal.organizationId, req.body),
      doc: {
        operationId: 'enqueueJob',
        summary: 'Enqueue a job',
        description: 'A job sent to an unknown queue creates it. An idempotency_key already used in the organization returns that job (200, created: false).',
        body: EnqueueBody.schema,
        responses: { 201: { description: 'Created', schema: CreatedJob }, 200: { description: 'The job holding this idempotency key', schema: CreatedJob } },
        errors: JOB_ADMISSION,
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/claim',
      permission: 'jobs:write',
      handler: claim,
      doc: {
        operationId: 'claimJobs',
        summary: 'Claim jobs under a lease',
        description: 'Highest priority first, then oldest. wait_ms long-polls until a job arrives. A paused queue returns no jobs.',
        body: ClaimBody.schema,
        responses: ok('The claimed jobs, each with its lease_id', ClaimedJobs),
        errors: ['SHARD_MOVED'],
      },
    },
    { method: 'GET', path: '/api/v1/jobs/:id', permission: 'jobs:read', handler: get, doc: { operationId: 'getJob', summary: 'Get a job', responses: ok('The job', Job) } },
    {
      method: 'POST',
      path: '/api/v1/jobs/:id/complete',
      permission: 'jobs:write',
      handler: leaseOp('complete'),
      doc: {
        operationId: 'completeJob',
        summary: 'Complete a claimed job (409 LEASE_EXPIRED for a stale lease)',
        body: CompleteBody.schema,
        responses: ok('Completed', JobCompleted),
        errors: ['LEASE_EXPIRED', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/:id/fail',
      permission: 'jobs:write',
      handler: leaseOp('fail'),
      doc: {
        operationId: 'failJob',
        summary: 'Fail a claimed job',
        description: 'Retried after min(2^retry_count, 60) minutes while retries remain, else dead-lettered; retryable: false dead-letters at once.',
        body: FailBody.schema,
        responses: ok('scheduled (with the next attempt time) or deadletter', JobFailed),
        errors: ['LEASE_EXPIRED', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/:id/heartbeat',
      permission: 'jobs:write',
      handler: leaseOp('heartbeat'),
      doc: {
        operationId: 'heartbeatJob',
        summary: 'Extend a live lease (an expired one is never revived)',
        body: HeartbeatBody.schema,
        responses: ok('The new lease expiry', LeaseExtended),
        errors: ['LEASE_EXPIRED', 'SHARD_MOVED'],
      },
    },
    { method: 'DELETE', path: '/api/v1/jobs/:id', permission: 'jobs:write', handler: cancel, doc: { operationId: 'cancelJob', summary: 'Cancel a job', responses: ok('Cancelled', JobCancelled), errors: ['CONFLICT', 'SHARD_MOVED'] } },
    {
      method: 'POST',
      path: '/api/v1/jobs/bulk',
      permission: 'jobs:write',
      handler: bulk,
      doc: {
        operationId: 'enqueueJobs',
        summary: `Enqueue up to ${BULK_MAX} jobs`,
        description: 'Top-level fields are defaults for the items; a bare array is accepted. Invalid items are reported per index without sinking the valid ones.',
        // Items are checked one by one against the job definition (queue_name may come from the defaults).
        body: Type.Union([
          Type.Object({ ...(BulkBody.schema as TObject).properties, jobs: Type.Array(BulkItem, { minItems: 1, maxItems: BULK_MAX }) }),
          Type.Array(BulkItem, { minItems: 1, maxItems: BULK_MAX }),
        ]),
        responses: ok('Per-item outcome: succeeded [{index, id, created}], failed [{index, error}]', BulkResult),
        errors: JOB_ADMISSION,
      },
    },
    {
      method: 'PUT',
      path: '/api/v1/jobs/:id/priority',
      permission: 'jobs:write',
      handler: priority,
      doc: {
        operationId: 'setJobPriority',
        summary: 'Change the priority of a pending or scheduled job',
        body: PriorityBody.schema,
        responses: ok('The new priority', JobPriority),
        errors: ['CONFLICT', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/:id/retry',
      permission: 'jobs:write',
      handler: retry,
      doc: {
        operationId: 'retryJob',
        summary: 'Retry a dead-lettered or cancelled job (retry count reset)',
        responses: ok('The job, pending again', Job),
        errors: ['CONFLICT', 'QUOTA_EXCEEDED', 'SHARD_MOVED'],
      },
    },
  ];
}

/** Lease replies carry epoch-ms times from the actor. */
function present(reply: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...reply };
  for (const k of ['completed_at', 'scheduled_at', 'lease_expires_at']) {
    if (typeof out[k] === 'number') out[k] = new Date(out[k] as number).toISOString();
  }
  return out;
}
