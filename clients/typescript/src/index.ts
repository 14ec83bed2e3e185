// @sluice/client: the REST client, the worker runner, the SSE helper and the error classes.
export { SluiceClient, normalizeWorker } from './client.js';
export type {
  ClientOptions,
  CallOptions,
  ReportOptions,
  Jobs,
  Dlq,
  Queues,
  Workers,
  Schedules,
  Workflows,
  OutgoingWebhooks,
  ApiKeys,
  Auth,
  Organizations,
  Admin,
  Events,
  Health,
} from './client.js';
export { Worker, UnrecoverableError, LeaseLostError, JobTimeoutError, WorkerShutdownError, errorMessage } from './worker.js';
export type { Handler, JobContext, WorkerOptions, WorkerEvents } from './worker.js';
export { Paginator } from './pagination.js';
export type { Page } from './pagination.js';
export { EventStream, SseParser } from './sse.js';
export type { EventStreamOptions, EventFilterOptions } from './sse.js';
export type { RetryOptions, RetryEvent } from './http.js';
export {
  SluiceError,
  BadRequestError,
  UriTooLongError,
  HeadersTooLargeError,
  UnauthorizedError,
  ForbiddenError,
  NotFoundError,
  MethodNotAllowedError,
  ConflictError,
  JobNotLiveError,
  WorkflowJobError,
  WorkflowNotLiveError,
  QueueExistsError,
  QueueNotEmptyError,
  WorkerIdTakenError,
  SlugTakenError,
  LeaseExpiredError,
  UpgradeRequiredError,
  PayloadTooLargeError,
  ValidationError,
  QuotaExceededError,
  TooManyStreamsError,
  RateLimitedError,
  InternalError,
  UnavailableError,
  ShardMovedError,
  UnknownApiError,
  ConnectionError,
  ERROR_CLASSES,
  JobCancelledError,
  errorFromResponse,
  parseRetryAfter,
} from './errors.js';
export type { ErrorBody, ErrorCode, FieldProblem } from './errors.js';
export { verifySignature, signPayload } from './signature.js';
export type * from './types.js';
// The OpenAPI document as types (generated), for openapi-fetch and the like.
export type { paths, components, operations } from './openapi.js';
