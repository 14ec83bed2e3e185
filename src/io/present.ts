// Jobs and workers as the API shows them (REST and gRPC). Rows come from SELECT (Dates), from RETURNING row_to_json
// (strings) or from an actor (epoch ms); every timestamp leaves as ISO 8601 UTC. The completion webhook secret never leaves.
import type { WorkerRow } from './db/sql/getWorker.js';

// The last epoch-ms time written: a job's created, updated and scheduled times are often one instant, and so are
// the times of a group's jobs.
let lastMs = NaN;
let lastIso = '';

const isoOf = (v: unknown): string | null => {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') {
    if (v === lastMs) return lastIso;
    const d = new Date(v);
    if (Number.isNaN(d.getTime())) return null;
    lastMs = v;
    lastIso = d.toISOString();
    return lastIso;
  }
  // row_to_json's UTC text ("2026-11-27T23:34:06.41+00:00": what a claim returns; up to six digits of fraction,
  // trailing zeros dropped) is the ISO form but for the fraction's width and the zone: rewritten, not parsed (a parse
  // and toISOString took 3-5 % of the main thread in claim → complete). Other zones and shapes are parsed.
  if (typeof v === 'string' && v.length >= 25 && v.length <= 32 && v.charCodeAt(10) === 84 && v.endsWith('+00:00')) {
    if (v.length === 25) return `${v.slice(0, 19)}.000Z`;
    if (v.charCodeAt(19) === 46) return `${v.slice(0, 19)}.${`${v.slice(20, v.length - 6)}00`.slice(0, 3)}Z`;
  }
  const d = v instanceof Date ? v : new Date(v as string | number);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
};

export function presentJob(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: row.id,
    organization_id: row.organization_id,
    queue_name: row.queue_name,
    status: row.status,
    payload: row.payload,
    result: row.result ?? null,
    priority: row.priority,
    retry_count: row.retry_count,
    max_retries: row.max_retries,
    last_error: row.last_error ?? null,
    errors: row.errors ?? [],
    tags: row.tags ?? {},
    idempotency_key: row.idempotency_key ?? null,
    timeout_seconds: row.timeout_seconds,
    assigned_worker_id: row.assigned_worker_id ?? null,
    lease_id: row.lease_id ?? null,
    workflow_id: row.workflow_id ?? null,
    dependencies_met: row.dependencies_met ?? true,
    completion_webhook: row.completion_webhook ?? null,
    concurrency_key: row.concurrency_key ?? null,
    debounce_key: row.debounce_key ?? null,
    progress: row.progress ?? null,
    // The times, in one object literal (a loop of keyed stores was 1-2 % of an enqueue's main thread).
    scheduled_at: isoOf(row.scheduled_at),
    created_at: isoOf(row.created_at),
    started_at: isoOf(row.started_at),
    completed_at: isoOf(row.completed_at),
    updated_at: isoOf(row.updated_at),
    lease_expires_at: isoOf(row.lease_expires_at),
    idempotency_expires_at: isoOf(row.idempotency_expires_at),
    expires_at: isoOf(row.expires_at),
  };
  return out;
}

export { isoOf };

/** A lease reply of a queue actor: its epoch-ms times as ISO 8601. */
export function presentTimes(reply: object): Record<string, unknown> {
  const out: Record<string, unknown> = { ...reply };
  for (const k of ['completed_at', 'scheduled_at', 'lease_expires_at']) {
    if (typeof out[k] === 'number') out[k] = isoOf(out[k]);
  }
  return out;
}

/**
 * A worker as REST shows it (gRPC maps this to a queue.v1.Worker). `id` repeats `worker_id` and `last_heartbeat`
 * repeats `last_heartbeat_at`, and the timing is the service's: clients written for the hosted service read them.
 */
export function presentWorker(row: WorkerRow, timing: { lease_duration_secs: number; heartbeat_interval_secs: number }): Record<string, unknown> {
  const lastHeartbeat = isoOf(row.last_heartbeat_at);
  return {
    id: row.id,
    worker_id: row.id,
    queue_name: row.queue_name,
    hostname: row.hostname,
    max_concurrency: row.max_concurrency,
    metadata: row.metadata,
    version: row.version,
    registered_at: isoOf(row.registered_at),
    last_heartbeat_at: lastHeartbeat,
    last_heartbeat: lastHeartbeat,
    lease_duration_secs: timing.lease_duration_secs,
    heartbeat_interval_secs: timing.heartbeat_interval_secs,
    status: 'active',
  };
}
