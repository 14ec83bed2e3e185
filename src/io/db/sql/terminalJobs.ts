// terminalJobs — what reviving a job needs from rows the queue actors no longer hold: dead-lettered or
// cancelled jobs of one organization, by ids or by queue (oldest first, up to a limit). Finished statuses only:
// the query carries their index's predicate (jobs_done_status, jobs_done_queue; ../jobHalves.ts).
import type { ReviveInput } from '../../../actors/queue/queue-actor.js';
import type { Store } from '../store.js';
import { DONE } from '../jobHalves.js';

export type TerminalJob = ReviveInput & { queue_name: string; status: string };

export async function terminalJobs(
  store: Store,
  organizationId: string,
  /** `standalone`: leave out workflow jobs (they are retried with their workflow). */
  filter: { ids?: string[]; queue?: string; statuses: Array<'deadletter' | 'cancelled'>; limit?: number; standalone?: boolean },
): Promise<TerminalJob[]> {
  return store.query<TerminalJob>(
    `SELECT id, queue_name, status, priority, max_retries, timeout_seconds, last_error, idempotency_key,
            completion_webhook IS NOT NULL AS callback, workflow_id, concurrency_key
       FROM jobs
      WHERE organization_id = $1 AND status = ANY ($2::text[]) AND ${DONE}
        AND ($3::uuid[] IS NULL OR id = ANY ($3::uuid[]))
        AND ($4::text IS NULL OR queue_name = $4)
        AND (NOT $6::boolean OR workflow_id IS NULL)
      ORDER BY created_at, id
      LIMIT $5`,
    [organizationId, filter.statuses, filter.ids ?? null, filter.queue ?? null, filter.limit ?? 1000, filter.standalone ?? false],
  );
}
