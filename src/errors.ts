// The one error catalog. Every failure a client can see is an entry here: REST takes `status`, gRPC takes
// `grpc`, and docs/errors.md is checked against this table by test/errors.test.ts.

/** gRPC status codes used by the catalog (numbers from the gRPC spec). */
const GRPC = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

export const CATALOG = {
  BAD_REQUEST: { error: 'bad_request', status: 400, grpc: GRPC.INVALID_ARGUMENT, message: 'The request is malformed' },
  UNAUTHORIZED: { error: 'unauthorized', status: 401, grpc: GRPC.UNAUTHENTICATED, message: 'A valid credential is required' },
  FORBIDDEN: { error: 'forbidden', status: 403, grpc: GRPC.PERMISSION_DENIED, message: 'The credential lacks the permission this route needs' },
  NOT_FOUND: { error: 'not_found', status: 404, grpc: GRPC.NOT_FOUND, message: 'Not found' },
  METHOD_NOT_ALLOWED: { error: 'method_not_allowed', status: 405, grpc: GRPC.UNIMPLEMENTED, message: 'Method not allowed on this route' },
  CONFLICT: { error: 'conflict', status: 409, grpc: GRPC.FAILED_PRECONDITION, message: 'The request conflicts with the current state' },
  LEASE_EXPIRED: { error: 'conflict', status: 409, grpc: GRPC.FAILED_PRECONDITION, message: 'The lease is stale or does not match' },
  // Conflicts by situation: each keeps `error: "conflict"` for clients that branch on it.
  JOB_NOT_LIVE: { error: 'conflict', status: 409, grpc: GRPC.FAILED_PRECONDITION, message: 'The job is not in a state that allows this' },
  WORKFLOW_JOB: { error: 'conflict', status: 409, grpc: GRPC.FAILED_PRECONDITION, message: 'The job belongs to a workflow: retry the workflow' },
  WORKFLOW_NOT_LIVE: { error: 'conflict', status: 409, grpc: GRPC.FAILED_PRECONDITION, message: 'The workflow is not in a state that allows this' },
  QUEUE_EXISTS: { error: 'conflict', status: 409, grpc: GRPC.FAILED_PRECONDITION, message: 'A queue with this name exists' },
  QUEUE_NOT_EMPTY: { error: 'conflict', status: 409, grpc: GRPC.FAILED_PRECONDITION, message: 'The queue still has live jobs' },
  WORKER_ID_TAKEN: { error: 'conflict', status: 409, grpc: GRPC.FAILED_PRECONDITION, message: 'This worker id is registered by another organization' },
  SLUG_TAKEN: { error: 'conflict', status: 409, grpc: GRPC.FAILED_PRECONDITION, message: 'The organization slug is taken' },
  JOB_CANCELLED: { error: 'conflict', status: 409, grpc: GRPC.FAILED_PRECONDITION, message: 'The job was cancelled while it ran; stop working on it' },
  UPGRADE_REQUIRED: { error: 'upgrade_required', status: 426, grpc: GRPC.FAILED_PRECONDITION, message: 'This route only answers a WebSocket upgrade' },
  PAYLOAD_TOO_LARGE: { error: 'payload_too_large', status: 413, grpc: GRPC.RESOURCE_EXHAUSTED, message: 'The payload is larger than allowed' },
  URI_TOO_LONG: { error: 'uri_too_long', status: 414, grpc: GRPC.INVALID_ARGUMENT, message: 'The request target is too long' },
  VALIDATION_ERROR: { error: 'validation_error', status: 422, grpc: GRPC.INVALID_ARGUMENT, message: 'The request is invalid' },
  QUOTA_EXCEEDED: { error: 'limit_exceeded', status: 429, grpc: GRPC.RESOURCE_EXHAUSTED, message: 'A plan limit has been reached' },
  TOO_MANY_STREAMS: { error: 'limit_exceeded', status: 429, grpc: GRPC.RESOURCE_EXHAUSTED, message: 'The organization has as many open streams as allowed' },
  RATE_LIMITED: { error: 'rate_limited', status: 429, grpc: GRPC.RESOURCE_EXHAUSTED, message: 'Too many requests' },
  HEADERS_TOO_LARGE: { error: 'headers_too_large', status: 431, grpc: GRPC.INVALID_ARGUMENT, message: 'The request headers are too large' },
  INTERNAL: { error: 'internal_error', status: 500, grpc: GRPC.INTERNAL, message: 'Internal error' },
  SHARD_MOVED: { error: 'unavailable', status: 503, grpc: GRPC.UNAVAILABLE, message: 'The queue is moving between nodes; retry shortly' },
  UNAVAILABLE: { error: 'unavailable', status: 503, grpc: GRPC.UNAVAILABLE, message: 'The service is temporarily unavailable' },
} as const;

export type ErrorCode = keyof typeof CATALOG;

export interface FieldProblem {
  field: string;
  message: string;
}

/** A catalog error. `extra` holds the fields some codes add to the body (quota figures, details). */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly extra: Record<string, unknown>;
  constructor(code: ErrorCode, message?: string, extra: Record<string, unknown> = {}) {
    super(message ?? CATALOG[code].message);
    this.name = 'AppError';
    this.code = code;
    this.extra = extra;
  }

  get status(): number {
    return CATALOG[this.code].status;
  }

  /** The REST body: `{error, code, message, status, ...extra}`. */
  toBody(): Record<string, unknown> {
    const entry = CATALOG[this.code];
    return { error: entry.error, code: this.code, message: this.message, status: entry.status, ...this.extra };
  }

  /**
   * A structured-clone-safe form, for replies crossing threads. `extra` is an object of its own: one error may fail
   * several requests (a commit that failed under all of them), and a reply reaches the main thread without a copy
   * when the actors run there (inline-thread.ts). Shallow: the values in it are never changed in place.
   */
  toWire(): WireError {
    return { code: this.code, message: this.message, extra: { ...this.extra } };
  }

  static fromWire(w: WireError): AppError {
    return new AppError(w.code, w.message, w.extra);
  }
}

export interface WireError {
  code: ErrorCode;
  message: string;
  extra: Record<string, unknown>;
}

export const validationError = (details: FieldProblem[], message = 'The request is invalid'): AppError =>
  new AppError('VALIDATION_ERROR', message, { details });

export const notFound = (what: string): AppError => new AppError('NOT_FOUND', `${what} not found`);
