// Response shapes, for the OpenAPI document. Request schemas live with their routes (the validators). A schema
// with an `$id` is a shared component of the document (openapi.ts); the `$id` is its name there, and what a
// generated client calls the type. test/openapi.test.ts checks live answers against them.
import Type, { type TSchema } from 'typebox';
import { JOB_STATUSES } from '../db/sql/jobStats.js';
import { PLAN_RESOURCES } from '../../actors/org/plans.js';

/**
 * Any JSON object (payloads, templates, metadata). Not Type.Record(String, Unknown): typebox checks a Record key
 * by key against a pattern (150 ms for 90,000 keys here), while an object type with no declared properties is a
 * constant-time check.
 */
export const JsonObject = Type.Unsafe<Record<string, unknown>>(Type.Object({}, { additionalProperties: true, description: 'any JSON object' }));

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const DateTime = Type.String({ format: 'date-time' });
const Time = Nullable(DateTime);
const Uuid = Type.String({ format: 'uuid' });
const Count = Type.Integer({ minimum: 0 });

export const JobStatus = Type.Union(
  ['pending', 'scheduled', 'processing', 'completed', 'deadletter', 'cancelled'].map((s) => Type.Literal(s)),
  { $id: 'JobStatus' },
);

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'lower_snake identifier, e.g. validation_error' }),
    code: Type.String({ description: 'UPPER_SNAKE code from the catalog (docs/errors.md)' }),
    message: Type.String(),
    status: Type.Integer({ description: 'the HTTP status' }),
    details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), { description: 'VALIDATION_ERROR: one entry per problem' })),
    retry_after: Type.Optional(Type.Integer({ description: 'RATE_LIMITED: seconds to wait (also the Retry-After header)' })),
    resource: Type.Optional(Type.String({ description: 'QUOTA_EXCEEDED: the plan resource at its limit' })),
    current: Type.Optional(Type.Integer({ description: 'QUOTA_EXCEEDED, PAYLOAD_TOO_LARGE: the amount in use or asked for' })),
    limit: Type.Optional(Type.Integer({ description: 'QUOTA_EXCEEDED, PAYLOAD_TOO_LARGE, TOO_MANY_STREAMS: the limit' })),
    plan: Type.Optional(Type.String({ description: 'QUOTA_EXCEEDED, PAYLOAD_TOO_LARGE: the plan tier' })),
    upgrade_to: Type.Optional(Nullable(Type.String({ description: 'the next plan tier, null on the highest' }))),
    job_status: Type.Optional(Type.String({ description: 'CONFLICT on a job: its status' })),
    workflow_status: Type.Optional(Type.String({ description: 'CONFLICT on a workflow: its status' })),
    workflow_id: Type.Optional(Type.String({ description: 'CONFLICT: the workflow a job belongs to' })),
    active_jobs: Type.Optional(Type.Integer({ description: 'CONFLICT on a queue delete: its live jobs' })),
  },
  { $id: 'Error', additionalProperties: true, description: 'Every error answer: {error, code, message, status} and the fields its code adds' },
);

/** The lease holder's last report on a job (POST /jobs/:id/progress). */
const Progress = Type.Object({ progress: Type.Number(), message: Nullable(Type.String()), data: Type.Unknown(), at: DateTime });

export const Job = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'UUIDv7: ordered by creation' }),
    organization_id: Uuid,
    queue_name: Type.String(),
    status: JobStatus,
    payload: JsonObject,
    result: Type.Unknown({ description: 'what complete was given; null until then' }),
    priority: Type.Integer({ minimum: -100, maximum: 100 }),
    retry_count: Type.Integer(),
    max_retries: Type.Integer(),
    last_error: Nullable(Type.String()),
    errors: Type.Array(Type.Object({ attempt: Type.Integer(), error: Type.String(), at: DateTime })),
    tags: Type.Record(Type.String(), Type.String()),
    idempotency_key: Nullable(Type.String()),
    timeout_seconds: Type.Integer(),
    assigned_worker_id: Nullable(Type.String()),
    lease_id: Type.Union([Type.String(), Type.Null()], { description: 'set while processing; echo it on complete/fail/heartbeat' }),
    workflow_id: Nullable(Type.String()),
    dependencies_met: Type.Boolean(),
    completion_webhook: Nullable(Type.String()),
    concurrency_key: Nullable(Type.String({ description: 'fairness and per-key concurrency group (docs/flow-control.md)' })),
    debounce_key: Nullable(Type.String()),
    progress: Nullable(Progress),
    idempotency_expires_at: Type.Union([DateTime, Type.Null()], { description: 'when the idempotency key frees itself (idempotency_ttl_secs)' }),
    expires_at: Type.Union([DateTime, Type.Null()], { description: 'not started by then, the job is cancelled with last_error "expired"' }),
    scheduled_at: Time,
    created_at: DateTime,
    started_at: Time,
    completed_at: Time,
    updated_at: DateTime,
    lease_expires_at: Time,
  },
  { $id: 'Job' },
);

export const CreatedJob = Type.Intersect(
  [Job, Type.Object({ created: Type.Boolean({ description: 'false: the idempotency key was used already, and this is its job' }) })],
  { $id: 'CreatedJob' },
);

export const ClaimedJobs = Type.Object({ jobs: Type.Array(Job) }, { $id: 'ClaimedJobs' });

export const JobCompleted = Type.Object({ id: Uuid, status: Type.Literal('completed'), completed_at: DateTime }, { $id: 'JobCompleted' });

export const JobFailed = Type.Object(
  {
    id: Uuid,
    status: Type.Union([Type.Literal('scheduled'), Type.Literal('deadletter')], { description: 'scheduled: retried at scheduled_at' }),
    retry_count: Type.Integer(),
    max_retries: Type.Integer(),
    scheduled_at: Time,
    last_error: Type.String(),
  },
  { $id: 'JobFailed' },
);

export const JobProgress = Type.Intersect([Type.Object({ id: Uuid }), Progress], { $id: 'JobProgress' });

const Reason = Type.Object(
  { reason: Type.String({ description: 'queue_paused, scheduled, retry_backoff, … (docs/flow-control.md)' }), message: Type.String() },
  { additionalProperties: true, description: 'one reason, with the data behind it' },
);
export const JobExplanation = Type.Object(
  {
    id: Uuid,
    queue_name: Type.String(),
    status: JobStatus,
    running: Type.Boolean(),
    reasons: Type.Array(Reason, { description: 'every reason that holds now; empty for a running job' }),
    at: DateTime,
  },
  { $id: 'JobExplanation' },
);

export const LeaseExtended = Type.Object({ id: Uuid, lease_id: Type.String(), lease_expires_at: DateTime }, { $id: 'LeaseExtended' });

export const JobCancelled = Type.Object({ id: Uuid, status: Type.Literal('cancelled') }, { $id: 'JobCancelled' });

export const JobPriority = Type.Object(
  { id: Uuid, status: Type.Union([Type.Literal('pending'), Type.Literal('scheduled')]), priority: Type.Integer() },
  { $id: 'JobPriority' },
);

export const BulkResult = Type.Object(
  {
    succeeded: Type.Array(
      Type.Object({
        index: Type.Integer({ description: 'the item position in the request' }),
        id: Uuid,
        job_id: Type.String({ format: 'uuid', description: 'the same as id' }),
        created: Type.Boolean(),
      }),
    ),
    failed: Type.Array(Type.Object({ index: Type.Integer(), error: ErrorBody })),
    total: Type.Integer(),
    success_count: Type.Integer(),
    failure_count: Type.Integer(),
  },
  { $id: 'BulkResult' },
);

export const AckResult = Type.Object(
  {
    succeeded: Type.Array(
      Type.Object({ index: Type.Integer({ description: 'the item position in the request' }), id: Uuid, status: Type.Literal('completed'), completed_at: DateTime }),
    ),
    failed: Type.Array(Type.Object({ index: Type.Integer(), id: Uuid, error: ErrorBody })),
    total: Type.Integer(),
    success_count: Type.Integer(),
    failure_count: Type.Integer(),
    jobs: Type.Optional(Type.Array(Job, { description: 'with claim in the request: the jobs it claimed, each with its lease_id' })),
    claim_error: Type.Optional(ErrorBody),
  },
  { $id: 'AckResult' },
);

export const StatusCounts = Type.Object(Object.fromEntries(JOB_STATUSES.map((st) => [st, Count])), { $id: 'StatusCounts' });

export const JobStatusLine = Type.Object(
  { id: Uuid, status: JobStatus, queue_name: Type.String(), retry_count: Type.Integer(), updated_at: DateTime },
  { $id: 'JobStatusLine' },
);

const Neighbour = Type.Object({
  id: Uuid,
  job_id: Type.String({ format: 'uuid', description: 'the same as id' }),
  name: Type.String({ description: 'its name in the workflow' }),
  status: JobStatus,
});
export const JobDependencies = Type.Object(
  {
    job_id: Uuid,
    workflow_id: Type.Union([Uuid, Type.Null()], { description: 'null: the job belongs to no workflow' }),
    dependencies: Type.Array(Neighbour, { description: 'the jobs it waits for' }),
    dependents: Type.Array(Neighbour, { description: 'the jobs that wait for it' }),
  },
  { $id: 'JobDependencies' },
);

export const JobStats = Type.Object(
  {
    queue_name: Nullable(Type.String()),
    counts: StatusCounts,
    total: Count,
    // The counts again at the top level, where clients of the hosted service read them.
    ...Object.fromEntries(JOB_STATUSES.map((st) => [st, Count])),
  },
  { $id: 'JobStats' },
);

export const DlqRetryResult = Type.Object(
  { retried: Count, job_ids: Type.Array(Uuid), failed: Type.Array(Type.Object({ id: Type.String(), error: Type.String() })) },
  { $id: 'DlqRetryResult' },
);

export const DlqPurgeResult = Type.Object({ purged: Count }, { $id: 'DlqPurgeResult' });

export const Queue = Type.Object(
  {
    name: Type.String(),
    queue_name: Type.String({ description: 'the same as name' }),
    paused: Type.Boolean(),
    paused_reason: Nullable(Type.String()),
    paused_at: Time,
    config: Type.Object({
      max_retries: Nullable(Type.Integer()),
      lease_duration_secs: Nullable(Type.Integer()),
      concurrency_per_key: Nullable(Type.Integer()),
      max_concurrency: Nullable(Type.Integer()),
      rate_limit: Nullable(Type.Object({ jobs: Type.Integer(), per_seconds: Type.Integer() })),
    }),
    /** Job counts per status: in the answers of the reads (GET), not of the actions. */
    counts: Type.Optional(StatusCounts),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: 'Queue' },
);

export const QueueStats = Type.Object(
  {
    name: Type.String(),
    paused: Type.Boolean(),
    ...Object.fromEntries(JOB_STATUSES.map((st) => [st, Count])),
    oldest_pending_age_seconds: Type.Union([Count, Type.Null()], {
      description: 'whole seconds since the oldest pending job became due (scheduled_at, else created_at); null when none',
    }),
    throughput_last_minute: Type.Object({
      completed: Type.Integer({ minimum: 0, description: 'jobs completed in the last 60 s' }),
      failed: Type.Integer({ minimum: 0, description: 'failed attempts (fail calls, lease expiries) recorded in the last 60 s' }),
    }),
    busiest_keys: Type.Array(Type.Object({ key: Type.String(), processing: Count, waiting: Count }), {
      description: 'the concurrency keys with the most processing jobs, then the most live jobs (at most 10)',
    }),
  },
  { $id: 'QueueStats' },
);

export const QueueDeleted = Type.Object({ name: Type.String(), deleted: Type.Literal(true) }, { $id: 'QueueDeleted' });

/** The answer of deleting a schedule or an outgoing webhook. */
export const Deleted = Type.Object({ id: Uuid, deleted: Type.Literal(true) }, { $id: 'Deleted' });

export const Usage = Type.Object(
  {
    organization_id: Uuid,
    plan: Type.Object({ tier: Type.String(), display_name: Type.String() }),
    period: Type.Object({ start: DateTime, day: Type.String({ description: 'YYYY-MM-DD (UTC)' }) }),
    usage: Type.Object({
      ...Object.fromEntries(
        ['jobs_today', 'active_jobs'].map((r) => [r, Type.Object({ current: Count, limit: Nullable(Count), percentage: Nullable(Type.Number()) })]),
      ),
      ...Object.fromEntries(
        ['queues', 'workers', 'api_keys', 'schedules', 'workflows', 'webhooks'].map((r) => [r, Type.Object({ current: Count, limit: Nullable(Count) })]),
      ),
    }),
    limits: Type.Object(Object.fromEntries(PLAN_RESOURCES.map((r) => [r, Nullable(Count)])), { description: 'null: unlimited' }),
    jobs: Type.Object({ created_today: Count, by_status: StatusCounts, total: Count }),
    api_calls: Type.Object({ today: Count, rate_limited_today: Count, rate_per_second: Nullable(Count), burst: Nullable(Count) }),
  },
  { $id: 'Usage' },
);

const Seconds = Type.Union([Type.Number({ minimum: 0 }), Type.Null()]);
export const DashboardOverview = Type.Object(
  {
    version: Type.String({ description: "the node's version (also the X-Sluice-Version header)" }),
    started_at: DateTime,
    uptime_seconds: Count,
    at: DateTime,
    store: Type.Object({
      kind: Type.Union([Type.Literal('postgresql'), Type.Literal('embedded')]),
      status: Type.Literal('ok', { description: 'a store that does not answer makes the answer 503' }),
      latency_ms: Type.Number({ minimum: 0 }),
    }),
    jobs: Type.Object({
      by_status: StatusCounts,
      total: Count,
      completed_24h: Count,
      failed_24h: Type.Integer({ minimum: 0, description: 'jobs dead-lettered in the last 24 h' }),
      failed_attempts_24h: Type.Integer({ minimum: 0, description: 'failed attempts (fail calls, lease expiries) in the last 24 h' }),
      avg_wait_seconds_24h: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'due → claimed, of the jobs claimed in the last 24 h' }),
      avg_processing_seconds_24h: Seconds,
    }),
    queues: Type.Array(Type.Object({ name: Type.String(), paused: Type.Boolean(), counts: StatusCounts }), { description: 'the first 20 by name' }),
    more_queues: Type.Boolean({ description: 'the organization has more than 20 queues' }),
    workers: Type.Object({ total: Count, healthy: Count, unhealthy: Count }),
  },
  { $id: 'DashboardOverview' },
);

export const PlanChange = Type.Object(
  {
    organization_id: Uuid,
    plan: Type.String(),
    limit_overrides: Type.Object(Object.fromEntries(PLAN_RESOURCES.map((r) => [r, Type.Optional(Nullable(Count))])), {
      description: 'the organization’s own limits over its plan’s (null: unlimited)',
    }),
  },
  { $id: 'PlanChange' },
);

export const UsageReset = Type.Object({ organization_id: Uuid, jobs_today: Type.Literal(0) }, { $id: 'UsageReset' });

export const Health = Type.Object({ status: Type.Literal('ok') }, { $id: 'Health' });

export const Readiness = Type.Object({ status: Type.Literal('ready'), checks: Type.Object({ store: Type.Literal('ok') }) }, { $id: 'Readiness' });

/** GET /api/v1/openapi.json: described by the OpenAPI 3.1 specification, not here. */
export const OpenApiDocument = Type.Object({ openapi: Type.Literal('3.1.0') }, { additionalProperties: true });
