// The shapes the API answers with (docs/api.md and the feature docs), as far as the dashboard reads them.

export type JobStatus = 'pending' | 'scheduled' | 'processing' | 'completed' | 'deadletter' | 'cancelled';
export const JOB_STATUSES: JobStatus[] = ['pending', 'scheduled', 'processing', 'completed', 'deadletter', 'cancelled'];
export const LIVE_STATUSES = new Set<string>(['pending', 'scheduled', 'processing']);

export type Counts = Record<JobStatus, number>;

/** GET /api/v1/jobs/:id/explain (docs/flow-control.md). */
export interface Explanation {
  running: boolean;
  reasons: Array<{ reason: string; message: string }>;
}

export interface Job {
  concurrency_key?: string | null;
  progress?: { progress: number; message: string | null; at: string } | null;
  id: string;
  queue_name: string;
  status: JobStatus;
  payload: unknown;
  result: unknown;
  priority: number;
  retry_count: number;
  max_retries: number;
  last_error: string | null;
  errors: Array<{ attempt: number; error: string; at: string }>;
  tags: Record<string, string>;
  idempotency_key: string | null;
  timeout_seconds: number;
  assigned_worker_id: string | null;
  workflow_id: string | null;
  dependencies_met: boolean;
  completion_webhook: string | null;
  scheduled_at: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  updated_at: string | null;
  lease_expires_at: string | null;
}

export interface Queue {
  name: string;
  paused: boolean;
  paused_reason: string | null;
  counts: Counts;
  created_at: string;
}

export interface QueueStats extends Counts {
  name: string;
  paused: boolean;
  oldest_pending_age_seconds: number | null;
  throughput_last_minute: { completed: number; failed: number };
}

export interface JobStats {
  queue_name: string | null;
  counts: Counts;
  total: number;
}

export interface Worker {
  worker_id: string;
  queue_name: string | null;
  hostname: string | null;
  max_concurrency: number | null;
  registered_at: string;
  last_heartbeat_at: string;
}

export interface Schedule {
  id: string;
  name: string;
  cron_expression: string;
  timezone: string;
  queue_name: string;
  payload_template: unknown;
  priority: number;
  paused: boolean;
  next_run_at: string | null;
  last_run_at: string | null;
  created_at: string;
}

export interface ScheduleRun {
  id: string;
  scheduled_for: string | null;
  triggered_at: string;
  manual: boolean;
  job_id: string | null;
  status: 'enqueued' | 'failed';
  error: string | null;
}

export interface Workflow {
  id: string;
  name: string;
  status: string;
  job_count: number;
  created_at: string;
  completed_at: string | null;
  jobs?: Array<{ name: string; id: string; queue_name: string; status: JobStatus | null; depends_on: string[]; dependencies_met: boolean }>;
}

export interface Webhook {
  id: string;
  name: string;
  url: string;
  events: string[];
  has_secret: boolean;
  enabled: boolean;
  failure_count: number;
  last_status: string | null;
  created_at: string;
}

export interface Delivery {
  id: string;
  event: string;
  status: string;
  attempts: number;
  response_status: number | null;
  error: string | null;
  created_at: string;
  completed_at: string | null;
}

/** A worker whose last heartbeat is older than this is shown as stale. The server removes it later, after
 *  WORKER_STALE_SECONDS (default 120 s); half of that default flags it while it can still come back. */
export const STALE_AFTER_S = 60;
