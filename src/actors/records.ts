// The vocabulary actors write into their thread's journal. Records describe final row states, not SQL:
// the journal coalesces several records for one job within a batch into one row write.

export type JobStatus = 'pending' | 'scheduled' | 'processing' | 'completed' | 'deadletter' | 'cancelled';

export interface ErrorEntry {
  attempt: number;
  error: string;
  at: string;
}

/** The columns of a job that change over its life. Times are epoch milliseconds. */
export interface JobState {
  status: JobStatus;
  priority: number;
  retry_count: number;
  last_error: string | null;
  scheduled_at: number | null;
  started_at: number | null;
  completed_at: number | null;
  updated_at: number;
  assigned_worker_id: string | null;
  lease_id: string | null;
  lease_expires_at: number | null;
  /** False while a workflow job waits for its parents (pending but not claimable). */
  dependencies_met: boolean;
}

/** A whole new job row. */
export interface JobRow extends JobState {
  id: string;
  organization_id: string;
  queue_name: string;
  payload: unknown;
  result: unknown;
  max_retries: number;
  errors: ErrorEntry[];
  tags: Record<string, string>;
  idempotency_key: string | null;
  timeout_seconds: number;
  created_at: number;
  workflow_id: string | null;
  dependencies_met: boolean;
  completion_webhook: string | null;
  completion_webhook_secret: string | null;
  /** Fairness and per-key concurrency group (queues with concurrency_per_key). */
  concurrency_key: string | null;
  /** When the idempotency key frees itself (idempotency_ttl_secs), or null: held while the row exists. */
  idempotency_expires_at: number | null;
  /** A debounced job: later jobs with this key replace its payload and push its run time, up to debounce_until. */
  debounce_key: string | null;
  debounce_until: number | null;
  /** Not started by this instant, the job is cancelled (last_error 'expired'); absent or null: never. */
  expires_at?: number | null;
}

/** What a worker last reported of a job in flight. */
export interface Progress {
  progress: number;
  message: string | null;
  data: unknown;
  at: string;
}

/** A queue row as its actor holds it. Times are epoch milliseconds. */
export interface QueueState {
  paused: boolean;
  paused_reason: string | null;
  /** Overrides for jobs enqueued without their own value. */
  max_retries: number | null;
  lease_duration_secs: number | null;
  /** Flow control: at most this many processing jobs per concurrency key, and in the whole queue. */
  concurrency_per_key: number | null;
  max_concurrency: number | null;
  /** At most `jobs` claims handed out in any `per_seconds` window. */
  rate_limit: { jobs: number; per_seconds: number } | null;
  /** When the queue was paused (explain shows it), null while it runs. */
  paused_at: number | null;
  created_at: number;
  updated_at: number;
}

export type JournalRecord =
  /** The queue's whole row (upserted), or null: the queue is deleted. */
  | { kind: 'queue'; organization_id: string; name: string; state: QueueState | null }
  | { kind: 'insert'; job: JobRow; conflictKey: boolean }
  /** Jobs created by an organization on a UTC day (the absolute count). */
  | { kind: 'usage'; organization_id: string; day: string; jobs_created: number }
  | {
      kind: 'update';
      id: string;
      state: JobState;
      /** Error entries to append to the history. */
      errors?: ErrorEntry[];
      result?: unknown;
      /** A debounced job's new payload. */
      payload?: unknown;
      /** The worker's latest progress report. */
      progress?: Progress;
      /** The job gives up its idempotency key (its window is over and a new job takes the key). */
      dropKey?: true;
      /** The job's expires_at is cleared (a revived job gets another chance to run). */
      clearExpiry?: true;
      /** Return the whole row after the write (claims hand the payload to the worker). */
      returning?: boolean;
      /** Return an empty row if the write took (a claim answered from the row its actor kept). */
      confirm?: boolean;
      /** Write only if the row is in one of these states (reviving a terminal job the actor does not hold). */
      onlyFrom?: JobStatus[];
    };

/** What a commit hands back to the replies waiting on it (read-only: a reply may see several commits' output). */
export interface CommitOutput {
  /**
   * Rows asked for with `returning`, by job id: each `get` a row object of its own, which the reply may hand out
   * (its JSON values are shared and never changed in place). A write with `confirm` that took has an empty row.
   */
  rows: Pick<Map<string, Record<string, unknown>>, 'get'>;
  /** Ids whose insert took place (an idempotency conflict skips it). */
  inserted: Pick<Set<string>, 'has'>;
}

/** One commit's output as the store returns it. */
export interface CommitResult {
  rows: Map<string, Record<string, unknown>>;
  inserted: Set<string>;
}

/** The public names of job and queue activity (streams, outgoing webhooks). */
export type JobEventName = 'job.created' | 'job.started' | 'job.progress' | 'job.completed' | 'job.failed' | 'job.cancelled';
export type QueueEventName = 'queue.paused' | 'queue.resumed';

/**
 * What other actors and the main thread hear of a change, once it is committed: quota counters, streams and
 * outgoing webhooks. `job.finished` is the quota view (a live job left the live states); `job` events are the
 * public ones, with `data` holding what the event adds (result, error, worker_id, retry_count…).
 */
export type DomainEvent =
  | {
      type: 'job.finished';
      organization_id: string;
      queue_name: string;
      job_id: string;
      status: 'completed' | 'deadletter' | 'cancelled';
      /** Set when the job belongs to a workflow: its coordinator then needs no read to know. */
      workflow_id?: string;
    }
  | {
      type: 'job';
      event: JobEventName;
      organization_id: string;
      queue_name: string;
      job_id: string;
      status: JobStatus;
      at: number;
      data?: Record<string, unknown>;
      /** Published only if this job's insert took place (an idempotent insert may lose to an existing key). */
      ifInserted?: boolean;
      /**
       * For metrics, never published: on job.started the instant the job fell due (wait = at - since); on the
       * events that end an attempt (completed, failed, cancelled while processing) the instant it was claimed
       * (run = at - since).
       */
      since?: number;
      /** job.failed only: the lease expired (no worker said anything). */
      expired?: boolean;
    }
  | { type: 'queue'; event: QueueEventName; organization_id: string; queue_name: string; at: number; data?: Record<string, unknown> }
  | { type: 'queue.created' | 'queue.deleted'; organization_id: string; queue_name: string }
  /** An organization's quota actor was (re)built from rows: admission credit handed out before is not in it. */
  | { type: 'org.loaded'; organization_id: string };

/** What an actor needs from its thread: the time, a journal to write to, and events to publish after commit. */
export interface Effects {
  readonly now: number;
  write(rec: JournalRecord): void;
  emit(event: DomainEvent): void;
  newJobId(): string;
}

/** A reply computed once the records written before it are committed. */
export type Reply<T> = (out: CommitOutput) => T;
