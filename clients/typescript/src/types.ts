// The shapes the service answers and accepts (its OpenAPI document at /api/v1/openapi.json and docs/).
// Times are ISO 8601 UTC strings. Fields the service may add later are allowed by the index signatures of
// the records that are most likely to grow.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = Record<string, unknown>;

export type JobStatus = 'pending' | 'scheduled' | 'processing' | 'completed' | 'deadletter' | 'cancelled';

export interface JobErrorEntry {
  attempt: number;
  error: string;
  at: string;
}

export interface Job<P = JsonObject, R = unknown> {
  id: string;
  organization_id: string;
  queue_name: string;
  status: JobStatus;
  payload: P;
  result: R | null;
  priority: number;
  retry_count: number;
  max_retries: number;
  last_error: string | null;
  errors: JobErrorEntry[];
  tags: Record<string, string>;
  idempotency_key: string | null;
  timeout_seconds: number;
  assigned_worker_id: string | null;
  /** Set while processing: echo it on complete, fail and heartbeat. */
  lease_id: string | null;
  workflow_id: string | null;
  dependencies_met: boolean;
  completion_webhook: string | null;
  /** Fairness and per-key concurrency group (docs/flow-control.md). */
  concurrency_key: string | null;
  debounce_key: string | null;
  /** The lease holder's last report. */
  progress: JobProgress | null;
  /** When the idempotency key frees itself (idempotency_ttl_secs). */
  idempotency_expires_at: string | null;
  /** Not started by then, the job is cancelled with last_error "expired". */
  expires_at: string | null;
  scheduled_at: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  updated_at: string;
  lease_expires_at: string | null;
  [field: string]: unknown;
}

/** A job returned by enqueue: `created` is false when its idempotency key had been used already. */
export type EnqueuedJob<P = JsonObject> = Job<P> & { created: boolean };

export interface JobDefinition<P = JsonObject> {
  queue_name: string;
  payload: P;
  /** Submitting the same key again returns the existing job (and makes the request safe to retry). */
  idempotency_key?: string;
  /** -100…100, higher first. */
  priority?: number;
  /** When the job becomes claimable (ISO 8601 with a time zone, or a Date). */
  scheduled_at?: string | Date | null;
  /** Not started by then (in the future, after scheduled_at), the job is cancelled with last_error "expired". */
  expires_at?: string | Date | null;
  /** 0…100; 0 means no retries. */
  max_retries?: number;
  /** Lease / processing timeout, 5…3600 s. */
  timeout_seconds?: number;
  completion_webhook?: string | null;
  completion_webhook_secret?: string | null;
  /** An object of string → string, or a list of names (each a tag with the value ""). */
  tags?: Record<string, string> | string[];
  /** Fairness and per-key concurrency group, 1–255 characters. */
  concurrency_key?: string | null;
  /** The idempotency key frees itself this long after creation (needs idempotency_key). */
  idempotency_ttl_secs?: number;
  /** A job of the same key still waiting takes this payload and runs delay_ms after it, never past max_delay_ms. */
  debounce?: { key: string; delay_ms: number; max_delay_ms?: number | null };
}

/** Defaults for the items of a bulk enqueue (items override them). */
export interface BulkDefaults {
  queue_name?: string;
  priority?: number;
  max_retries?: number;
  timeout_seconds?: number;
}

export type BulkItem<P = JsonObject> = Omit<JobDefinition<P>, 'queue_name'> & { queue_name?: string };

export interface BulkResult {
  /** `job_id` is the same as `id`. */
  succeeded: Array<{ index: number; id: string; job_id: string; created: boolean; [field: string]: unknown }>;
  failed: Array<{ index: number; error: { error: string; code: string; message: string; status: number; [extra: string]: unknown } }>;
  total: number;
  success_count: number;
  failure_count: number;
}

export interface JobFilter {
  queue_name?: string;
  status?: JobStatus;
  /** `key` or `key:value`; every one must match. */
  tag?: string | string[];
  created_after?: string | Date;
  created_before?: string | Date;
}

export interface PageOptions {
  /** Page size, 1…100 (default 20 on the service). */
  limit?: number;
  /** Start after this cursor (the `nextCursor` of an earlier page). */
  cursor?: string;
}

export interface ClaimRequest {
  queue_name: string;
  worker_id: string;
  /** 1…500 (default 1; an older service takes 1…100). */
  limit?: number;
  /** 5…3600; default: the queue's, else the job's timeout_seconds. */
  lease_duration_secs?: number;
  /** Long poll: wait up to this long (0…30000 ms) for a job when none is ready. */
  wait_ms?: number;
}

export interface CompleteReply {
  id: string;
  status: 'completed';
  completed_at: string;
  [field: string]: unknown;
}

/** One item of a batch acknowledgement; `worker_id` defaults to the request's. */
export interface AckItem {
  id: string;
  lease_id?: string;
  worker_id?: string;
  result?: unknown;
}

/** Per-item outcome of a batch acknowledgement (POST /api/v1/jobs/complete). */
export interface AckResult {
  succeeded: Array<{ index: number; id: string; status: 'completed'; completed_at: string; [field: string]: unknown }>;
  failed: Array<{ index: number; id: string; error: { error: string; code: string; message: string; status: number; [extra: string]: unknown } }>;
  total: number;
  success_count: number;
  failure_count: number;
  /** With `claim` in the request: the jobs it claimed, each under its lease. */
  jobs?: Job[];
  /** With `claim`: why it claimed nothing (the completions stand). */
  claim_error?: { error: string; code: string; message: string; status: number; [extra: string]: unknown };
}

/** The next jobs claimed by a batch acknowledgement, for the request's worker_id, without waiting. */
export interface AckClaim {
  queue_name: string;
  /** 1 to 500 (default 1; an older service takes 1 to 100). */
  limit?: number;
  lease_duration_secs?: number;
}

export interface FailReply {
  id: string;
  /** `scheduled` (retried at scheduled_at) or `deadletter`. */
  status: 'scheduled' | 'deadletter';
  retry_count: number;
  max_retries: number;
  scheduled_at: string | null;
  last_error: string;
  [field: string]: unknown;
}

/** The lease holder's last report on a job (POST /jobs/:id/progress). */
export interface JobProgress {
  progress: number;
  message: string | null;
  data: unknown;
  at: string;
}

/** GET /jobs/:id/explain: every reason that holds now (docs/flow-control.md). */
export interface JobExplanation {
  id: string;
  queue_name: string;
  status: JobStatus;
  running: boolean;
  reasons: Array<{ reason: string; message: string; [data: string]: unknown }>;
  at: string;
}

export interface HeartbeatReply {
  id: string;
  lease_id: string;
  lease_expires_at: string;
  [field: string]: unknown;
}

export type StatusCounts = Record<JobStatus, number>;

/** The counts per status, in `counts` and again at the top level. */
export interface JobStats extends StatusCounts {
  queue_name: string | null;
  counts: StatusCounts;
  total: number;
  [field: string]: unknown;
}

/** A job's neighbours in its workflow (GET /jobs/:id/dependencies). */
export interface JobDependencies {
  job_id: string;
  /** null: the job belongs to no workflow (both lists are empty). */
  workflow_id: string | null;
  /** The jobs it waits for. */
  dependencies: JobNeighbour[];
  /** The jobs that wait for it. */
  dependents: JobNeighbour[];
}

export interface JobNeighbour {
  id: string;
  /** The same as id. */
  job_id: string;
  /** Its name in the workflow. */
  name: string;
  status: JobStatus;
}

export interface JobStatusLine {
  id: string;
  status: JobStatus;
  queue_name: string;
  retry_count: number;
  updated_at: string;
}

export interface DlqRetryRequest {
  /** Up to 100 ids… */
  job_ids?: string[];
  /** …or the oldest of a queue, up to `limit` (default 100, at most 1000). */
  queue_name?: string;
  limit?: number;
}

export interface DlqRetryResult {
  retried: number;
  job_ids: string[];
  failed: Array<{ id: string; error: string }>;
}

export interface DlqPurgeRequest {
  job_ids?: string[];
  queue_name?: string;
  /** Dead-lettered before this instant. */
  older_than?: string | Date;
  /** Required by the service: a purge cannot be undone. */
  confirm: true;
}

export interface QueueConfig {
  max_retries: number | null;
  lease_duration_secs: number | null;
  /** Flow control (docs/flow-control.md). */
  concurrency_per_key: number | null;
  max_concurrency: number | null;
  rate_limit: { jobs: number; per_seconds: number } | null;
}

export interface Queue {
  name: string;
  /** The same as name. */
  queue_name: string;
  paused: boolean;
  paused_reason: string | null;
  paused_at: string | null;
  config: QueueConfig;
  counts?: StatusCounts;
  created_at: string;
  updated_at: string;
  [field: string]: unknown;
}

export interface QueueStats extends StatusCounts {
  name: string;
  paused: boolean;
  oldest_pending_age_seconds: number | null;
  throughput_last_minute: { completed: number; failed: number };
  /** The concurrency keys with the most processing jobs, then the most live jobs. */
  busiest_keys: Array<{ key: string; processing: number; waiting: number }>;
  [field: string]: unknown;
}

export interface WorkerRegistration {
  /** 1–128 of A-Z a-z 0-9 . _ -; omitted: the service mints a UUID. Send a stable id to re-register into the same slot. */
  worker_id?: string;
  queue_name?: string | null;
  hostname?: string | null;
  max_concurrency?: number | null;
  metadata?: JsonObject;
  /** The worker's own version (1–100 characters). */
  version?: string | null;
}

export interface WorkerRecord {
  /** The worker's id: `id` on newer services, `worker_id` on all (the client fills both). */
  id: string;
  worker_id: string;
  queue_name: string | null;
  hostname: string | null;
  max_concurrency: number | null;
  metadata: JsonObject;
  version: string | null;
  registered_at: string;
  last_heartbeat_at: string;
  /** The same as last_heartbeat_at. */
  last_heartbeat: string;
  /** The lease a claim gets when neither it, the job nor its queue names one. */
  lease_duration_secs: number;
  /** Heartbeat at least this often. */
  heartbeat_interval_secs: number;
  /** `active`; `deregistered` in the answer of deregister. */
  status: 'active' | 'deregistered';
  [field: string]: unknown;
}

export interface ScheduleDefinition {
  name: string;
  /** Free text, up to 1000 characters. */
  description?: string | null;
  /** 6 fields: second minute hour day-of-month month day-of-week. */
  cron_expression: string;
  /** IANA zone (default UTC). */
  timezone?: string;
  queue_name: string;
  payload_template?: JsonObject;
  priority?: number;
  max_retries?: number | null;
  timeout_seconds?: number | null;
  /** Create it paused. */
  paused?: boolean;
}

export type ScheduleUpdate = Partial<Omit<ScheduleDefinition, 'paused'>>;

export interface Schedule {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  cron_expression: string;
  timezone: string;
  queue_name: string;
  payload_template: JsonObject;
  priority: number;
  max_retries: number | null;
  timeout_seconds: number | null;
  paused: boolean;
  /** Not paused. */
  is_active: boolean;
  next_run_at: string | null;
  last_run_at: string | null;
  created_at: string;
  updated_at: string;
  [field: string]: unknown;
}

export interface ScheduleRun {
  id: string;
  schedule_id: string;
  scheduled_for: string;
  triggered_at: string;
  manual: boolean;
  job_id: string | null;
  status: 'enqueued' | 'failed';
  error: string | null;
  [field: string]: unknown;
}

export type TriggeredRun = ScheduleRun & { job: Job };

export interface WorkflowJobDefinition {
  /** Unique in the workflow; one of name and key is required. */
  name?: string;
  /** Another name for `name` (as clients of the hosted service send it). */
  key?: string;
  queue_name: string;
  payload: JsonObject;
  depends_on?: string[];
  priority?: number;
  max_retries?: number;
  timeout_seconds?: number;
  tags?: Record<string, string>;
  /** Not started by then, the job is cancelled with last_error "expired" (RFC 3339). */
  expires_at?: string | null;
}

export interface WorkflowDefinition {
  name: string;
  jobs: WorkflowJobDefinition[];
}

export type WorkflowStatus = 'creating' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface WorkflowSummary {
  id: string;
  organization_id: string;
  name: string;
  status: WorkflowStatus;
  job_count: number;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  [field: string]: unknown;
}

export interface Workflow extends WorkflowSummary {
  /** The same as id. */
  workflow_id: string;
  /** The ids of its jobs, in the order of the definition. */
  job_ids: string[];
  jobs: Array<{ name: string; id: string; queue_name: string; status: JobStatus | null; depends_on: string[]; dependencies_met: boolean }>;
}

export type WebhookEvent =
  | 'job.created'
  | 'job.started'
  | 'job.completed'
  | 'job.failed'
  | 'job.cancelled'
  | 'queue.paused'
  | 'queue.resumed'
  | 'worker.registered'
  | 'worker.deregistered'
  | 'schedule.triggered';

export interface OutgoingWebhookDefinition {
  name: string;
  url: string;
  events: WebhookEvent[];
  /** HMAC secret: deliveries then carry X-Queue-Signature. */
  secret?: string | null;
  enabled?: boolean;
}

/** `secret`: omitted keeps it, null clears it, a string replaces it. */
export type OutgoingWebhookUpdate = Partial<OutgoingWebhookDefinition>;

export interface OutgoingWebhook {
  id: string;
  name: string;
  url: string;
  events: string[];
  has_secret: boolean;
  enabled: boolean;
  failure_count: number;
  last_status: 'success' | 'failed' | 'auto_disabled' | null;
  created_at: string;
  updated_at: string;
  [field: string]: unknown;
}

export interface Delivery {
  id: string;
  event_id: string;
  event: string;
  status: 'pending' | 'success' | 'failed';
  attempts: number;
  response_status: number | null;
  error: string | null;
  created_at: string;
  completed_at: string | null;
  [field: string]: unknown;
}

/** The outcome of a test send (one attempt). */
export interface TestDelivery {
  id: string;
  event: 'webhook.test';
  /** `pending` only when the node began shutting down during the attempt. */
  status: 'success' | 'failed' | 'pending';
  attempts: number;
  response_status: number | null;
  error: string | null;
  [field: string]: unknown;
}

export type Permission = '*' | 'jobs:read' | 'jobs:write' | 'queues:read' | 'queues:write' | 'dlq:read' | 'dlq:write';

export interface ApiKey {
  id: string;
  name: string;
  key_prefix: string;
  permissions: string[];
  status: 'active' | 'revoked';
  /** status is active. */
  is_active: boolean;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  [field: string]: unknown;
}

export interface CreatedApiKey {
  id: string;
  name: string;
  /** The secret value: shown in this answer only. */
  key: string;
  key_prefix: string;
  permissions: string[];
  is_active: true;
  created_at: string;
}

/** PUT /api-keys/:id: a field left out keeps its value. */
export interface ApiKeyUpdate {
  name?: string;
  permissions?: Permission[];
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_expires_in: number;
}

export interface Me {
  organization_id: string;
  api_key_id: string | null;
  permissions: string[];
  via: 'api_key' | 'jwt' | 'email';
  issued_at: string | null;
  expires_at: string | null;
}

export interface UsageEntry {
  current: number;
  limit: number | null;
  percentage?: number | null;
}

export interface Usage {
  organization_id: string;
  plan: { tier: string; display_name: string; [field: string]: unknown };
  /** The UTC day the daily counts are of. */
  period: { start: string; day: string };
  usage: Record<string, UsageEntry>;
  limits: Record<string, number | null>;
  jobs: { created_today: number; by_status: StatusCounts; total: number };
  api_calls: { today: number; rate_limited_today: number; rate_per_second: number | null; burst: number | null };
  [field: string]: unknown;
}

export interface WebhookToken {
  token: string;
  url: string;
}

export type PlanTier = 'free' | 'starter' | 'pro' | 'enterprise';

export interface Organization {
  id: string;
  name: string;
  slug: string;
  plan: string;
  owner_email: string | null;
  created_at: string;
}

export interface OrganizationDefinition {
  name: string;
  /** 2–63 of a-z 0-9 -, not starting with -. */
  slug: string;
  owner_email?: string | null;
}

export interface CreatedOrganization {
  organization: Organization;
  api_key: { id: string; name: string; key: string; permissions: string[]; created_at: string };
}

/** GET /api/v1/dashboard: the organization's overview. */
export interface DashboardOverview {
  version: string;
  started_at: string;
  uptime_seconds: number;
  at: string;
  store: { kind: 'postgresql' | 'embedded'; status: 'ok'; latency_ms: number };
  jobs: {
    by_status: StatusCounts;
    total: number;
    completed_24h: number;
    /** Jobs dead-lettered in the last 24 h. */
    failed_24h: number;
    /** Failed attempts (fail calls, lease expiries) in the last 24 h. */
    failed_attempts_24h: number;
    /** Due → claimed, of the jobs claimed in the last 24 h; null when none. */
    avg_wait_seconds_24h: number | null;
    /** Claimed → completed, of the jobs completed in the last 24 h; null when none. */
    avg_processing_seconds_24h: number | null;
  };
  /** The first 20 queues by name. */
  queues: Array<{ name: string; paused: boolean; counts: StatusCounts }>;
  more_queues: boolean;
  /** Healthy: a heartbeat within two heartbeat intervals. */
  workers: { total: number; healthy: number; unhealthy: number };
}

/** The envelope of every event (SSE, WebSocket, webhooks). */
export interface EventEnvelope<D = JsonObject> {
  id: string;
  event: string;
  created_at: string;
  data: D;
}
