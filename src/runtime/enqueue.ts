// Enqueue of one admitted job: the one path by which a job is created on the main thread (POST /jobs, bulk, and
// the scheduler), so idempotency, quota release and job routing behave the same wherever a job comes from.
import type { EnqueueInput, EnqueueReply } from '../actors/queue/queue-actor.js';
import { AppError } from '../errors.js';
import { getJobByKey } from '../io/db/sql/getJob.js';
import type { Row, Store } from '../io/db/store.js';
import type { ActorPool } from './actor-pool.js';
import type { JobPlaces } from './job-places.js';
import type { Admission, Quotas } from './quotas.js';

export interface EnqueueDeps {
  pool: ActorPool;
  quotas: Quotas;
  places: JobPlaces;
  store: Store;
}

/** The new job (its row with the payload), or the existing job holding the idempotency key. */
export type Enqueued = { created: true; job: Row } | { created: false; job: Row };

/**
 * Enqueues one job admitted by quotas.admitJobs. A job that was not created (an error, or a duplicate
 * idempotency key) gives its admission back.
 */
export async function enqueueAdmitted(
  d: EnqueueDeps,
  organizationId: string,
  queue: string,
  input: EnqueueInput,
  admission: Admission,
): Promise<Enqueued> {
  let reply: EnqueueReply;
  try {
    reply = await d.pool.ask<EnqueueReply>(organizationId, queue, 'enqueue', input);
  } catch (err) {
    d.quotas.releaseJobs(organizationId, admission, 1);
    throw err;
  }
  if (reply.created) {
    d.places.remember(organizationId, reply.job.id, queue);
    return { created: true, job: { ...reply.job, payload: input.payload } };
  }
  d.quotas.releaseJobs(organizationId, admission, 1);
  const existing = await getJobByKey(d.store, organizationId, reply.idempotency_key);
  if (!existing) throw new AppError('UNAVAILABLE', 'The job holding this idempotency key could not be read; retry');
  return { created: false, job: existing };
}
