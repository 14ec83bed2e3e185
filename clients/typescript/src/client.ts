// The typed REST client: one namespace per route family, each method one route. Bodies are the service's
// own (snake_case), so what docs/api.md and the OpenAPI document say applies as written. Which requests may
// be retried automatically is decided per method (`idempotent`), see http.ts.
import { HttpCore, type HttpOptions, type Query, type RetryOptions, type RetryEvent } from './http.js';
import { Paginator, type Page } from './pagination.js';
import { EventStream, filterQuery, type EventFilterOptions, type EventStreamOptions } from './sse.js';
import type {
  AckClaim,
  AckItem,
  AckResult,
  ApiKey,
  ApiKeyUpdate,
  DashboardOverview,
  JobDependencies,
  BulkDefaults,
  BulkItem,
  BulkResult,
  ClaimRequest,
  CompleteReply,
  CreatedApiKey,
  CreatedOrganization,
  Delivery,
  TestDelivery,
  DlqPurgeRequest,
  DlqRetryRequest,
  DlqRetryResult,
  EnqueuedJob,
  EventEnvelope,
  FailReply,
  HeartbeatReply,
  JobExplanation,
  JobProgress,
  Job,
  JobDefinition,
  JobFilter,
  JobStats,
  JobStatusLine,
  JsonObject,
  Me,
  Organization,
  OrganizationDefinition,
  OutgoingWebhook,
  OutgoingWebhookDefinition,
  OutgoingWebhookUpdate,
  PageOptions,
  Permission,
  PlanTier,
  Queue,
  QueueConfig,
  QueueStats,
  Schedule,
  ScheduleDefinition,
  ScheduleRun,
  ScheduleUpdate,
  Tokens,
  TriggeredRun,
  Usage,
  WebhookToken,
  WorkerRecord,
  WorkerRegistration,
  Workflow,
  WorkflowDefinition,
  WorkflowStatus,
  WorkflowSummary,
} from './types.js';

export interface ClientOptions {
  /** Base URL of the service, e.g. http://localhost:8080 (default: $SLUICE_URL). */
  url?: string;
  /** API key or JWT access token (default: $SLUICE_API_KEY). */
  apiKey?: string;
  /** X-Admin-Key, for the admin API only (default: $SLUICE_ADMIN_KEY). */
  adminKey?: string;
  /** Per-attempt timeout of a request (default 30 s; a claim adds its wait_ms). */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** Called before each automatic retry. */
  onRetry?: (e: RetryEvent) => void;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  userAgent?: string;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/**
 * A report that may be retried: `onRetry` is told of each automatic retry, after which the job may already be
 * completed (or failed) by the attempt whose answer was lost (so a LeaseExpiredError may be the first attempt's
 * success).
 */
export interface ReportOptions extends CallOptions {
  onRetry?: (e: RetryEvent) => void;
}

type ListOptions = PageOptions & CallOptions;

const seg = (s: string): string => {
  if (typeof s !== 'string' || s.length === 0) throw new TypeError('Sluice: an id or name is required');
  return encodeURIComponent(s);
};
const iso = (v: string | Date | null | undefined): string | null | undefined => (v instanceof Date ? v.toISOString() : v);

export class SluiceClient {
  readonly http: HttpCore;
  readonly jobs: Jobs;
  readonly dlq: Dlq;
  readonly queues: Queues;
  readonly workers: Workers;
  readonly schedules: Schedules;
  readonly workflows: Workflows;
  /** Outgoing webhooks (the service calls your URLs). */
  readonly webhooks: OutgoingWebhooks;
  readonly apiKeys: ApiKeys;
  readonly auth: Auth;
  readonly organizations: Organizations;
  readonly admin: Admin;
  readonly events: Events;
  readonly health: Health;

  constructor(opts: ClientOptions = {}) {
    const env = typeof process === 'undefined' ? {} : process.env;
    const url = opts.url ?? env.SLUICE_URL;
    if (!url) throw new TypeError('Sluice: pass url (or set SLUICE_URL)');
    const http: HttpOptions = {
      url,
      apiKey: opts.apiKey ?? env.SLUICE_API_KEY,
      adminKey: opts.adminKey ?? env.SLUICE_ADMIN_KEY,
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.retry !== undefined ? { retry: opts.retry } : {}),
      ...(opts.onRetry !== undefined ? { onRetry: opts.onRetry } : {}),
      ...(opts.fetch !== undefined ? { fetch: opts.fetch } : {}),
      ...(opts.headers !== undefined ? { headers: opts.headers } : {}),
      ...(opts.userAgent !== undefined ? { userAgent: opts.userAgent } : {}),
    };
    this.http = new HttpCore(http);
    this.jobs = new Jobs(this.http);
    this.dlq = new Dlq(this.http);
    this.queues = new Queues(this.http);
    this.workers = new Workers(this.http);
    this.schedules = new Schedules(this.http);
    this.workflows = new Workflows(this.http);
    this.webhooks = new OutgoingWebhooks(this.http);
    this.apiKeys = new ApiKeys(this.http);
    this.auth = new Auth(this.http);
    this.organizations = new Organizations(this.http);
    this.admin = new Admin(this.http);
    this.events = new Events(this.http);
    this.health = new Health(this.http);
  }

  /** Base URL the client talks to. */
  get url(): string {
    return this.http.baseUrl;
  }

  /** The organization's overview: version, uptime, store, job counts and 24 h figures, queues, workers. */
  dashboard(o: CallOptions = {}): Promise<DashboardOverview> {
    return this.http.request<DashboardOverview>({ method: 'GET', path: '/api/v1/dashboard', signal: o.signal }).then((r) => r.body);
  }
}

abstract class Resource {
  constructor(protected readonly http: HttpCore) {}

  protected async call<T>(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    o: {
      body?: unknown;
      query?: Query;
      idempotent?: boolean;
      signal?: AbortSignal | undefined;
      timeoutMs?: number;
      auth?: 'key' | 'admin' | 'none';
      headers?: Record<string, string>;
      onRetry?: ((e: RetryEvent) => void) | undefined;
    } = {},
  ): Promise<T> {
    return (await this.http.request<T>({ method, path, ...o })).body;
  }

  protected paginate<T>(path: string, query: Query, o: ListOptions = {}, auth: 'key' | 'admin' = 'key', map?: (item: T) => T): Paginator<T> {
    return new Paginator<T>(
      async (cursor, signal): Promise<Page<T>> => {
        const r = await this.http.request<T[]>({ method: 'GET', path, query: { ...query, limit: o.limit, cursor }, signal, auth });
        return { items: map ? r.body.map(map) : r.body, nextCursor: r.headers.get('x-next-cursor') };
      },
      o.cursor,
      o.signal,
    );
  }
}

function jobBody<P>(def: JobDefinition<P> | BulkItem<P>): Record<string, unknown> {
  const { scheduled_at, expires_at, ...rest } = def;
  return {
    ...rest,
    ...(scheduled_at === undefined ? {} : { scheduled_at: iso(scheduled_at) }),
    ...(expires_at === undefined ? {} : { expires_at: iso(expires_at) }),
  };
}

function jobQuery(f: Omit<JobFilter, 'status'>): Query {
  return {
    queue_name: f.queue_name,
    tag: f.tag === undefined ? undefined : Array.isArray(f.tag) ? f.tag : [f.tag],
    created_after: iso(f.created_after),
    created_before: iso(f.created_before),
  };
}

export class Jobs extends Resource {
  /** Enqueue one job. With an `idempotency_key` the request is retried safely, and a repeat returns the same job. */
  enqueue<P = JsonObject>(def: JobDefinition<P>, o: CallOptions = {}): Promise<EnqueuedJob<P>> {
    return this.call('POST', '/api/v1/jobs', { body: jobBody(def), idempotent: typeof def.idempotency_key === 'string', signal: o.signal });
  }

  /** Enqueue up to 100 jobs in one request; invalid items are reported per index without sinking the others. */
  enqueueBulk<P = JsonObject>(jobs: BulkItem<P>[], defaults: BulkDefaults = {}, o: CallOptions = {}): Promise<BulkResult> {
    if (!Array.isArray(jobs)) throw new TypeError('Sluice: enqueueBulk takes an array of job definitions');
    const idempotent = jobs.length > 0 && jobs.every((j) => typeof j.idempotency_key === 'string');
    return this.call('POST', '/api/v1/jobs/bulk', { body: { ...defaults, jobs: jobs.map(jobBody) }, idempotent, signal: o.signal });
  }

  get<P = JsonObject>(id: string, o: CallOptions = {}): Promise<Job<P>> {
    return this.call('GET', `/api/v1/jobs/${seg(id)}`, o);
  }

  /** Newest first. Iterate the result for every job, or call `.page()` for one page. */
  list<P = JsonObject>(filter: JobFilter & ListOptions = {}): Paginator<Job<P>> {
    return this.paginate<Job<P>>('/api/v1/jobs', { ...jobQuery(filter), status: filter.status }, filter);
  }

  /** Claim up to `limit` jobs under a lease. Never retried automatically: a lost answer would strand the jobs until their lease ends. */
  async claim<P = JsonObject>(req: ClaimRequest, o: CallOptions = {}): Promise<Job<P>[]> {
    const r = await this.call<{ jobs: Job<P>[] }>('POST', '/api/v1/jobs/claim', {
      body: req,
      idempotent: false,
      signal: o.signal,
      timeoutMs: this.http.timeoutMs + (req.wait_ms ?? 0),
    });
    return r.jobs;
  }

  /** Without `lease_id` the service checks that `worker_id` holds the live lease. */
  complete(id: string, body: { worker_id: string; lease_id?: string; result?: unknown }, o: ReportOptions = {}): Promise<CompleteReply> {
    return this.call('POST', `/api/v1/jobs/${seg(id)}/complete`, { body, idempotent: true, signal: o.signal, onRetry: o.onRetry });
  }

  /**
   * Completes up to 500 claimed jobs in one request; each item succeeds or fails alone (see AckResult). Retried
   * like complete: completing a job twice answers its item LEASE_EXPIRED, never a second completion. With
   * `claim` (which needs `worker_id`), the same request then claims the next jobs (AckResult.jobs); such a request
   * is never retried automatically, as a claim is not: a lost answer would strand the jobs until their lease ends.
   */
  completeMany(jobs: AckItem[], defaults: { worker_id?: string; claim?: AckClaim } = {}, o: ReportOptions = {}): Promise<AckResult> {
    return this.call('POST', '/api/v1/jobs/complete', { body: { ...defaults, jobs }, idempotent: defaults.claim === undefined, signal: o.signal, onRetry: o.onRetry });
  }

  /** `retryable: false` dead-letters the job at once. */
  fail(id: string, body: { worker_id: string; lease_id?: string; error: string; retryable?: boolean }, o: ReportOptions = {}): Promise<FailReply> {
    return this.call('POST', `/api/v1/jobs/${seg(id)}/fail`, { body, idempotent: true, signal: o.signal, onRetry: o.onRetry });
  }

  /** Extends the lease (to `lease_duration_secs`, else the claim's). 409 LeaseExpiredError once it is lost. */
  heartbeat(id: string, body: { worker_id: string; lease_id?: string; lease_duration_secs?: number }, o: CallOptions = {}): Promise<HeartbeatReply> {
    return this.call('POST', `/api/v1/jobs/${seg(id)}/heartbeat`, { body, idempotent: true, signal: o.signal });
  }

  /** The lease holder's progress, 0…100 (stored on the job, streamed as job.progress). 409 JobCancelledError once cancelled. */
  progress(
    id: string,
    body: { worker_id: string; lease_id?: string; progress: number; message?: string | null; data?: unknown },
    o: CallOptions = {},
  ): Promise<{ id: string } & JobProgress> {
    return this.call('POST', `/api/v1/jobs/${seg(id)}/progress`, { body, idempotent: true, signal: o.signal });
  }

  /** The job's neighbours in its workflow: the jobs it waits for and those that wait for it (empty outside a workflow). */
  dependencies(id: string, o: CallOptions = {}): Promise<JobDependencies> {
    return this.call('GET', `/api/v1/jobs/${seg(id)}/dependencies`, o);
  }

  /** Why a job is not running: every reason that holds now, with its data. */
  explain(id: string, o: CallOptions = {}): Promise<JobExplanation> {
    return this.call('GET', `/api/v1/jobs/${seg(id)}/explain`, { signal: o.signal });
  }

  /** Retry a dead-lettered or cancelled job (its retry count reset). */
  retry<P = JsonObject>(id: string, o: CallOptions = {}): Promise<Job<P>> {
    return this.call('POST', `/api/v1/jobs/${seg(id)}/retry`, { idempotent: true, signal: o.signal });
  }

  /** Change the priority of a pending or scheduled job (-100…100). */
  setPriority(id: string, priority: number, o: CallOptions = {}): Promise<JsonObject> {
    return this.call('PUT', `/api/v1/jobs/${seg(id)}/priority`, { body: { priority }, signal: o.signal });
  }

  cancel(id: string, o: CallOptions = {}): Promise<{ id: string; status: 'cancelled'; [field: string]: unknown }> {
    return this.call('DELETE', `/api/v1/jobs/${seg(id)}`, o);
  }

  /** Counts per status, for the organization or one queue. */
  stats(filter: { queue_name?: string } & CallOptions = {}): Promise<JobStats> {
    return this.call('GET', '/api/v1/jobs/stats', { query: { queue_name: filter.queue_name }, signal: filter.signal });
  }

  /** Status lines of any number of jobs (asked 100 at a time), in the order given; unknown ids are left out. */
  async status(ids: string[], o: CallOptions = {}): Promise<JobStatusLine[]> {
    const out: JobStatusLine[] = [];
    for (let i = 0; i < ids.length; i += 100) {
      out.push(...(await this.call<JobStatusLine[]>('GET', '/api/v1/jobs/status', { query: { ids: ids.slice(i, i + 100).join(',') }, signal: o.signal })));
    }
    return out;
  }
}

export class Dlq extends Resource {
  /** Dead-lettered jobs, with payloads and error history, newest first. */
  list<P = JsonObject>(filter: Omit<JobFilter, 'status'> & ListOptions = {}): Paginator<Job<P>> {
    return this.paginate<Job<P>>('/api/v1/jobs/dlq', jobQuery(filter), filter);
  }

  /** By ids (up to 100: safe to retry) or the oldest of a queue up to `limit` (not retried automatically). */
  retry(req: DlqRetryRequest, o: CallOptions = {}): Promise<DlqRetryResult> {
    if (!req.job_ids && !req.queue_name) throw new TypeError('Sluice: dlq.retry needs job_ids or queue_name');
    return this.call('POST', '/api/v1/jobs/dlq/retry', { body: req, idempotent: req.job_ids !== undefined, signal: o.signal });
  }

  /** Deletes dead-lettered jobs matching every filter given. `confirm: true` is required. */
  purge(req: DlqPurgeRequest, o: CallOptions = {}): Promise<{ purged: number }> {
    if (req.confirm !== true) throw new TypeError('Sluice: dlq.purge needs confirm: true (a purge cannot be undone)');
    const body = { ...req, older_than: iso(req.older_than) };
    return this.call('POST', '/api/v1/jobs/dlq/purge', { body, idempotent: req.job_ids !== undefined, signal: o.signal });
  }
}

export class Queues extends Resource {
  list(o: ListOptions = {}): Paginator<Queue> {
    return this.paginate<Queue>('/api/v1/queues', {}, o);
  }

  create(name: string, config: Partial<QueueConfig> = {}, o: CallOptions = {}): Promise<Queue> {
    return this.call('POST', '/api/v1/queues', { body: { name, ...config }, signal: o.signal });
  }

  get(name: string, o: CallOptions = {}): Promise<Queue> {
    return this.call('GET', `/api/v1/queues/${seg(name)}`, o);
  }

  stats(name: string, o: CallOptions = {}): Promise<QueueStats> {
    return this.call('GET', `/api/v1/queues/${seg(name)}/stats`, o);
  }

  /** Claims answer no jobs until resumed. */
  pause(name: string, reason?: string | null, o: CallOptions = {}): Promise<Queue> {
    return this.call('POST', `/api/v1/queues/${seg(name)}/pause`, { body: reason === undefined ? {} : { reason }, idempotent: true, signal: o.signal });
  }

  resume(name: string, o: CallOptions = {}): Promise<Queue> {
    return this.call('POST', `/api/v1/queues/${seg(name)}/resume`, { idempotent: true, signal: o.signal });
  }

  /** Defaults for new jobs of the queue; null clears one. */
  configure(name: string, config: Partial<QueueConfig>, o: CallOptions = {}): Promise<Queue> {
    return this.call('PUT', `/api/v1/queues/${seg(name)}/config`, { body: config, signal: o.signal });
  }

  /** 409 while the queue holds pending, scheduled or processing jobs. */
  delete(name: string, o: CallOptions = {}): Promise<{ name: string; deleted: true }> {
    return this.call('DELETE', `/api/v1/queues/${seg(name)}`, o);
  }
}

/** The worker record with both spellings of its id (services answer `worker_id`; newer ones `id` too). */
export function normalizeWorker(w: Record<string, unknown>): WorkerRecord {
  const id = (typeof w.id === 'string' && w.id) || (w.worker_id as string);
  return { ...w, id, worker_id: (typeof w.worker_id === 'string' && w.worker_id) || id } as WorkerRecord;
}

export class Workers extends Resource {
  /** With a `worker_id` it is an upsert (safe to retry); without one the service mints an id and charges a slot. */
  async register(reg: WorkerRegistration = {}, o: CallOptions = {}): Promise<WorkerRecord> {
    const w = await this.call<Record<string, unknown>>('POST', '/api/v1/workers/register', { body: reg, idempotent: reg.worker_id !== undefined, signal: o.signal });
    return normalizeWorker(w);
  }

  list(o: ListOptions = {}): Paginator<WorkerRecord> {
    return this.paginate<WorkerRecord>('/api/v1/workers', {}, o, 'key', (w) => normalizeWorker(w as Record<string, unknown>));
  }

  async get(id: string, o: CallOptions = {}): Promise<WorkerRecord> {
    return normalizeWorker(await this.call('GET', `/api/v1/workers/${seg(id)}`, o));
  }

  /** 404 NotFoundError once the worker was deregistered or reaped: register again. */
  async heartbeat(id: string, o: CallOptions = {}): Promise<WorkerRecord> {
    return normalizeWorker(await this.call('POST', `/api/v1/workers/${seg(id)}/heartbeat`, { idempotent: true, signal: o.signal }));
  }

  async deregister(id: string, o: CallOptions = {}): Promise<WorkerRecord> {
    return normalizeWorker(await this.call('POST', `/api/v1/workers/${seg(id)}/deregister`, { idempotent: true, signal: o.signal }));
  }
}

export class Schedules extends Resource {
  create(def: ScheduleDefinition, o: CallOptions = {}): Promise<Schedule> {
    return this.call('POST', '/api/v1/schedules', { body: def, signal: o.signal });
  }

  list(o: ListOptions = {}): Paginator<Schedule> {
    return this.paginate<Schedule>('/api/v1/schedules', {}, o);
  }

  get(id: string, o: CallOptions = {}): Promise<Schedule> {
    return this.call('GET', `/api/v1/schedules/${seg(id)}`, o);
  }

  /** Fields left out keep their value; null clears max_retries or timeout_seconds. */
  update(id: string, changes: ScheduleUpdate, o: CallOptions = {}): Promise<Schedule> {
    return this.call('PUT', `/api/v1/schedules/${seg(id)}`, { body: changes, signal: o.signal });
  }

  delete(id: string, o: CallOptions = {}): Promise<{ id: string; deleted: true }> {
    return this.call('DELETE', `/api/v1/schedules/${seg(id)}`, o);
  }

  pause(id: string, o: CallOptions = {}): Promise<Schedule> {
    return this.call('POST', `/api/v1/schedules/${seg(id)}/pause`, { idempotent: true, signal: o.signal });
  }

  resume(id: string, o: CallOptions = {}): Promise<Schedule> {
    return this.call('POST', `/api/v1/schedules/${seg(id)}/resume`, { idempotent: true, signal: o.signal });
  }

  /** Enqueue the schedule's job now (a manual run; counted against the job quotas). */
  trigger(id: string, o: CallOptions = {}): Promise<TriggeredRun> {
    return this.call('POST', `/api/v1/schedules/${seg(id)}/trigger`, { signal: o.signal });
  }

  /** The schedule's runs (automatic and manual), newest first. */
  runs(id: string, o: ListOptions = {}): Paginator<ScheduleRun> {
    return this.paginate<ScheduleRun>(`/api/v1/schedules/${seg(id)}/runs`, {}, o);
  }

  /** The same list at `/history` (the name clients of the hosted service use); cursors work on both. */
  history(id: string, o: ListOptions = {}): Paginator<ScheduleRun> {
    return this.paginate<ScheduleRun>(`/api/v1/schedules/${seg(id)}/history`, {}, o);
  }
}

export class Workflows extends Resource {
  create(def: WorkflowDefinition, o: CallOptions = {}): Promise<Workflow> {
    return this.call('POST', '/api/v1/workflows', { body: def, signal: o.signal });
  }

  list(o: ListOptions & { status?: WorkflowStatus } = {}): Paginator<WorkflowSummary> {
    return this.paginate<WorkflowSummary>('/api/v1/workflows', { status: o.status }, o);
  }

  get(id: string, o: CallOptions = {}): Promise<Workflow> {
    return this.call('GET', `/api/v1/workflows/${seg(id)}`, o);
  }

  cancel(id: string, o: CallOptions = {}): Promise<Workflow> {
    return this.call('POST', `/api/v1/workflows/${seg(id)}/cancel`, { idempotent: true, signal: o.signal });
  }

  /** Run a failed or cancelled workflow again (its failed jobs come back). */
  retry(id: string, o: CallOptions = {}): Promise<Workflow> {
    return this.call('POST', `/api/v1/workflows/${seg(id)}/retry`, { signal: o.signal });
  }
}

export class OutgoingWebhooks extends Resource {
  create(def: OutgoingWebhookDefinition, o: CallOptions = {}): Promise<OutgoingWebhook> {
    return this.call('POST', '/api/v1/outgoing-webhooks', { body: def, signal: o.signal });
  }

  list(o: ListOptions = {}): Paginator<OutgoingWebhook> {
    return this.paginate<OutgoingWebhook>('/api/v1/outgoing-webhooks', {}, o);
  }

  get(id: string, o: CallOptions = {}): Promise<OutgoingWebhook> {
    return this.call('GET', `/api/v1/outgoing-webhooks/${seg(id)}`, o);
  }

  update(id: string, changes: OutgoingWebhookUpdate, o: CallOptions = {}): Promise<OutgoingWebhook> {
    return this.call('PUT', `/api/v1/outgoing-webhooks/${seg(id)}`, { body: changes, signal: o.signal });
  }

  delete(id: string, o: CallOptions = {}): Promise<{ id: string; deleted: true }> {
    return this.call('DELETE', `/api/v1/outgoing-webhooks/${seg(id)}`, o);
  }

  /** Sends one `webhook.test` delivery now and answers its outcome. */
  test(id: string, o: CallOptions = {}): Promise<TestDelivery> {
    return this.call('POST', `/api/v1/outgoing-webhooks/${seg(id)}/test`, { signal: o.signal });
  }

  /** The newest deliveries (at most 100), newest first. */
  deliveries(id: string, o: { limit?: number } & CallOptions = {}): Promise<Delivery[]> {
    return this.call('GET', `/api/v1/outgoing-webhooks/${seg(id)}/deliveries`, { query: { limit: o.limit }, signal: o.signal });
  }
}

export class ApiKeys extends Resource {
  /** The key's secret value is in this answer only. Permissions default to ["*"]. */
  create(name: string, permissions?: Permission[], o: CallOptions = {}): Promise<CreatedApiKey> {
    return this.call('POST', '/api/v1/api-keys', { body: permissions === undefined ? { name } : { name, permissions }, signal: o.signal });
  }

  list(o: ListOptions = {}): Paginator<ApiKey> {
    return this.paginate<ApiKey>('/api/v1/api-keys', {}, o);
  }

  get(id: string, o: CallOptions = {}): Promise<ApiKey> {
    return this.call('GET', `/api/v1/api-keys/${seg(id)}`, o);
  }

  /**
   * Rename the key or replace its permissions (fields left out keep their value). New permissions apply at once to
   * the key and narrow the tokens issued from it. 409 ConflictError for a revoked key.
   */
  update(id: string, changes: ApiKeyUpdate, o: CallOptions = {}): Promise<ApiKey> {
    return this.call('PUT', `/api/v1/api-keys/${seg(id)}`, { body: changes, idempotent: true, signal: o.signal });
  }

  /** The key and every token issued from it stop working at once. */
  revoke(id: string, o: CallOptions = {}): Promise<ApiKey> {
    return this.call('DELETE', `/api/v1/api-keys/${seg(id)}`, o);
  }
}

export class Auth extends Resource {
  /** Exchange an API key (default: the client's) for an access and a refresh token. */
  login(apiKey?: string, o: CallOptions = {}): Promise<Tokens> {
    const key = apiKey ?? this.http.apiKey;
    if (!key) throw new TypeError('Sluice: auth.login needs an API key');
    return this.call('POST', '/api/v1/auth/login', { body: { api_key: key }, auth: 'none', signal: o.signal });
  }

  refresh(refreshToken: string, o: CallOptions = {}): Promise<Tokens> {
    return this.call('POST', '/api/v1/auth/refresh', { body: { refresh_token: refreshToken }, auth: 'none', signal: o.signal });
  }

  me(o: CallOptions = {}): Promise<Me> {
    return this.call('GET', '/api/v1/auth/me', o);
  }

  /** Ends the session of the client's access token, and of `refreshToken` if given. */
  logout(refreshToken?: string, o: CallOptions = {}): Promise<{ revoked: number }> {
    return this.call('POST', '/api/v1/auth/logout', { body: refreshToken === undefined ? {} : { refresh_token: refreshToken }, idempotent: true, signal: o.signal });
  }

  /** Mails a 6-digit login code to the owner address of an organization (always answers `{sent: true}`). */
  startEmailLogin(email: string, o: CallOptions = {}): Promise<{ sent: boolean }> {
    return this.call('POST', '/api/v1/auth/email/start', { body: { email }, auth: 'none', signal: o.signal });
  }

  verifyEmailLogin(email: string, code: string, o: CallOptions = {}): Promise<Tokens> {
    return this.call('POST', '/api/v1/auth/email/verify', { body: { email, code }, auth: 'none', signal: o.signal });
  }
}

export class Organizations extends Resource {
  /** Plan, quota usage and today's API calls. */
  usage(o: CallOptions = {}): Promise<Usage> {
    return this.call('GET', '/api/v1/organizations/usage', o);
  }

  /** The incoming-webhook token and URL (created on first use). */
  webhookToken(o: CallOptions = {}): Promise<WebhookToken> {
    return this.call('GET', '/api/v1/organizations/webhook-token', o);
  }

  regenerateWebhookToken(o: CallOptions = {}): Promise<WebhookToken> {
    return this.call('POST', '/api/v1/organizations/webhook-token/regenerate', { signal: o.signal });
  }

  /**
   * Create an organization (Free plan) and its first API key. Open when the service runs with
   * REGISTRATION_MODE=open; otherwise the client needs the admin key.
   */
  register(def: OrganizationDefinition, o: CallOptions = {}): Promise<CreatedOrganization> {
    return this.call('POST', '/api/v1/organizations', { body: def, auth: this.http.adminKey ? 'admin' : 'none', signal: o.signal });
  }

  /** Enqueue through the incoming webhook of organization `orgId` with its webhook token (no API key needed). */
  sendIncoming<P = JsonObject>(orgId: string, token: string, def: JobDefinition<P>, o: CallOptions = {}): Promise<EnqueuedJob<P>> {
    return this.call('POST', `/api/v1/webhooks/${seg(orgId)}/custom`, {
      body: jobBody(def),
      auth: 'none',
      headers: { 'x-webhook-token': token },
      idempotent: typeof def.idempotency_key === 'string',
      signal: o.signal,
    });
  }
}

/** The admin API (X-Admin-Key): the client needs `adminKey`. */
export class Admin extends Resource {
  readonly organizations = {
    list: (o: ListOptions = {}): Paginator<Organization> => this.paginate<Organization>('/api/v1/admin/organizations', {}, o, 'admin'),
    create: (def: OrganizationDefinition & { plan?: PlanTier }, o: CallOptions = {}): Promise<CreatedOrganization> =>
      this.call('POST', '/api/v1/admin/organizations', { body: def, auth: 'admin', signal: o.signal }),
    setPlan: (id: string, plan: PlanTier, o: CallOptions = {}): Promise<{ organization_id: string; plan: PlanTier; limit_overrides: Record<string, number | null> }> =>
      this.call('PUT', `/api/v1/admin/organizations/${seg(id)}/plan`, { body: { plan }, auth: 'admin', signal: o.signal }),
    /** Replaces the organization's limit overrides (null: unlimited). */
    setLimits: (id: string, limits: Record<string, number | null>, o: CallOptions = {}): Promise<{ organization_id: string; plan: PlanTier; limit_overrides: Record<string, number | null> }> =>
      this.call('PUT', `/api/v1/admin/organizations/${seg(id)}/limits`, { body: { limits }, auth: 'admin', signal: o.signal }),
    resetUsage: (id: string, o: CallOptions = {}): Promise<{ organization_id: string; jobs_today: number }> =>
      this.call('POST', `/api/v1/admin/organizations/${seg(id)}/usage/reset`, { auth: 'admin', idempotent: true, signal: o.signal }),
  };
}

export class Events extends Resource {
  /** The organization's events, filtered by queue and event names; reconnects by default. */
  stream<D = JsonObject>(o: EventFilterOptions = {}): EventStream<D> {
    return new EventStream<D>(this.http, '/api/v1/events', filterQuery(o), o);
  }

  /** One job: its current status (`job.status`), then its events; ends once the job is finished. */
  job<D = JsonObject>(id: string, o: EventStreamOptions = {}): EventStream<D> {
    return new EventStream<D>(this.http, `/api/v1/events/jobs/${seg(id)}`, {}, { reconnect: false, ...o });
  }

  /** `queue.stats` of one queue: its counts at once, then after activity at most once a second. */
  queue<D = JsonObject>(name: string, o: EventStreamOptions = {}): EventStream<D> {
    return new EventStream<D>(this.http, `/api/v1/events/queues/${seg(name)}`, {}, o);
  }

  /** Waits for the first event matching `predicate` (e.g. a job's completion), or rejects on the signal. */
  async waitFor<D = JsonObject>(predicate: (e: EventEnvelope<D>) => boolean, o: EventFilterOptions = {}): Promise<EventEnvelope<D>> {
    for await (const e of this.stream<D>(o)) if (predicate(e)) return e;
    throw o.signal?.reason ?? new Error('Sluice: the event stream ended');
  }
}

export class Health extends Resource {
  /** 200 while the store answers; throws UnavailableError (503) otherwise (not retried: a probe reports the moment). */
  ready(o: CallOptions = {}): Promise<JsonObject> {
    return this.call('GET', '/health/ready', { auth: 'none', signal: o.signal, idempotent: false });
  }
}
