// Workers (SPEC Workers): register (an upsert on a given id), heartbeat, deregister, list, get — for REST and gRPC
// alike. Workers are not an actor's: their rows are written here, straight to the store.
//
// A registered row occupies a slot of the 'workers' quota (SPEC Limits rule 4: the cap counts rows, not live
// processes) until it is deregistered or the stale-worker reaper (worker-reaper.ts) removes it. Registration
// with an id the organization holds refreshes that row and is not charged; another organization's id is 409
// WORKER_ID_TAKEN; a new id reserves a slot, then inserts with ON CONFLICT DO NOTHING, and a registration that
// lost an insert race gives its slot back and registers again (now a refresh or a 409). Registrations of one id
// on this node run one after the other, so 50 concurrent registrations of a new id make one row and one charge
// and none of them is refused for want of a slot the winner already holds.
import { randomUUID } from 'node:crypto';
import Type from 'typebox';
import { AppError, notFound, validationError } from '../errors.js';
import { deleteWorker } from '../io/db/sql/deleteWorker.js';
import { getWorker, type WorkerFields, type WorkerRow } from '../io/db/sql/getWorker.js';
import { heartbeatWorker } from '../io/db/sql/heartbeatWorker.js';
import { insertWorker } from '../io/db/sql/insertWorker.js';
import { listWorkers } from '../io/db/sql/listWorkers.js';
import { refreshWorker } from '../io/db/sql/refreshWorker.js';
import { validator, type Valid } from '../io/validate.js';
import type { AppContext } from './context.js';
import { JsonObject, QueueName, WORKER_ID_PATTERN, WorkerId } from './fields.js';

/** Metadata is the worker's own description of itself (version, region…), not a payload: a few KB at most. */
export const MAX_METADATA_BYTES = 16 * 1024;
/** Attempts of a registration that keeps losing insert races to deregistrations of the same id. */
const REGISTER_ATTEMPTS = 3;

export const RegisterBody = validator(
  Type.Object({
    worker_id: Type.Optional(WorkerId),
    queue_name: Type.Optional(Type.Union([QueueName, Type.Null()])),
    hostname: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()])),
    max_concurrency: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 10_000 }), Type.Null()])),
    metadata: Type.Optional(JsonObject),
    version: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()], { description: "the worker's own version" })),
  }),
);
export type RegisterRequest = Valid<typeof RegisterBody>;

/**
 * What a worker is told of its timing with every answer (clients written for the hosted service schedule their
 * heartbeats and leases from it): heartbeat at least every `heartbeat_interval_secs` (a quarter of the reaper's
 * WORKER_STALE_SECONDS, so three heartbeats may be lost before it is reaped); a claim that names no
 * lease_duration_secs gets the job's timeout, DEFAULT_TIMEOUT_SECONDS unless the job or its queue says otherwise.
 */
export interface WorkerTiming {
  lease_duration_secs: number;
  heartbeat_interval_secs: number;
  /** A worker whose last heartbeat is older than this is unhealthy (the dashboard): two intervals missed. */
  healthy_within_secs: number;
}

/** The worker's row, and whether this registration created it (false: an existing row refreshed). */
export interface Registered {
  created: boolean;
  worker: WorkerRow;
}

/** One per node: registrations of one id run one after the other across both APIs. */
export class Workers {
  /** The registration in flight per worker id on this node: the next one of the same id waits for it. */
  private readonly inFlight = new Map<string, Promise<unknown>>();

  readonly timing: WorkerTiming;

  constructor(private readonly c: AppContext) {
    const interval = Math.max(1, Math.floor(c.config.workerStaleSeconds / 4));
    this.timing = { lease_duration_secs: c.config.defaultTimeoutSeconds, heartbeat_interval_secs: interval, healthy_within_secs: 2 * interval };
  }

  async register(org: string, r: RegisterRequest): Promise<Registered> {
    const { worker_id, ...fields } = r;
    if (fields.metadata !== undefined && Buffer.byteLength(JSON.stringify(fields.metadata)) > MAX_METADATA_BYTES) {
      throw validationError([{ field: 'metadata', message: `must be at most ${MAX_METADATA_BYTES} bytes of JSON` }]);
    }
    if (worker_id !== undefined) return this.serially(worker_id, () => this.registerId(org, worker_id, fields));
    const worker = await this.create(org, randomUUID(), fields);
    // A fresh UUID cannot already exist.
    if (!worker) throw new AppError('UNAVAILABLE', 'Could not register the worker; retry');
    return { created: true, worker };
  }

  /** Keeps the worker from the reaper: its row with the new last_heartbeat_at, or 404 (reaped, deregistered). */
  async heartbeat(org: string, id: string): Promise<WorkerRow> {
    const row = WORKER_ID_PATTERN.test(id) ? await heartbeatWorker(this.c.store, org, id, new Date(this.c.clock.now())) : null;
    if (!row) throw notFound('Worker');
    return row;
  }

  /** Deletes the row and frees its slot at once: the row as it was. */
  async deregister(org: string, id: string): Promise<WorkerRow> {
    const row = WORKER_ID_PATTERN.test(id) ? await deleteWorker(this.c.store, org, id) : null;
    if (!row) throw notFound('Worker');
    this.c.quotas.release(org, 'workers');
    this.c.events.publish(org, 'worker.deregistered', { worker_id: row.id, reason: 'deregistered' });
    return row;
  }

  /** A page of workers by id, strictly after `after`; one row more than `limit` says there is a next page. */
  list(org: string, after: string | null, limit: number): Promise<WorkerRow[]> {
    return listWorkers(this.c.store, org, after, limit);
  }

  async get(org: string, id: string): Promise<WorkerRow> {
    const row = WORKER_ID_PATTERN.test(id) ? await getWorker(this.c.store, org, id) : null;
    if (!row) throw notFound('Worker');
    return row;
  }

  private async registerId(org: string, id: string, fields: WorkerFields): Promise<Registered> {
    for (let attempt = 0; attempt < REGISTER_ATTEMPTS; attempt++) {
      const found = await refreshWorker(this.c.store, org, id, fields, new Date(this.c.clock.now()));
      if ('row' in found) return { created: false, worker: found.row };
      if (found.owner !== null) throw new AppError('WORKER_ID_TAKEN', 'This worker id is registered by another organization');
      const worker = await this.create(org, id, fields);
      if (worker) return { created: true, worker };
    }
    throw new AppError('UNAVAILABLE', 'The worker id kept changing hands while registering; retry');
  }

  /** Reserves a slot and inserts; null when the id was taken meanwhile (the slot is given back). */
  private async create(org: string, id: string, fields: WorkerFields): Promise<WorkerRow | null> {
    await this.c.quotas.reserve(org, 'workers');
    let row: WorkerRow | null;
    try {
      row = await insertWorker(this.c.store, org, id, fields, new Date(this.c.clock.now()));
    } catch (err) {
      this.c.quotas.release(org, 'workers');
      throw err;
    }
    if (!row) {
      this.c.quotas.release(org, 'workers');
      return null;
    }
    this.c.events.publish(org, 'worker.registered', { worker_id: row.id, queue_name: row.queue_name, hostname: row.hostname });
    return row;
  }

  private serially<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.inFlight.get(id) ?? Promise.resolve()).catch(() => {}).then(fn);
    this.inFlight.set(id, run);
    const forget = () => {
      if (this.inFlight.get(id) === run) this.inFlight.delete(id);
    };
    run.then(forget, forget);
    return run;
  }
}
