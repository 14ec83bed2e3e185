// Worker routes (SPEC Workers): register (an upsert on a given id), list, get, heartbeat, deregister.
//
// A registered row occupies a slot of the 'workers' quota (SPEC Limits rule 4: the cap counts rows, not live
// processes) until it is deregistered or the stale-worker reaper (src/runtime/worker-reaper.ts) removes it.
// Registration with an id the organization holds refreshes that row and is not charged; another
// organization's id is 409; a new id reserves a slot, then inserts with ON CONFLICT DO NOTHING, and a
// registration that lost an insert race gives its slot back and registers again (now a refresh or a 409).
// Registrations of one id on this node run one after the other, so 50 concurrent registrations of a new id
// make one row and one charge and none of them is refused for want of a slot the winner already holds.
import { randomUUID } from 'node:crypto';
import Type, { type TSchema } from 'typebox';
import { AppError, notFound, validationError } from '../../../errors.js';
import { deleteWorker } from '../../db/sql/deleteWorker.js';
import { heartbeatWorker } from '../../db/sql/heartbeatWorker.js';
import { insertWorker } from '../../db/sql/insertWorker.js';
import { getWorker, listWorkers, type WorkerFields, type WorkerRow } from '../../db/sql/listWorkers.js';
import { refreshWorker } from '../../db/sql/refreshWorker.js';
import { cursorCodec, pageResponse, parseLimit, readCursor } from '../cursor.js';
import { isoOf } from '../../present.js';
import type { Request, Response, Route } from '../router.js';
import { JsonObject } from '../schemas.js';
import { validator } from '../../validate.js';
import { QueueName, WorkerId } from '../../../app/fields.js';
import type { Services } from './services.js';

const WORKER_ID = /^[A-Za-z0-9._-]{1,128}$/;
/** Metadata is the worker's own description of itself (version, region…), not a payload: a few KB at most. */
export const MAX_METADATA_BYTES = 16 * 1024;
/** Attempts of a registration that keeps losing insert races to deregistrations of the same id. */
const REGISTER_ATTEMPTS = 3;

const RegisterBody = validator(
  Type.Object({
    worker_id: Type.Optional(WorkerId),
    queue_name: Type.Optional(Type.Union([QueueName, Type.Null()])),
    hostname: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()])),
    max_concurrency: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 10_000 }), Type.Null()])),
    metadata: Type.Optional(JsonObject),
  }),
);

const WORKERS_CURSOR = cursorCodec('workers', ['text']);

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
export const Worker = Type.Object({
  worker_id: Type.String(),
  queue_name: Nullable(Type.String()),
  hostname: Nullable(Type.String()),
  max_concurrency: Nullable(Type.Integer()),
  metadata: JsonObject,
  registered_at: Type.String({ format: 'date-time' }),
  last_heartbeat_at: Type.String({ format: 'date-time' }),
  status: Type.Union([Type.Literal('active'), Type.Literal('deregistered')], {
    description: 'active: a worker exists until it is deregistered or reaped as stale; deregistered: the answer of deregister',
  }),
}, { $id: 'Worker' });

export function presentWorker(row: WorkerRow): Record<string, unknown> {
  return {
    worker_id: row.id,
    queue_name: row.queue_name,
    hostname: row.hostname,
    max_concurrency: row.max_concurrency,
    metadata: row.metadata,
    registered_at: isoOf(row.registered_at),
    last_heartbeat_at: isoOf(row.last_heartbeat_at),
    status: 'active',
  };
}

/** Register, heartbeat and deregister: one copy shared by the REST routes and gRPC WorkerService. */
export interface WorkerOps {
  /** The register body (REST shape); 201 for a new row, 200 for a refreshed one. */
  register(org: string, body: unknown): Promise<Response>;
  heartbeat(org: string, id: string): Promise<WorkerRow>;
  deregister(org: string, id: string): Promise<WorkerRow>;
}

/** One per node: registrations of one id run one after the other across both APIs. */
export function workerOps(s: Services): WorkerOps {
  /** The registration in flight per worker id on this node: the next one of the same id waits for it. */
  const inFlight = new Map<string, Promise<unknown>>();
  const serially = <T>(id: string, fn: () => Promise<T>): Promise<T> => {
    const run = (inFlight.get(id) ?? Promise.resolve()).catch(() => {}).then(fn);
    inFlight.set(id, run);
    const forget = () => {
      if (inFlight.get(id) === run) inFlight.delete(id);
    };
    run.then(forget, forget);
    return run;
  };

  /** Reserves a slot and inserts; null when the id was taken meanwhile (the slot is given back). */
  const create = async (org: string, id: string, fields: WorkerFields): Promise<WorkerRow | null> => {
    await s.quotas.reserve(org, 'workers');
    let row: WorkerRow | null;
    try {
      row = await insertWorker(s.store, org, id, fields, new Date(s.clock.now()));
    } catch (err) {
      s.quotas.release(org, 'workers');
      throw err;
    }
    if (!row) {
      s.quotas.release(org, 'workers');
      return null;
    }
    s.events.publish(org, 'worker.registered', { worker_id: row.id, queue_name: row.queue_name, hostname: row.hostname });
    return row;
  };

  const registerId = async (org: string, id: string, fields: WorkerFields): Promise<Response> => {
    for (let attempt = 0; attempt < REGISTER_ATTEMPTS; attempt++) {
      const found = await refreshWorker(s.store, org, id, fields, new Date(s.clock.now()));
      if ('row' in found) return { status: 200, body: presentWorker(found.row) };
      if (found.owner !== null) throw new AppError('WORKER_ID_TAKEN', 'This worker id is registered by another organization');
      const row = await create(org, id, fields);
      if (row) return { status: 201, body: presentWorker(row) };
    }
    throw new AppError('UNAVAILABLE', 'The worker id kept changing hands while registering; retry');
  };

  return {
    register: async (org, raw) => {
      const { worker_id, ...fields } = RegisterBody(raw);
      if (fields.metadata !== undefined && Buffer.byteLength(JSON.stringify(fields.metadata)) > MAX_METADATA_BYTES) {
        throw validationError([{ field: 'metadata', message: `must be at most ${MAX_METADATA_BYTES} bytes of JSON` }]);
      }
      if (worker_id !== undefined) return serially(worker_id, () => registerId(org, worker_id, fields));
      const row = await create(org, randomUUID(), fields);
      // A fresh UUID cannot already exist.
      if (!row) throw new AppError('UNAVAILABLE', 'Could not register the worker; retry');
      return { status: 201, body: presentWorker(row) };
    },
    heartbeat: async (org, id) => {
      const row = WORKER_ID.test(id) ? await heartbeatWorker(s.store, org, id, new Date(s.clock.now())) : null;
      if (!row) throw notFound('Worker');
      return row;
    },
    deregister: async (org, id) => {
      const row = WORKER_ID.test(id) ? await deleteWorker(s.store, org, id) : null;
      if (!row) throw notFound('Worker');
      s.quotas.release(org, 'workers');
      s.events.publish(org, 'worker.deregistered', { worker_id: row.id, reason: 'deregistered' });
      return row;
    },
  };
}

export function workerRoutes(s: Services, ops: WorkerOps = workerOps(s)): Route[] {
  const register = (req: Request): Promise<Response> => ops.register(req.principal.organizationId, req.body);

  /** The path id, or 404 for one that no worker can have. */
  const idOf = (req: Request): string => {
    const id = req.params.id!;
    if (!WORKER_ID.test(id)) throw notFound('Worker');
    return id;
  };

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, WORKERS_CURSOR);
    const rows = await listWorkers(s.store, req.principal.organizationId, after?.[0] ?? null, limit);
    return pageResponse(req, rows, limit, WORKERS_CURSOR, (r) => [r.id], presentWorker);
  };

  const get = async (req: Request): Promise<Response> => {
    const row = await getWorker(s.store, req.principal.organizationId, idOf(req));
    if (!row) throw notFound('Worker');
    return { status: 200, body: presentWorker(row) };
  };

  const heartbeat = async (req: Request): Promise<Response> => ({
    status: 200,
    body: presentWorker(await ops.heartbeat(req.principal.organizationId, idOf(req))),
  });

  const deregister = async (req: Request): Promise<Response> => {
    const row = await ops.deregister(req.principal.organizationId, idOf(req));
    return { status: 200, body: { ...presentWorker(row), status: 'deregistered' } };
  };

  const page = {
    limit: { schema: Type.Integer({ minimum: 1, maximum: 100, default: 20 }), description: 'page size' },
    cursor: { schema: Type.String(), description: 'X-Next-Cursor of the previous page (opaque)' },
  };
  return [
    {
      method: 'POST',
      path: '/api/v1/workers/register',
      permission: 'jobs:write',
      handler: register,
      doc: {
        operationId: 'registerWorker',
        summary: 'Register a worker (quota workers)',
        description:
          'worker_id: 1–128 characters of A-Z a-z 0-9 . _ -; omitted: a UUID is minted. An id the organization already holds is ' +
          'refreshed (200; fields sent replace the stored ones; not charged); an id of another organization is 409; a new one is 201.',
        body: RegisterBody.schema,
        responses: {
          201: { description: 'Registered', schema: Worker },
          200: { description: 'Re-registered: the existing row, refreshed', schema: Worker },
        },
        errors: ['WORKER_ID_TAKEN', 'QUOTA_EXCEEDED'],
      },
    },
    {
      method: 'GET',
      path: '/api/v1/workers',
      permission: 'jobs:read',
      handler: list,
      doc: {
        operationId: 'listWorkers',
        summary: "List the organization's registered workers by id, a page at a time",
        query: page,
        responses: {
          200: {
            description: 'A page of workers',
            schema: Type.Array(Worker),
            headers: { 'X-Next-Cursor': 'absent on the last page', Link: '<…&cursor={next}>; rel="next"; absent on the last page' },
          },
        },
      },
    },
    { method: 'GET', path: '/api/v1/workers/:id', permission: 'jobs:read', handler: get, doc: { operationId: 'getWorker', summary: 'Get a worker', responses: { 200: { description: 'The worker', schema: Worker } } } },
    {
      method: 'POST',
      path: '/api/v1/workers/:id/heartbeat',
      permission: 'jobs:write',
      handler: heartbeat,
      doc: {
        operationId: 'heartbeatWorker',
        summary: 'Worker heartbeat: keeps the worker from the stale-worker reaper',
        description: 'Any body is ignored. A worker already reaped or deregistered is 404: register again.',
        responses: { 200: { description: 'The worker', schema: Worker } },
      },
    },
    {
      method: 'POST',
      path: '/api/v1/workers/:id/deregister',
      permission: 'jobs:write',
      handler: deregister,
      doc: {
        operationId: 'deregisterWorker',
        summary: 'Deregister a worker: its row is deleted and its quota slot freed at once',
        responses: { 200: { description: 'The worker as it was, with status "deregistered"', schema: Worker } },
      },
    },
  ];
}
