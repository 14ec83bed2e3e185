// The real-time routes (SPEC Real-time): SSE of the organization's events, of one job, of one queue's stats,
// and the WebSocket of the organization's events. Every message is the one envelope {id, event, created_at,
// data}; SSE sends it as `id:` and `data:` lines (no `event:` line, so EventSource's onmessage sees them all),
// with a keep-alive comment every 15 s. These four routes alone take the credential in the query string.
import Type from 'typebox';
import type { App } from '../../../app/app.js';
import { idOf, queueNameValid } from '../../../app/fields.js';
import { AppError, validationError } from '../../../errors.js';
import type { Envelope, Stream, StreamHub } from '../../events/hub.js';
import type { QueueStatsFeed } from '../../events/queue-stats.js';
import { presentJob } from '../../present.js';
import { single } from '../query.js';
import type { Request, Response, Route, RouteDoc, StreamSink } from '../router.js';
import type { SocketRoute } from '../server.js';

export const KEEP_ALIVE_MS = 15_000;
const MAX_EVENT_NAMES = 20;
/** `job.completed`, or every event of a family: `job.*`. */
const EVENT_NAME = /^[a-z][a-z_]*\.([a-z][a-z_]*|\*)$/;
const TERMINAL = new Set(['completed', 'deadletter', 'cancelled']);

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  // Proxies such as nginx would otherwise hold the events back.
  'x-accel-buffering': 'no',
};

const frame = (e: Envelope): string => `id: ${e.id}\ndata: ${JSON.stringify(e)}\n\n`;

export type EventFilter = (e: Envelope) => boolean;

/** `queue` (alias `queue_name`) and `events` (comma-separated names or `family.*`), or 422. */
export function eventFilter(q: URLSearchParams): EventFilter {
  const queue = single(q, 'queue', 'queue_name');
  if (queue !== null && !queueNameValid(queue)) {
    throw validationError([{ field: 'queue', message: 'must be 1 to 100 characters of A-Z a-z 0-9 . _ -, not starting with . or -' }]);
  }
  const list = single(q, 'events');
  let names: string[] | null = null;
  if (list !== null) {
    names = list.split(',').map((n) => n.trim());
    if (names.length > MAX_EVENT_NAMES || names.some((n) => !EVENT_NAME.test(n))) {
      throw validationError([{ field: 'events', message: `must be up to ${MAX_EVENT_NAMES} comma-separated event names such as job.completed or job.*` }]);
    }
  }
  const exact = new Set(names?.filter((n) => !n.endsWith('.*')));
  const families = names?.filter((n) => n.endsWith('.*')).map((n) => n.slice(0, -1)) ?? [];
  return (e) =>
    (queue === null || e.data.queue_name === queue) &&
    (names === null || exact.has(e.event) || families.some((f) => e.event.startsWith(f)));
}

/** The SSE answer of a stream slot: `start` gets the sink once headers are out; closing either side frees the slot. */
function sse(stream: Stream, start: (send: (e: Envelope) => void, sink: StreamSink) => void): Response {
  return {
    status: 200,
    headers: SSE_HEADERS,
    stream: (sink) => {
      const keepAlive = setInterval(() => sink.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
      keepAlive.unref();
      sink.onClose(() => {
        clearInterval(keepAlive);
        stream.release();
      });
      stream.endWith(() => sink.end());
      // The headers leave with the first chunk: a client sees the stream open before any event.
      sink.write(': open\n\n');
      start((e) => sink.write(frame(e)), sink);
    },
  };
}

const CREDENTIAL_QUERY: NonNullable<RouteDoc['query']> = {
  api_key: { schema: Type.String(), description: 'an API key, when the Authorization header cannot be set (EventSource, browsers)' },
  token: { schema: Type.String(), description: 'a JWT access token, when the Authorization header cannot be set' },
};
const FILTER_QUERY: NonNullable<RouteDoc['query']> = {
  queue: { schema: Type.String(), description: 'only events of this queue (alias: queue_name); events naming no queue are left out' },
  queue_name: { schema: Type.String(), description: 'alias of queue' },
  events: { schema: Type.String(), description: 'comma-separated event names, e.g. job.completed,job.failed; `job.*` for a family' },
};
/** The 200 of an SSE route: text frames, each `data:` line an EventEnvelope. */
const EVENT_STREAM = { mediaType: 'text/event-stream', schema: Type.String({ description: 'frames whose data lines hold EventEnvelope objects' }) };
const SSE_DOC = 'text/event-stream: per event an `id:` line and a `data:` line holding {id, event, created_at, data}; a `: keep-alive` comment every 15 s.';

export interface StreamParts {
  hub: StreamHub;
  stats: QueueStatsFeed;
}

export function eventRoutes(app: App, { hub, stats }: StreamParts): Route[] {
  const all = (req: Request): Response => {
    const filter = eventFilter(req.query);
    const stream = hub.open(req.principal);
    return sse(stream, (send) => stream.listen((e) => filter(e) && send(e)));
  };

  const job = async (req: Request): Promise<Response> => {
    const id = idOf('Job', req.params.id!);
    const stream = hub.open(req.principal);
    // Listening starts before the read, so nothing between the read and the stream's start is missed.
    const early: Envelope[] = [];
    let send: ((e: Envelope) => void) | null = null;
    stream.listen((e) => {
      if (e.data.job_id !== id) return;
      if (send) send(e);
      else early.push(e);
    });
    let current;
    try {
      current = await app.jobs.get(req.principal.organizationId, id);
    } catch (err) {
      stream.release();
      throw err;
    }
    return sse(stream, (write, sink) => {
      send = (e) => {
        write(e);
        // A finished job has nothing more to say (a retry of it is a new life: open a new stream).
        if (TERMINAL.has(e.data.status as string)) sink.end();
      };
      send(hub.envelope('job.status', { job_id: current.id, queue_name: current.queue_name, status: current.status, job: presentJob(current) }));
      for (const e of early) if (!sink.closed) send(e);
    });
  };

  const queue = async (req: Request): Promise<Response> => {
    const name = req.params.name!;
    const org = req.principal.organizationId;
    await app.queues.mustExist(org, name);
    const stream = hub.open(req.principal);
    return sse(stream, (send, sink) => sink.onClose(stats.watch(org, name, send)));
  };

  return [
    {
      method: 'GET',
      path: '/api/v1/events',
      permission: 'jobs:read',
      queryCredential: true,
      handler: all,
      doc: {
        operationId: 'streamEvents',
        summary: "Server-Sent Events of the organization's events (job.*, queue.*, …)",
        description: SSE_DOC,
        query: { ...FILTER_QUERY, ...CREDENTIAL_QUERY },
        responses: { 200: { description: 'An event stream until the client leaves', ...EVENT_STREAM } },
        errors: ['TOO_MANY_STREAMS'],
      },
    },
    {
      method: 'GET',
      path: '/api/v1/events/jobs/:id',
      permission: 'jobs:read',
      queryCredential: true,
      handler: job,
      doc: {
        operationId: 'streamJobEvents',
        summary: "Server-Sent Events of one job: its current status (job.status), then its events",
        description: `${SSE_DOC} The first event is job.status with data {job_id, queue_name, status, job}. The stream ends after an event (or a current status) that is completed, deadletter or cancelled.`,
        query: CREDENTIAL_QUERY,
        responses: { 200: { description: 'An event stream until the job finishes or the client leaves', ...EVENT_STREAM } },
        errors: ['TOO_MANY_STREAMS'],
      },
    },
    {
      method: 'GET',
      path: '/api/v1/events/queues/:name',
      permission: 'queues:read',
      queryCredential: true,
      handler: queue,
      doc: {
        operationId: 'streamQueueStats',
        summary: "Server-Sent Events of one queue's job counts (queue.stats)",
        description: `${SSE_DOC} queue.stats data: {queue_name, pending, scheduled, processing, completed, deadletter, cancelled}; one at once, then after activity on the queue at most once a second.`,
        query: CREDENTIAL_QUERY,
        responses: { 200: { description: 'An event stream until the client leaves', ...EVENT_STREAM } },
        errors: ['TOO_MANY_STREAMS'],
      },
    },
    {
      method: 'GET',
      path: '/api/v1/ws',
      permission: 'jobs:read',
      queryCredential: true,
      handler: () => {
        throw new AppError('UPGRADE_REQUIRED', 'Connect with a WebSocket client (Upgrade: websocket)');
      },
      doc: {
        operationId: 'openEventSocket',
        summary: "WebSocket of the organization's events (the envelopes as JSON text frames)",
        description:
          'Upgrade: websocket. Credential: token (JWT access token) or api_key in the query, or the Authorization header; refused with 401/403/429 before the upgrade. Filters as /api/v1/events. Client messages are ignored. A plain GET answers 426.',
        query: { ...FILTER_QUERY, ...CREDENTIAL_QUERY },
        responses: { 101: { description: 'Switching protocols' } },
        errors: ['UPGRADE_REQUIRED', 'TOO_MANY_STREAMS'],
      },
    },
  ];
}

/** WS /api/v1/ws: the envelopes of /api/v1/events as JSON text frames. */
export function eventSocket(hub: StreamHub): SocketRoute {
  return {
    path: '/api/v1/ws',
    permission: 'jobs:read',
    accept: (principal, query) => {
      const filter = eventFilter(query);
      const stream = hub.open(principal);
      return {
        open: (conn) => {
          stream.endWith(() => conn.end(1008, 'credential revoked'));
          stream.listen((e) => {
            if (filter(e)) conn.send(JSON.stringify(e));
          });
        },
        close: () => stream.release(),
      };
    },
  };
}
