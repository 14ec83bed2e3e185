// Job routes (REST adapter): enqueue (one or bulk), get, claim, complete, fail, heartbeat, progress, cancel,
// priority, retry, explain. The operations are src/app/jobs.ts; here: the OpenAPI doc and presentation.
import Type, { type TObject, type TSchema } from 'typebox';
import { ACK_MAX, BULK_MAX, BulkBody, ClaimBody, CompleteBody, CompleteManyBody, EnqueueBody, FailBody, HeartbeatBody, JobDefinition, PriorityBody, ProgressBody, type Enqueued } from '../../../app/jobs.js';
import { idOf, QueueName } from '../../../app/fields.js';
import type { App } from '../../../app/app.js';
import type { ErrorCode } from '../../../errors.js';
import { presentJob, presentTimes } from '../../present.js';
import { AckResult, BulkResult, ClaimedJobs, CreatedJob, Job, JobCancelled, JobCompleted, JobExplanation, JobFailed, JobPriority, JobProgress, LeaseExtended } from '../schemas.js';
import type { Request, Response, Route } from '../router.js';

const jobId = (req: Request): string => idOf('Job', req.params.id!);

/** 201 with the new job, or 200 with the job holding its idempotency key. */
export const presentEnqueued = ({ created, job }: Enqueued): Response => {
  const body = presentJob(job);
  body.created = created;
  return { status: created ? 201 : 200, body };
};

/** What the document says of a bulk item: a job definition whose queue_name may come from the defaults. */
const BulkItem = Type.Object({ ...JobDefinition.properties, queue_name: Type.Optional(QueueName) });
/**
 * What creating jobs adds to a route's errors (OpenAPI): the job quotas (429) and a queue moving between nodes
 * (503). The plan's payload cap answers 413 PAYLOAD_TOO_LARGE, which every route with a body lists already.
 */
export const JOB_ADMISSION: ErrorCode[] = ['QUOTA_EXCEEDED', 'SHARD_MOVED'];

export function jobRoutes(app: App): Route[] {
  const { jobs } = app;
  const org = (req: Request) => req.principal.organizationId;

  const claim = async (req: Request): Promise<Response> => {
    const claimed = await jobs.claim(org(req), ClaimBody(req.body));
    return { status: 200, body: { jobs: claimed.map(presentJob) }, undelivered: () => jobs.unclaim(org(req), claimed) };
  };

  const handlers = {
    enqueue: async (req: Request) => presentEnqueued(await jobs.enqueue(org(req), EnqueueBody(req.body))),
    bulk: async (req: Request): Promise<Response> => ({
      status: 200,
      body: await jobs.bulk(org(req), BulkBody(Array.isArray(req.body) ? { jobs: req.body } : req.body)),
    }),
    get: async (req: Request): Promise<Response> => ({ status: 200, body: presentJob(await jobs.get(org(req), jobId(req))) }),
    claim,
    complete: async (req: Request): Promise<Response> => ({
      status: 200,
      body: presentTimes(await jobs.complete(org(req), jobId(req), CompleteBody(req.body))),
    }),
    completeMany: async (req: Request): Promise<Response> => {
      const out = await jobs.completeMany(org(req), CompleteManyBody(req.body));
      const claimed = out.jobs;
      const body = { ...out, succeeded: out.succeeded.map(presentTimes), ...(claimed ? { jobs: claimed.map(presentJob) } : {}) };
      // As for a claim: jobs claimed for a client that is gone go back at once, not after their lease.
      return { status: 200, body, ...(claimed && claimed.length > 0 ? { undelivered: () => jobs.unclaim(org(req), claimed) } : {}) };
    },
    fail: async (req: Request): Promise<Response> => ({ status: 200, body: presentTimes(await jobs.fail(org(req), jobId(req), FailBody(req.body))) }),
    heartbeat: async (req: Request): Promise<Response> => ({
      status: 200,
      body: presentTimes(await jobs.heartbeat(org(req), jobId(req), HeartbeatBody(req.body))),
    }),
    progress: async (req: Request): Promise<Response> => ({ status: 200, body: await jobs.progress(org(req), jobId(req), ProgressBody(req.body)) }),
    explain: async (req: Request): Promise<Response> => ({ status: 200, body: await jobs.explain(org(req), jobId(req)) }),
    cancel: async (req: Request): Promise<Response> => ({ status: 200, body: await jobs.cancel(org(req), jobId(req)) }),
    priority: async (req: Request): Promise<Response> => ({
      status: 200,
      body: await jobs.setPriority(org(req), jobId(req), PriorityBody(req.body).priority),
    }),
    retry: async (req: Request): Promise<Response> => ({ status: 200, body: presentJob(await jobs.retry(org(req), jobId(req))) }),
  };

  const ok = (description: string, schema?: TSchema) => ({ 200: { description, schema } });
  return [
    {
      method: 'POST',
      path: '/api/v1/jobs',
      permission: 'jobs:write',
      handler: handlers.enqueue,
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
      handler: handlers.claim,
      doc: {
        operationId: 'claimJobs',
        summary: 'Claim jobs under a lease',
        description: 'Highest priority first, then oldest. wait_ms long-polls until a job arrives. A paused queue returns no jobs.',
        body: ClaimBody.schema,
        responses: ok('The claimed jobs, each with its lease_id', ClaimedJobs),
        errors: ['SHARD_MOVED'],
      },
    },
    { method: 'GET', path: '/api/v1/jobs/:id', permission: 'jobs:read', handler: handlers.get, doc: { operationId: 'getJob', summary: 'Get a job', responses: ok('The job', Job) } },
    {
      method: 'POST',
      path: '/api/v1/jobs/:id/complete',
      permission: 'jobs:write',
      handler: handlers.complete,
      doc: {
        operationId: 'completeJob',
        summary: 'Complete a claimed job (409 LEASE_EXPIRED for a stale lease)',
        description: 'lease_id may be left out: the lease is then fenced on worker_id alone (the worker must hold the live lease).',
        body: CompleteBody.schema,
        responses: ok('Completed', JobCompleted),
        errors: ['LEASE_EXPIRED', 'JOB_CANCELLED', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/complete',
      permission: 'jobs:write',
      handler: handlers.completeMany,
      doc: {
        operationId: 'completeJobs',
        summary: `Complete up to ${ACK_MAX} claimed jobs at once (a batch acknowledgement)`,
        description:
          'Each item completes as POST /jobs/{id}/complete would, or fails alone (a stale lease, a job cancelled under this worker, an unknown id): ' +
          'the answer lists both, by the item position. worker_id at the top is the default of the items. ' +
          'With claim, the same request then claims up to claim.limit jobs of claim.queue_name for worker_id (required then), without waiting, ' +
          'as POST /jobs/claim would: they come back in jobs; if that claim fails, jobs is empty and claim_error says why, and the completions stand.',
        body: CompleteManyBody.schema,
        responses: ok('Per-item outcome: succeeded [{index, id, status, completed_at}], failed [{index, id, error}]', AckResult),
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/:id/fail',
      permission: 'jobs:write',
      handler: handlers.fail,
      doc: {
        operationId: 'failJob',
        summary: 'Fail a claimed job',
        description:
          'Retried after min(2^retry_count, 60) minutes while retries remain, else dead-lettered; retryable: false dead-letters at once. ' +
          'lease_id may be left out: the lease is then fenced on worker_id alone.',
        body: FailBody.schema,
        responses: ok('scheduled (with the next attempt time) or deadletter', JobFailed),
        errors: ['LEASE_EXPIRED', 'JOB_CANCELLED', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/:id/heartbeat',
      permission: 'jobs:write',
      handler: handlers.heartbeat,
      doc: {
        operationId: 'heartbeatJob',
        summary: 'Extend a live lease (an expired one is never revived)',
        description: '409 JOB_CANCELLED when the job was cancelled while this worker held it: stop working on it.',
        body: HeartbeatBody.schema,
        responses: ok('The new lease expiry', LeaseExtended),
        errors: ['LEASE_EXPIRED', 'JOB_CANCELLED', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/:id/progress',
      permission: 'jobs:write',
      handler: handlers.progress,
      doc: {
        operationId: 'reportJobProgress',
        summary: 'Report progress of a claimed job (the lease holder)',
        description:
          'progress 0–100, an optional message and data (≤ 16 KiB of JSON). Stored on the job (`progress`), streamed as job.progress, ' +
          'sent to outgoing webhooks at most once a second per job. 409 LEASE_EXPIRED without the live lease, JOB_CANCELLED once the job was cancelled.',
        body: ProgressBody.schema,
        responses: ok('The report as stored', JobProgress),
        errors: ['LEASE_EXPIRED', 'JOB_CANCELLED', 'SHARD_MOVED'],
      },
    },
    {
      method: 'GET',
      path: '/api/v1/jobs/:id/explain',
      permission: 'jobs:read',
      handler: handlers.explain,
      doc: {
        operationId: 'explainJob',
        summary: 'Why a job is not running',
        description:
          'Every reason that holds now, each with its data: queue_paused, scheduled, retry_backoff, waiting_for_dependencies, ' +
          'key_at_concurrency_limit, queue_at_max_concurrency, queue_rate_limited, behind_other_jobs, no_recent_claims, ' +
          'organization_active_jobs_quota (docs/flow-control.md). A processing or finished job has no reason but the quota one.',
        responses: ok('The reasons', JobExplanation),
        errors: ['SHARD_MOVED'],
      },
    },
    {
      method: 'DELETE',
      path: '/api/v1/jobs/:id',
      permission: 'jobs:write',
      handler: handlers.cancel,
      doc: {
        operationId: 'cancelJob',
        summary: 'Cancel a job',
        description:
          'A processing job is cancelled too: its worker is told (heartbeat and progress answer 409 JOB_CANCELLED, gRPC streams send a cancel message) and its late complete or fail gets 409.',
        responses: ok('Cancelled', JobCancelled),
        errors: ['JOB_NOT_LIVE', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/bulk',
      permission: 'jobs:write',
      handler: handlers.bulk,
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
      handler: handlers.priority,
      doc: {
        operationId: 'setJobPriority',
        summary: 'Change the priority of a pending or scheduled job',
        body: PriorityBody.schema,
        responses: ok('The new priority', JobPriority),
        errors: ['JOB_NOT_LIVE', 'SHARD_MOVED'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs/:id/retry',
      permission: 'jobs:write',
      handler: handlers.retry,
      doc: {
        operationId: 'retryJob',
        summary: 'Retry a dead-lettered or cancelled job (retry count reset)',
        responses: ok('The job, pending again', Job),
        errors: ['JOB_NOT_LIVE', 'WORKFLOW_JOB', 'QUOTA_EXCEEDED', 'SHARD_MOVED'],
      },
    },
  ];
}

