// Errors of the client. Every answer the service refuses carries a catalog code (docs/errors.md in the
// service); each code has its own class here, so callers branch with `instanceof` rather than on text.
// Failures that never reached an answer (connection refused, reset, timeout) are ConnectionError.

/** A field problem of a 422 answer. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** The error body of the service: `{error, code, message, status, ...extras}`. */
export interface ErrorBody {
  error: string;
  code: string;
  message: string;
  status: number;
  /** VALIDATION_ERROR: one entry per problem. */
  details?: FieldProblem[];
  /** RATE_LIMITED: seconds to wait (also the Retry-After header). */
  retry_after?: number;
  /** QUOTA_EXCEEDED: the plan resource at its limit. */
  resource?: string;
  /** QUOTA_EXCEEDED, PAYLOAD_TOO_LARGE: the amount in use or asked for, the limit, the plan and the next one. */
  current?: number;
  limit?: number;
  plan?: string;
  upgrade_to?: string | null;
  /** CONFLICT: the status of the job or workflow, the workflow a job belongs to, a queue's live jobs. */
  job_status?: string;
  workflow_status?: string;
  workflow_id?: string;
  active_jobs?: number;
  [extra: string]: unknown;
}

export interface SluiceErrorInit {
  status: number;
  code: string;
  message: string;
  body?: ErrorBody | null;
  retryAfter?: number | null;
  method?: string;
  path?: string;
}

/** Base class of every error the client throws for an answer of the service. */
export class SluiceError extends Error {
  /** HTTP status of the answer (0 when there was none). */
  readonly status: number;
  /** Catalog code, e.g. `VALIDATION_ERROR`. */
  readonly code: string;
  /** `details` of a 422 (one entry per bad field); empty otherwise. */
  readonly details: FieldProblem[];
  /** Seconds the service asked to wait (`Retry-After`), or null. */
  readonly retryAfter: number | null;
  /** The error body as received (null when the answer was not a catalog error). */
  readonly body: ErrorBody | null;
  readonly method: string | undefined;
  readonly path: string | undefined;

  constructor(init: SluiceErrorInit) {
    super(init.message);
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.body = init.body ?? null;
    this.details = Array.isArray(init.body?.details) ? init.body.details : [];
    this.retryAfter = init.retryAfter ?? null;
    this.method = init.method;
    this.path = init.path;
  }

  /** Whether sending the same request again later may succeed (the service changed nothing). */
  get retryable(): boolean {
    return false;
  }
}

/** 400 `BAD_REQUEST`: the request could not be read as HTTP the service accepts (a credential header twice). */
export class BadRequestError extends SluiceError {}
/** 414 `URI_TOO_LONG`: the path and query string are over 8 KiB. */
export class UriTooLongError extends SluiceError {}
/** 431 `HEADERS_TOO_LARGE`: a header over 8 KiB, or all of them over 32 KiB. */
export class HeadersTooLargeError extends SluiceError {}
export class UnauthorizedError extends SluiceError {}
export class ForbiddenError extends SluiceError {}
export class NotFoundError extends SluiceError {}
export class MethodNotAllowedError extends SluiceError {}
/** 409 `CONFLICT`: the resource's state refuses the change (e.g. cancelling a finished job; `jobStatus`). */
export class ConflictError extends SluiceError {
  get jobStatus(): string | null {
    return typeof this.body?.job_status === 'string' ? this.body.job_status : null;
  }
}
/** 409 `JOB_NOT_LIVE`: cancel, priority or retry of a job whose status does not allow it (`jobStatus`). */
export class JobNotLiveError extends ConflictError {}
/** 409 `WORKFLOW_JOB`: a workflow's job is retried with its workflow. */
export class WorkflowJobError extends ConflictError {}
/** 409 `WORKFLOW_NOT_LIVE`: the workflow's status does not allow the change. */
export class WorkflowNotLiveError extends ConflictError {}
/** 409 `QUEUE_EXISTS`: the organization already has a queue of this name. */
export class QueueExistsError extends ConflictError {}
/** 409 `QUEUE_NOT_EMPTY`: a queue with live jobs cannot be deleted. */
export class QueueNotEmptyError extends ConflictError {}
/** 409 `WORKER_ID_TAKEN`: another organization holds this worker id. */
export class WorkerIdTakenError extends ConflictError {}
/** 409 `SLUG_TAKEN`: the organization slug is taken. */
export class SlugTakenError extends ConflictError {}
/** 409 `LEASE_EXPIRED`: complete, fail or heartbeat without a valid lease. The job is no longer this worker's. */
export class LeaseExpiredError extends SluiceError {}
/**
 * 409 `JOB_CANCELLED`: the job was cancelled while this worker held it. A LeaseExpiredError too, so code that
 * stops on a lost lease stops here as well; the worker aborts the handler's signal with it.
 */
export class JobCancelledError extends LeaseExpiredError {}
export class UpgradeRequiredError extends SluiceError {}
/** 413: the payload is over the plan's cap (`current`, `limit` in bytes). */
export class PayloadTooLargeError extends SluiceError {
  get limit(): number | null {
    return num(this.body?.limit);
  }
  get current(): number | null {
    return num(this.body?.current);
  }
}
/** 422: `details` names each bad field. */
export class ValidationError extends SluiceError {}
/** 429 `QUOTA_EXCEEDED`: a plan resource is used up. Not transient: waiting does not help (except `jobs_per_day`). */
export class QuotaExceededError extends SluiceError {
  get resource(): string | null {
    return typeof this.body?.resource === 'string' ? this.body.resource : null;
  }
  get limit(): number | null {
    return num(this.body?.limit);
  }
  get current(): number | null {
    return num(this.body?.current);
  }
  get plan(): string | null {
    return typeof this.body?.plan === 'string' ? this.body.plan : null;
  }
  get upgradeTo(): string | null {
    return typeof this.body?.upgrade_to === 'string' ? this.body.upgrade_to : null;
  }
}
/** 429 `TOO_MANY_STREAMS`: the organization has as many SSE/WebSocket streams open on that node as allowed. */
export class TooManyStreamsError extends SluiceError {
  override get retryable(): boolean {
    return true;
  }
}
/** 429 `RATE_LIMITED`: over the plan's request rate; `retryAfter` says when to come back. */
export class RateLimitedError extends SluiceError {
  override get retryable(): boolean {
    return true;
  }
}
/** 500: a bug on the server. Whether the request took effect is unknown. */
export class InternalError extends SluiceError {}
/** 503: the store refused the write; nothing changed. */
export class UnavailableError extends SluiceError {
  override get retryable(): boolean {
    return true;
  }
}
/** 503 `SHARD_MOVED`: the queue is moving between nodes (a node stopped or lost its lease); retry shortly. */
export class ShardMovedError extends UnavailableError {}
/** An answer whose code this version of the client does not know (a newer server), or not a catalog error at all. */
export class UnknownApiError extends SluiceError {
  override get retryable(): boolean {
    return this.status === 502 || this.status === 503 || this.status === 504;
  }
}

/** No answer: the connection failed, was reset, or the request timed out. The request may or may not have run. */
export class ConnectionError extends SluiceError {
  constructor(message: string, opts: { cause?: unknown; method?: string; path?: string; timedOut?: boolean } = {}) {
    super({ status: 0, code: opts.timedOut ? 'TIMEOUT' : 'CONNECTION_FAILED', message, method: opts.method, path: opts.path });
    if (opts.cause !== undefined) (this as { cause?: unknown }).cause = opts.cause;
  }
  override get retryable(): boolean {
    return true;
  }
}

/** The catalog, code → class. Kept equal to the service's src/errors.ts by a test. */
export const ERROR_CLASSES = {
  BAD_REQUEST: BadRequestError,
  URI_TOO_LONG: UriTooLongError,
  HEADERS_TOO_LARGE: HeadersTooLargeError,
  UNAUTHORIZED: UnauthorizedError,
  FORBIDDEN: ForbiddenError,
  NOT_FOUND: NotFoundError,
  METHOD_NOT_ALLOWED: MethodNotAllowedError,
  CONFLICT: ConflictError,
  LEASE_EXPIRED: LeaseExpiredError,
  JOB_NOT_LIVE: JobNotLiveError,
  WORKFLOW_JOB: WorkflowJobError,
  WORKFLOW_NOT_LIVE: WorkflowNotLiveError,
  QUEUE_EXISTS: QueueExistsError,
  QUEUE_NOT_EMPTY: QueueNotEmptyError,
  WORKER_ID_TAKEN: WorkerIdTakenError,
  SLUG_TAKEN: SlugTakenError,
  JOB_CANCELLED: JobCancelledError,
  UPGRADE_REQUIRED: UpgradeRequiredError,
  PAYLOAD_TOO_LARGE: PayloadTooLargeError,
  VALIDATION_ERROR: ValidationError,
  QUOTA_EXCEEDED: QuotaExceededError,
  TOO_MANY_STREAMS: TooManyStreamsError,
  RATE_LIMITED: RateLimitedError,
  INTERNAL: InternalError,
  UNAVAILABLE: UnavailableError,
  SHARD_MOVED: ShardMovedError,
} as const;

export type ErrorCode = keyof typeof ERROR_CLASSES;

const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);

function isErrorBody(v: unknown): v is ErrorBody {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const b = v as Record<string, unknown>;
  return typeof b.code === 'string' && typeof b.message === 'string';
}

/** `Retry-After` as seconds (delta-seconds or an HTTP date), or null. */
export function parseRetryAfter(header: string | null, now = Date.now()): number | null {
  if (header === null || header.trim() === '') return null;
  const s = header.trim();
  if (/^\d+$/.test(s)) return Number(s);
  const at = Date.parse(s);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The error for an answer with a non-2xx status: the class of its catalog code. */
export function errorFromResponse(status: number, body: unknown, retryAfterHeader: string | null, method?: string, path?: string): SluiceError {
  const retryAfter = parseRetryAfter(retryAfterHeader) ?? (isErrorBody(body) && typeof body.retry_after === 'number' ? body.retry_after : null);
  if (isErrorBody(body)) {
    const Cls = (ERROR_CLASSES as Record<string, typeof SluiceError>)[body.code] ?? UnknownApiError;
    return new Cls({ status, code: body.code, message: body.message, body, retryAfter, method, path });
  }
  const text = typeof body === 'string' && body.length > 0 ? `: ${body.slice(0, 200)}` : '';
  return new UnknownApiError({ status, code: `HTTP_${status}`, message: `${method ?? ''} ${path ?? ''} answered ${status}${text}`.trim(), retryAfter, method, path });
}
