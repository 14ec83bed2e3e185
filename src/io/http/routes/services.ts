// What route handlers are given: the actor pool, the store (reads), configuration and job routing, plus the
// operations several resources share.
import type { ReviveOutcome } from '../../../actors/queue/queue-actor.js';
import type { JobStatus } from '../../../actors/records.js';
import type { Clock } from '../../../clock.js';
import type { Config } from '../../../config.js';
import type { ActorPool } from '../../../runtime/actor-pool.js';
import type { JobPlaces } from '../../../runtime/job-places.js';
import type { Quotas } from '../../../runtime/quotas.js';
import type { EventBus } from '../../../runtime/event-bus.js';
import type { TerminalJob } from '../../db/sql/terminalJobs.js';
import type { Mailer } from '../../mail/mailer.js';
import type { Authenticator } from '../auth.js';
import type { Store } from '../../db/store.js';
import type { InvalidationChannel } from '../../db/invalidations.js';

export interface Services {
  config: Config;
  /** The node's clock: windows and ages computed by reads agree with the actors' time. */
  clock: Clock;
  pool: ActorPool;
  store: Store;
  places: JobPlaces;
  /** Credentials: key lookups, JWTs, revocation (the key and token routes change what it caches). */
  auth: Authenticator;
  mailer: Mailer;
  quotas: Quotas;
  /** Public events of every organization, after commit: streams and outgoing webhooks listen here. */
  events: EventBus;
  /** Tells every node of a committed change to what they cache (keys, tokens, plans). */
  invalidations: InvalidationChannel;
}

/** Revives terminal jobs of one queue through its actor (job retry and DLQ retry); each counts as a creation. */
export async function reviveJobs(
  s: Services,
  organizationId: string,
  queue: string,
  jobs: TerminalJob[],
  from: JobStatus[],
): Promise<ReviveOutcome[]> {
  const admission = await s.quotas.admitJobs(organizationId, jobs.map(() => 0));
  const outcomes = await s.pool
    .ask<ReviveOutcome[]>(organizationId, queue, 'revive', {
    jobs: jobs.map(({ id, priority, max_retries, timeout_seconds, last_error, idempotency_key, callback, workflow_id, blocked }) => ({
      id,
      priority,
      max_retries,
      timeout_seconds,
      last_error,
      idempotency_key,
      callback,
      workflow_id,
      blocked,
    })),
      from,
    })
    .catch((err) => {
      s.quotas.releaseJobs(organizationId, admission, jobs.length);
      throw err;
    });
  s.quotas.releaseJobs(organizationId, admission, outcomes.filter((o) => !o.revived).length);
  for (const o of outcomes) if (o.revived) s.places.remember(organizationId, o.id, queue);
  return outcomes;
}
