// loadQueue — everything a QueueActor holds, read back from rows: the queue's settings and its live jobs
// (pending — blocked workflow jobs included —, scheduled, processing) with their concurrency and debounce keys and
// their expiry, and the queue's flow-control limits. Served by the partial index jobs_live. Payloads stay in the
// store.
import type { LiveJob } from '../../../actors/queue/queue-actor.js';
import type { QueueState } from '../../../actors/records.js';
import type { Store } from '../store.js';

const ms = (d: Date | string | null): number | null => (d === null ? null : new Date(d).getTime());

export async function loadQueue(
  store: Store,
  organizationId: string,
  name: string,
): Promise<{ queue: QueueState | null; live: Omit<LiveJob, 'ver'>[] }> {
  const [queues, jobs] = await Promise.all([
    store.query(
      `SELECT paused, paused_reason, paused_at, max_retries, lease_duration_secs, concurrency_per_key, max_concurrency,
              rate_limit_jobs, rate_limit_per_seconds, created_at, updated_at
         FROM queues WHERE organization_id = $1 AND name = $2`,
      [organizationId, name],
    ),
    store.query(
      `SELECT id, status, priority, retry_count, max_retries, timeout_seconds, last_error, scheduled_at, started_at,
              created_at, assigned_worker_id, lease_id, lease_expires_at, idempotency_key, completion_webhook IS NOT NULL AS callback,
              workflow_id, dependencies_met, concurrency_key, idempotency_expires_at, debounce_key, debounce_until, expires_at
         FROM jobs
        WHERE organization_id = $1 AND queue_name = $2 AND status IN ('pending', 'scheduled', 'processing')`,
      [organizationId, name],
    ),
  ]);
  const live = jobs.map((r) => ({
    id: r.id as string,
    status: r.status,
    priority: r.priority as number,
    retry_count: r.retry_count as number,
    max_retries: r.max_retries as number,
    timeout_seconds: r.timeout_seconds as number,
    last_error: r.last_error as string | null,
    scheduled_at: ms(r.scheduled_at),
    started_at: ms(r.started_at),
    // The due time is not stored: a scheduled or retried job fell due at scheduled_at, a new one when created.
    due_at: ms(r.scheduled_at) ?? ms(r.created_at)!,
    assigned_worker_id: r.assigned_worker_id as string | null,
    lease_id: r.lease_id as string | null,
    lease_expires_at: ms(r.lease_expires_at),
    // The original lease length is not kept; a heartbeat without a duration then renews by the job timeout.
    lease_ms: (r.timeout_seconds as number) * 1000,
    idempotency_key: r.idempotency_key as string | null,
    callback: r.callback as boolean,
    workflow_id: r.workflow_id as string | null,
    // A blocked workflow job comes back blocked: only its coordinator's release makes it claimable.
    blocked: r.status === 'pending' && r.dependencies_met === false,
    concurrency_key: r.concurrency_key as string | null,
    idempotency_expires_at: ms(r.idempotency_expires_at),
    debounce_key: r.debounce_key as string | null,
    debounce_until: ms(r.debounce_until),
    expires_at: ms(r.expires_at),
  }));
  const q = queues[0];
  const queue: QueueState | null = q
    ? {
        paused: q.paused,
        paused_reason: q.paused_reason,
        paused_at: ms(q.paused_at),
        max_retries: q.max_retries,
        lease_duration_secs: q.lease_duration_secs,
        concurrency_per_key: q.concurrency_per_key,
        max_concurrency: q.max_concurrency,
        rate_limit: q.rate_limit_jobs !== null ? { jobs: q.rate_limit_jobs, per_seconds: q.rate_limit_per_seconds } : null,
        created_at: ms(q.created_at)!,
        updated_at: ms(q.updated_at)!,
      }
    : null;
  return { queue, live };
}
