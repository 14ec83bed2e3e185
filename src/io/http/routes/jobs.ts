// Job lifecycle routes: enqueue, get, claim, complete, fail, heartbeat, cancel.
import Type from 'typebox';
import { AppError, notFound, validationError } from '../../../errors.js';
import type { ClaimReply, EnqueueInput, EnqueueReply } from '../../../actors/queue/queue-actor.js';
import { getJob, getJobByKey } from '../../db/sql/getJob.js';
import { presentJob } from '../present.js';
import type { Request, Response, Route } from '../router.js';
import { validator } from '../validate.js';
import type { Services } from './services.js';

export const QueueName = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_][A-Za-z0-9._-]*$' });
export const WorkerId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._-]+$' });
const LeaseId = Type.String({ minLength: 1, maxLength: 100 });
const LeaseSecs = Type.Integer({ minimum: 5, maximum: 3600 });

const EnqueueBody = validator(
  Type.Object({
    queue_name: QueueName,
    payload: Type.Record(Type.String(), Type.Unknown()),
    idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    priority: Type.Optional(Type.Integer({ minimum: -100, maximum: 100 })),
    scheduled_at: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    max_retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    timeout_seconds: Type.Optional(LeaseSecs),
    completion_webhook: Type.Optional(Type.Union([Type.String({ maxLength: 2048 }), Type.Null()])),
    completion_webhook_secret: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 256 }), Type.Null()])),
    tags: Type.Optional(
      Type.Union([
        Type.Record(Type.String({ minLength: 1, maxLength: 100 }), Type.String({ maxLength: 256 })),
        Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50 }),
      ]),
    ),
  }),
);

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

function jobId(req: Request): string {
  const id = req.params.id!;
  if (!UUID.test(id)) throw notFound('Job');
  return id.toLowerCase();
}

function parseTime(field: string, value: string | null | undefined): number | null {
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

function parseWebhook(url: string | null | undefined): string | null {
  if (url === undefined || url === null) return null;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw validationError([{ field: 'completion_webhook', message: 'must be an absolute http(s) URL' }]);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw validationError([{ field: 'completion_webhook', message: 'must be an absolute http(s) URL' }]);
  }
  return u.toString();
}

export function jobRoutes(s: Services): Route[] {
  /** Which queue actor holds the job, or 404. */
  const placeOf = async (req: Request, id: string): Promise<string> => {
    const queue = await s.places.find(req.principal.organizationId, id);
    if (queue === null) throw notFound('Job');
    return queue;
  };

  const enqueue = async (req: Request): Promise<Response> => {
    const body = EnqueueBody(req.body);
    const org = req.principal.organizationId;
    const tags = Array.isArray(body.tags) ? Object.fromEntries(body.tags.map((t) => [t, ''])) : (body.tags ?? {});
    const input: EnqueueInput = {
      payload: body.payload,
      priority: body.priority ?? 0,
      max_retries: body.max_retries ?? null,
      timeout_seconds: body.timeout_seconds ?? null,
      scheduled_at: parseTime('scheduled_at', body.scheduled_at),
      idempotency_key: body.idempotency_key ?? null,
      tags,
      completion_webhook: parseWebhook(body.completion_webhook),
      completion_webhook_secret: body.completion_webhook_secret ?? null,
    };
    const reply = await s.pool.ask<EnqueueReply>(org, body.queue_name, 'enqueue', input);
    if (reply.created) {
      s.places.remember(org, reply.job.id, body.queue_name);
      return { status: 201, body: { ...presentJob(reply.job as unknown as Record<string, unknown>), created: true } };
    }
    const existing = await getJobByKey(s.store, org, reply.idempotency_key);
    if (!existing) throw new AppError('UNAVAILABLE', 'The job holding this idempotency key could not be read; retry');
    return { status: 200, body: { ...presentJob(existing), created: false } };
  };

  const get = async (req: Request): Promise<Response> => {
    const row = await getJob(s.store, req.principal.organizationId, jobId(req));
    if (!row) throw notFound('Job');
    return { status: 200, body: presentJob(row) };
  };

  const claim = async (req: Request): Promise<Response> => {
    const body = ClaimBody(req.body);
    const org = req.principal.organizationId;
    const reply = await s.pool.ask<ClaimReply>(org, body.queue_name, 'claim', {
      worker_id: body.worker_id,
      limit: body.limit ?? 1,
      lease_duration_secs: body.lease_duration_secs ?? null,
      wait_ms: body.wait_ms ?? 0,
    });
    for (const j of reply.jobs) s.places.remember(org, j.id as string, body.queue_name);
    return { status: 200, body: { jobs: reply.jobs.map(presentJob) } };
  };

  const leaseOp =
    (op: 'complete' | 'fail' | 'heartbeat', parse: (b: unknown) => Record<string, unknown>) =>
    async (req: Request): Promise<Response> => {
      const id = jobId(req);
      const body = parse(req.body);
      const queue = await placeOf(req, id);
      const args =
        op === 'complete'
          ? { id, worker_id: body.worker_id, lease_id: body.lease_id, result: body.result ?? null }
          : op === 'fail'
            ? { id, worker_id: body.worker_id, lease_id: body.lease_id, error: body.error, retryable: body.retryable ?? true }
            : { id, worker_id: body.worker_id, lease_id: body.lease_id ?? null, lease_duration_secs: body.lease_duration_secs ?? null };
      const reply = await s.pool.ask<Record<string, unknown>>(req.principal.organizationId, queue, op, args);
      return { status: 200, body: present(reply) };
    };

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

  return [
    { method: 'POST', path: '/api/v1/jobs', permission: 'jobs:write', handler: enqueue },
    { method: 'POST', path: '/api/v1/jobs/claim', permission: 'jobs:write', handler: claim },
    { method: 'GET', path: '/api/v1/jobs/:id', permission: 'jobs:read', handler: get },
    { method: 'POST', path: '/api/v1/jobs/:id/complete', permission: 'jobs:write', handler: leaseOp('complete', CompleteBody) },
    { method: 'POST', path: '/api/v1/jobs/:id/fail', permission: 'jobs:write', handler: leaseOp('fail', FailBody) },
    { method: 'POST', path: '/api/v1/jobs/:id/heartbeat', permission: 'jobs:write', handler: leaseOp('heartbeat', HeartbeatBody) },
    { method: 'DELETE', path: '/api/v1/jobs/:id', permission: 'jobs:write', handler: cancel },
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
