// Worker routes (REST adapter): register, list, get, heartbeat, deregister. The operations are src/app/workers.ts;
// here: the OpenAPI doc and presentation.
import Type, { type TSchema } from 'typebox';
import type { App } from '../../../app/app.js';
import { RegisterBody } from '../../../app/workers.js';
import { cursorCodec, pageResponse, parseLimit, readCursor, pagedDoc } from '../cursor.js';
import { presentWorker } from '../../present.js';
import type { WorkerRow } from '../../db/sql/getWorker.js';
import type { Request, Response, Route } from '../router.js';
import { JsonObject } from '../schemas.js';

const WORKERS_CURSOR = cursorCodec('workers', ['text']);

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
export const Worker = Type.Object({
  id: Type.String({ description: 'the same as worker_id' }),
  worker_id: Type.String(),
  queue_name: Nullable(Type.String()),
  hostname: Nullable(Type.String()),
  max_concurrency: Nullable(Type.Integer()),
  metadata: JsonObject,
  version: Nullable(Type.String({ description: "the worker's own version, as it registered" })),
  registered_at: Type.String({ format: 'date-time' }),
  last_heartbeat_at: Type.String({ format: 'date-time' }),
  last_heartbeat: Type.String({ format: 'date-time', description: 'the same as last_heartbeat_at' }),
  lease_duration_secs: Type.Integer({ description: 'the lease a claim gets when it names none and neither the job nor its queue sets one (DEFAULT_TIMEOUT_SECONDS)' }),
  heartbeat_interval_secs: Type.Integer({ description: 'heartbeat at least this often: a quarter of the time after which a silent worker is reaped' }),
  status: Type.Union([Type.Literal('active'), Type.Literal('deregistered')], {
    description: 'active: a worker exists until it is deregistered or reaped as stale; deregistered: the answer of deregister',
  }),
}, { $id: 'Worker' });

export function workerRoutes(app: App): Route[] {
  const { workers } = app;
  const org = (req: Request) => req.principal.organizationId;
  const present = (row: WorkerRow) => presentWorker(row, workers.timing);

  const register = async (req: Request): Promise<Response> => {
    const { created, worker } = await workers.register(org(req), RegisterBody(req.body));
    return { status: created ? 201 : 200, body: present(worker) };
  };

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, WORKERS_CURSOR);
    const rows = await workers.list(org(req), after?.[0] ?? null, limit);
    return pageResponse(req, rows, limit, WORKERS_CURSOR, (r) => [r.id], present);
  };

  const get = async (req: Request): Promise<Response> => ({ status: 200, body: present(await workers.get(org(req), req.params.id!)) });

  const heartbeat = async (req: Request): Promise<Response> => ({
    status: 200,
    body: present(await workers.heartbeat(org(req), req.params.id!)),
  });

  const deregister = async (req: Request): Promise<Response> => {
    const row = await workers.deregister(org(req), req.params.id!);
    return { status: 200, body: { ...present(row), status: 'deregistered' } };
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
          'refreshed (200; fields sent replace the stored ones; not charged); an id of another organization is 409; a new one is 201. ' +
          'The answer repeats the id as `id` and gives the heartbeat interval and default lease to schedule by (docs/workers.md).',
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
        ...pagedDoc('A page of workers', Worker),
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
