// The read side of queues (REST adapter): the list, one queue's record, and its stats (src/app/queues.ts).
import type { App } from '../../../app/app.js';
import type { StatusCounts } from '../../db/sql/jobStats.js';
import type { QueueRow } from '../../db/sql/listQueues.js';
import { cursorCodec, pageResponse, parseLimit, readCursor, pagedDoc } from '../cursor.js';
import { isoOf } from '../../present.js';
import type { Request, Response, Route } from '../router.js';
import { Queue, QueueStats } from '../schemas.js';

/** Keyset over the name, ascending (byte order). */
const QUEUES_CURSOR = cursorCodec('queues', ['text']);


/** The queue record of the API (`queue_name` repeats `name`: clients of the hosted service read it). */
export function presentQueue(row: QueueRow, counts: StatusCounts): Record<string, unknown> {
  return {
    name: row.name,
    queue_name: row.name,
    paused: row.paused,
    paused_reason: row.paused_reason ?? null,
    paused_at: isoOf(row.paused_at),
    config: {
      max_retries: row.max_retries ?? null,
      lease_duration_secs: row.lease_duration_secs ?? null,
      concurrency_per_key: row.concurrency_per_key ?? null,
      max_concurrency: row.max_concurrency ?? null,
      rate_limit: row.rate_limit_jobs != null ? { jobs: row.rate_limit_jobs, per_seconds: row.rate_limit_per_seconds } : null,
    },
    counts,
    created_at: isoOf(row.created_at),
    updated_at: isoOf(row.updated_at),
  };
}

export function queueQueryRoutes(app: App): Route[] {
  const org = (req: Request) => req.principal.organizationId;

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, QUEUES_CURSOR);
    const page = await app.queues.list(org(req), after?.[0] ?? null, limit);
    return pageResponse(req, page, limit, QUEUES_CURSOR, (q) => [q.row.name], (q) => presentQueue(q.row, q.counts));
  };

  const get = async (req: Request): Promise<Response> => {
    const { row, counts } = await app.queues.get(org(req), req.params.name!);
    return { status: 200, body: presentQueue(row, counts) };
  };

  const stats = async (req: Request): Promise<Response> => ({ status: 200, body: await app.queues.stats(org(req), req.params.name!) });

  return [
    {
      method: 'GET',
      path: '/api/v1/queues',
      permission: 'queues:read',
      handler: list,
      doc: {
        operationId: 'listQueues',
        summary: "List the organization's queues by name, a page at a time",
        ...pagedDoc('A page of queue records', Queue),
      },
    },
    {
      method: 'GET',
      path: '/api/v1/queues/:name',
      permission: 'queues:read',
      handler: get,
      doc: { operationId: 'getQueue', summary: 'A queue: state, configuration, job counts', responses: { 200: { description: 'The queue record', schema: Queue } } },
    },
    {
      method: 'GET',
      path: '/api/v1/queues/:name/stats',
      permission: 'queues:read',
      handler: stats,
      doc: {
        operationId: 'getQueueStats',
        summary: 'Queue statistics: counts, oldest pending age, throughput over the last minute',
        responses: { 200: { description: 'The statistics', schema: QueueStats } },
      },
    },
  ];
}
