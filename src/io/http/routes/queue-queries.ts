// The read side of queues: the list, one queue's record, and its stats. Queue rows are written by their
// actors (commit before reply), so reading them from the store never shows less than was acknowledged.
import Type from 'typebox';
import { notFound } from '../../../errors.js';
import { jobStats, queueCounts, type StatusCounts } from '../../db/sql/jobStats.js';
import { getQueue, listQueues, type QueueRow } from '../../db/sql/listQueues.js';
import { queueStats } from '../../db/sql/queueStats.js';
import { cursorCodec, pageResponse, parseLimit, readCursor } from '../cursor.js';
import { isoOf } from '../present.js';
import type { Request, Response, Route } from '../router.js';
import { Queue, QueueStats } from '../schemas.js';
import { QUEUE_NAME_PATTERN } from './jobs.js';
import type { Services } from './services.js';

/** The pattern of the write routes' QueueName, so a name valid there is valid here. */
export const queueNameValid = (name: string): boolean => QUEUE_NAME_PATTERN.test(name);

/** Keyset over the name, ascending (byte order). */
const QUEUES_CURSOR = cursorCodec('queues', ['text']);

/** The throughput window of queue stats. */
export const THROUGHPUT_WINDOW_MS = 60_000;

/** The queue record of the API. */
export function presentQueue(row: QueueRow, counts: StatusCounts): Record<string, unknown> {
  return {
    name: row.name,
    paused: row.paused,
    paused_reason: row.paused_reason ?? null,
    config: { max_retries: row.max_retries ?? null, lease_duration_secs: row.lease_duration_secs ?? null },
    counts,
    created_at: isoOf(row.created_at),
    updated_at: isoOf(row.updated_at),
  };
}

/** The statistics of an organization's queue (REST stats and gRPC GetQueueStats), or 404. */
export async function queueStatsOf(s: Services, org: string, name: string): Promise<Record<string, unknown>> {
  const row = queueNameValid(name) ? await getQueue(s.store, org, name) : null;
  if (!row) throw notFound('Queue');
  const now = s.clock.now();
  const [counts, times] = await Promise.all([
    jobStats(s.store, org, row.name),
    queueStats(s.store, org, row.name, new Date(now), THROUGHPUT_WINDOW_MS),
  ]);
  const oldest = times.oldest_pending === null ? null : new Date(times.oldest_pending).getTime();
  return {
    name: row.name,
    paused: row.paused,
    ...counts,
    // Whole seconds; a job due "in the future" by clock skew counts as waiting 0 s, never negative.
    oldest_pending_age_seconds: oldest === null ? null : Math.max(0, Math.floor((now - oldest) / 1000)),
    throughput_last_minute: { completed: times.completed, failed: times.failed },
  };
}

export function queueQueryRoutes(s: Services): Route[] {
  /** The queue named in the path, or 404: an invalid name cannot name a queue. */
  const queueOf = async (req: Request): Promise<QueueRow> => {
    const name = req.params.name!;
    const row = queueNameValid(name) ? await getQueue(s.store, req.principal.organizationId, name) : null;
    if (!row) throw notFound('Queue');
    return row;
  };

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, QUEUES_CURSOR);
    const org = req.principal.organizationId;
    const rows = await listQueues(s.store, org, after?.[0] ?? null, limit);
    const counts = await queueCounts(s.store, org, rows.slice(0, limit).map((r) => r.name));
    return pageResponse(req, rows, limit, QUEUES_CURSOR, (r) => [r.name], (r) => presentQueue(r, counts.get(r.name)!));
  };

  const get = async (req: Request): Promise<Response> => {
    const row = await queueOf(req);
    const counts = await jobStats(s.store, req.principal.organizationId, row.name);
    return { status: 200, body: presentQueue(row, counts) };
  };

  const stats = async (req: Request): Promise<Response> => ({
    status: 200,
    body: await queueStatsOf(s, req.principal.organizationId, req.params.name!),
  });

  return [
    {
      method: 'GET',
      path: '/api/v1/queues',
      permission: 'queues:read',
      handler: list,
      doc: {
        operationId: 'listQueues',
        summary: "List the organization's queues by name, a page at a time",
        query: {
          limit: { schema: Type.Integer({ minimum: 1, maximum: 100, default: 20 }), description: 'page size' },
          cursor: { schema: Type.String(), description: 'X-Next-Cursor of the previous page (opaque)' },
        },
        responses: {
          200: {
            description: 'A page of queue records',
            schema: Type.Array(Queue),
            headers: { 'X-Next-Cursor': 'absent on the last page', Link: '<…&cursor={next}>; rel="next"; absent on the last page' },
          },
        },
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
