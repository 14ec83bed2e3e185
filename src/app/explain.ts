// Explain (GET /api/v1/jobs/:id/explain, `sluice jobs explain`) — why a job is not running: every reason that holds now, each with the data behind
// it. The queue actor knows the live state (limits, keys, the rate window, what is ahead, the last claim); the
// store knows the rest (the job row, a workflow job's parents, registered workers); the quota actor the
// organization's active jobs. Reasons are listed in docs/flow-control.md.
import type { ExplainFacts } from '../actors/queue/queue-actor.js';
import { notFound } from '../errors.js';
import { readyAhead } from '../io/db/sql/readyAhead.js';
import { getJob } from '../io/db/sql/getJob.js';
import { jobDependencies } from '../io/db/sql/jobDependencies.js';
import { queueWorkers } from '../io/db/sql/queueWorkers.js';
import { isoOf } from '../io/present.js';
import type { AppContext } from './context.js';

/** A claimable job no claim has reached for this long is reported as `no_recent_claims`. */
export const IDLE_QUEUE_SECS = 60;

export interface Reason {
  reason: string;
  message: string;
  [data: string]: unknown;
}

export interface Explanation {
  id: string;
  queue_name: string;
  status: string;
  running: boolean;
  reasons: Reason[];
  at: string | null;
}

export async function explainJob(s: AppContext, org: string, id: string): Promise<Explanation> {
  const row = await getJob(s.store, org, id);
  if (!row) throw notFound('Job');
  const queue = row.queue_name as string;
  const status = row.status as string;
  const now = s.clock.now();
  const reasons: Reason[] = [];
  const live = status === 'pending' || status === 'scheduled';
  const [told, usage] = await Promise.all([
    live ? s.actors.ask(org, queue, 'explain', { id }) : Promise.resolve<ExplainFacts>({ live: false }),
    s.quotas.usage(org),
  ]);
  // A job paged out of its actor's window: the jobs ahead of it are counted in the store. A new object, never the
  // reply changed in place (a reply is not copied on its way from actors on the main thread: inline-thread.ts).
  const facts = told.live && told.paged ? { ...told, ahead: await readyAhead(s.store, org, queue, told.priority, id) } : told;
  if (facts.live && facts.status !== 'processing') {
    if (facts.paused) {
      reasons.push({ reason: 'queue_paused', message: `The queue '${queue}' is paused`, since: isoOf(facts.paused_at), paused_reason: facts.paused_reason });
    }
    if (facts.status === 'scheduled' && facts.scheduled_at !== null) {
      const until = isoOf(facts.scheduled_at);
      if (facts.retry_count > 0) {
        reasons.push({
          reason: 'retry_backoff',
          message: `Attempt ${facts.retry_count + 1} of ${facts.max_retries + 1} waits for its backoff until ${until}`,
          until,
          attempt: facts.retry_count + 1,
          max_attempts: facts.max_retries + 1,
          last_error: facts.last_error,
        });
      } else {
        reasons.push({ reason: 'scheduled', message: `Scheduled to run at ${until}`, until });
      }
    }
    if (facts.blocked) {
      const deps = await jobDependencies(s.store, org, id);
      const waiting = deps.filter((d) => d.status !== 'completed');
      reasons.push({
        reason: 'waiting_for_dependencies',
        message: `Waiting for ${waiting.length} of ${deps.length} parent job(s) to complete`,
        dependencies: deps.map((d) => ({ name: d.name, job_id: d.job_id, status: d.status })),
      });
    }
    const claimable = facts.status === 'pending' && !facts.blocked;
    if (claimable && facts.concurrency_key !== null && facts.concurrency_per_key !== null && facts.key_holders.length >= facts.concurrency_per_key) {
      reasons.push({
        reason: 'key_at_concurrency_limit',
        message: `Key '${facts.concurrency_key}' already has ${facts.key_holders.length} job(s) processing (limit ${facts.concurrency_per_key})`,
        concurrency_key: facts.concurrency_key,
        limit: facts.concurrency_per_key,
        holders: facts.key_holders,
      });
    }
    if (claimable && facts.max_concurrency !== null && facts.processing >= facts.max_concurrency) {
      reasons.push({
        reason: 'queue_at_max_concurrency',
        message: `The queue has ${facts.processing} job(s) processing (max_concurrency ${facts.max_concurrency})`,
        limit: facts.max_concurrency,
        processing: facts.processing,
      });
    }
    if (claimable && facts.rate_limit !== null && facts.rate_next_slot !== null) {
      reasons.push({
        reason: 'queue_rate_limited',
        message: `The queue handed out ${facts.rate_limit.jobs} job(s) in the last ${facts.rate_limit.per_seconds} s; the next slot is at ${isoOf(facts.rate_next_slot)}`,
        rate_limit: facts.rate_limit,
        next_slot: isoOf(facts.rate_next_slot),
      });
    }
    if (claimable && facts.ahead > 0) {
      reasons.push({
        reason: 'behind_other_jobs',
        message: `${facts.ahead} claimable job(s) of higher or equal priority come first`,
        count: facts.ahead,
        priority: facts.priority,
      });
    }
    const lastClaim = facts.last_claim_at ?? facts.loaded_at;
    const idle = Math.floor((now - lastClaim) / 1000);
    if (claimable && !facts.paused && idle >= IDLE_QUEUE_SECS) {
      const workers = await queueWorkers(s.store, org, queue, 20);
      reasons.push({
        reason: 'no_recent_claims',
        message: facts.last_claim_at === null
          ? `No worker has claimed from '${queue}' for ${idle} s (none since the queue was loaded)`
          : `No worker has claimed from '${queue}' for ${idle} s`,
        seconds: idle,
        last_claim_at: isoOf(facts.last_claim_at),
        workers: workers.map((w) => ({ id: w.id, queue_name: w.queue_name, last_heartbeat_at: isoOf(w.last_heartbeat_at) })),
      });
    }
  }
  const limit = usage.limits.active_jobs;
  if (status !== 'processing' && limit !== null && usage.active_jobs >= limit) {
    reasons.push({
      reason: 'organization_active_jobs_quota',
      message: `The organization has ${usage.active_jobs} active job(s), its plan's limit (${limit}): new and retried jobs are refused`,
      current: usage.active_jobs,
      limit,
      plan: usage.plan.tier,
    });
  }
  return { id, queue_name: queue, status, running: status === 'processing', reasons, at: isoOf(now) };
}
