// What route handlers are given: the actor pool, the store (reads), configuration and job routing, plus the
// operations several resources share.
import type { ReviveOutcome } from '../../../actors/queue/queue-actor.js';
import type { JobStatus } from '../../../actors/records.js';
import type { Clock } from '../../../clock.js';
import type { Config } from '../../../config.js';
import type { ActorPool } from '../../../runtime/actor-pool.js';
import type { JobPlaces } from '../../../runtime/job-places.js';
import type { TerminalJob } from '../../db/sql/terminalJobs.js';
import type { Store } from '../../db/store.js';

export interface Services {
  config: Config;
  /** The node's clock: windows and ages computed by reads agree with the actors' time. */
  clock: Clock;
  pool: ActorPool;
  store: Store;
  places: JobPlaces;
}

/** Revives terminal jobs of one queue through its actor (job retry and DLQ retry). */
export async function reviveJobs(
  s: Services,
  organizationId: string,
  queue: string,
  jobs: TerminalJob[],
  from: JobStatus[],
): Promise<ReviveOutcome[]> {
  const outcomes = await s.pool.ask<ReviveOutcome[]>(organizationId, queue, 'revive', {
    jobs: jobs.map(({ id, priority, max_retries, timeout_seconds, last_error, idempotency_key }) => ({
      id,
      priority,
      max_retries,
      timeout_seconds,
      last_error,
      idempotency_key,
    })),
    from,
  });
  for (const o of outcomes) if (o.revived) s.places.remember(organizationId, o.id, queue);
  return outcomes;
}
