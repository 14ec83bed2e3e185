// loadQueue — what a QueueActor is rebuilt from, without its ready backlog: the queue's settings, the jobs it
// always holds (scheduled, processing — bounded by claims —, blocked workflow jobs; partial index jobs_held),
// how many ready jobs wait per concurrency key (jobs_ready_keys: a key's lane must exist before claims, for
// fairness), how many ready jobs wait in all up to `cap` (a large backlog's count of jobs without a key comes
// later, readyCount.ts: counting a million rows took 0.5 s, which the first claim need not wait for), and the
// ready jobs it must find without holding them (an expiry, a debounce key; jobs_ready_marks). The ready jobs themselves come page by
// page in claim order (readyJobs.ts), so a queue of a million jobs is rebuilt from its head, not its whole.
// Payloads stay in the store.
import type { LiveJob } from '../../../actors/queue/queue-actor.js';
import type { QueueState } from '../../../actors/records.js';
import type { Row, Store } from '../store.js';

const ms = (d: Date | string | number | null): number | null => (d === null ? null : typeof d === 'number' ? d : new Date(d).getTime());

/**
 * A time as epoch milliseconds, what the actor holds (truncated, as a Date of the text would be): a number for the
 * driver instead of a timestamp's text to parse into a Date (a refill reads thousands of rows; the driver's date
 * parsing was 1.4 % of the main thread in the SDK worker benchmark).
 */
const epochMs = (column: string): string => `floor(extract(epoch FROM ${column}) * 1000)::float8 AS ${column}`;

/** The columns of a live job as its actor holds it (readyJobs.ts reads the same). */
export const LIVE_COLUMNS = `id, status, priority, retry_count, max_retries, timeout_seconds, last_error, ${epochMs('scheduled_at')},
  ${epochMs('started_at')}, ${epochMs('created_at')}, assigned_worker_id, lease_id, ${epochMs('lease_expires_at')}, idempotency_key,
  completion_webhook IS NOT NULL AS callback, workflow_id, dependencies_met, concurrency_key, ${epochMs('idempotency_expires_at')},
  debounce_key, ${epochMs('debounce_until')}, ${epochMs('expires_at')}`;

export const liveJob = (r: Row): Omit<LiveJob, 'ver'> => ({
  id: r.id as string,
  status: r.status as LiveJob['status'],
  priority: r.priority as number,
  retry_count: r.retry_count as number,
  max_retries: r.max_retries as number,
  timeout_seconds: r.timeout_seconds as number,
  last_error: r.last_error as string | null,
  scheduled_at: ms(r.scheduled_at as number | null),
  started_at: ms(r.started_at as number | null),
  // The due time is not stored: a scheduled or retried job fell due at scheduled_at, a new one when created.
  due_at: ms(r.scheduled_at as number | null) ?? ms(r.created_at as number)!,
  assigned_worker_id: r.assigned_worker_id as string | null,
  lease_id: r.lease_id as string | null,
  lease_expires_at: ms(r.lease_expires_at as number | null),
  // The original lease length is not kept; a heartbeat without a duration then renews by the job timeout.
  lease_ms: (r.timeout_seconds as number) * 1000,
  idempotency_key: r.idempotency_key as string | null,
  callback: r.callback as boolean,
  workflow_id: r.workflow_id as string | null,
  // A blocked workflow job comes back blocked: only its coordinator's release makes it claimable.
  blocked: r.status === 'pending' && r.dependencies_met === false,
  concurrency_key: r.concurrency_key as string | null,
  idempotency_expires_at: ms(r.idempotency_expires_at as number | null),
  debounce_key: r.debounce_key as string | null,
  debounce_until: ms(r.debounce_until as number | null),
  expires_at: ms(r.expires_at as number | null),
});

/** Ready jobs not held by the actor that it must still find: the expiry to fire, the debounce key to absorb. */
export interface ReadyMark {
  id: string;
  concurrency_key: string | null;
  expires_at: number | null;
  /** Set only for a job that never ran (a claim ends its burst). */
  debounce_key: string | null;
}

export interface QueueSnapshot {
  queue: QueueState | null;
  held: Omit<LiveJob, 'ver'>[];
  /** Ready jobs in the store per concurrency key. */
  ready: Array<{ key: string; count: number }>;
  /** Ready jobs without a key; null: more than the cap wait in all, those without a key are counted later. */
  unkeyed: number | null;
  marks: ReadyMark[];
}

export async function loadQueue(store: Store, organizationId: string, name: string, cap: number): Promise<QueueSnapshot> {
  const args = [organizationId, name];
  const [queues, held, capped, keyed, marks] = await Promise.all([
    store.query(
      `SELECT paused, paused_reason, paused_at, max_retries, lease_duration_secs, concurrency_per_key, max_concurrency,
              rate_limit_jobs, rate_limit_per_seconds, created_at, updated_at
         FROM queues WHERE organization_id = $1 AND name = $2`,
      args,
    ),
    store.query(
      `SELECT ${LIVE_COLUMNS} FROM jobs
        WHERE organization_id = $1 AND queue_name = $2
          AND (status IN ('scheduled', 'processing') OR (status = 'pending' AND NOT dependencies_met))`,
      args,
    ),
    store.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (
         SELECT 1 FROM jobs WHERE organization_id = $1 AND queue_name = $2 AND status = 'pending' AND dependencies_met LIMIT $3) t`,
      [organizationId, name, cap + 1],
    ),
    store.query<{ key: string; n: number }>(
      `SELECT concurrency_key AS key, count(*)::int AS n FROM jobs
        WHERE organization_id = $1 AND queue_name = $2 AND status = 'pending' AND dependencies_met AND concurrency_key IS NOT NULL
        GROUP BY concurrency_key`,
      args,
    ),
    store.query(
      `SELECT id, concurrency_key, expires_at, CASE WHEN started_at IS NULL THEN debounce_key END AS debounce_key FROM jobs
        WHERE organization_id = $1 AND queue_name = $2 AND status = 'pending' AND dependencies_met
          AND (expires_at IS NOT NULL OR debounce_key IS NOT NULL)`,
      args,
    ),
  ]);
  const q = queues[0];
  const queue: QueueState | null = q
    ? {
        paused: q.paused as boolean,
        paused_reason: q.paused_reason as string | null,
        paused_at: ms(q.paused_at as string | null),
        max_retries: q.max_retries as number | null,
        lease_duration_secs: q.lease_duration_secs as number | null,
        concurrency_per_key: q.concurrency_per_key as number | null,
        max_concurrency: q.max_concurrency as number | null,
        rate_limit: q.rate_limit_jobs !== null ? { jobs: q.rate_limit_jobs as number, per_seconds: q.rate_limit_per_seconds as number } : null,
        created_at: ms(q.created_at as string)!,
        updated_at: ms(q.updated_at as string)!,
      }
    : null;
  return {
    queue,
    held: held.map(liveJob),
    ready: keyed.map((k) => ({ key: k.key, count: k.n })),
    unkeyed: capped[0]!.n > cap ? null : capped[0]!.n - keyed.reduce((sum, k) => sum + k.n, 0),
    marks: marks.map((m) => ({
      id: m.id as string,
      concurrency_key: m.concurrency_key as string | null,
      expires_at: ms(m.expires_at as string | null),
      debounce_key: m.debounce_key as string | null,
    })),
  };
}
