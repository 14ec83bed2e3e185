// The REST surface on uWebSockets.js: one catch-all handler reads the request synchronously (uWS request
// objects die when the handler returns), streams in the body, then runs the pipeline
// route → credential → permission → JSON body → handler, and writes the answer corked.
//
// A path no route has is 404 only for a caller with a valid credential (a Bearer key or token, or the admin
// key): without one it is 401, so the routes cannot be enumerated anonymously. The dashboard's static space
// (/ui/…) is public and keeps its 404. A known path under the wrong method stays 405 before the credential.
//
// Two long-lived kinds of answer besides: a streamed response (SSE; the handler's Response has `stream`) and
// WebSocket endpoints (`webSocket()`, registered before the catch-all), which authenticate during the upgrade.
// Both are tracked so that close() ends them: uWS keeps the thread alive, and aborts the process, while a
// socket is open when the thread ends. A reader that does not keep up is dropped instead of buffered for.
//
// Every answer carries X-Request-Id (request-id.ts) and X-Sluice-Version; the request id is in the request's
// log lines (a debug line per request, and the error line of a failure).
import { STATUS_CODES } from 'node:http';
import { performance } from 'node:perf_hooks';
import { AppError } from '../../errors.js';
import type { Log } from '../../log.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_VALUES, assertClean, assertCleanParams, scanJson } from '../input.js';
import { ANY_CREDENTIAL, authorize, type Authenticator, type Principal } from '../../app/auth.js';
import { bearerToken, queryCredential, rejectQueryCredential } from './auth.js';
import type { Method, Request, Response, Router, StreamSink } from './router.js';
import { requestIdOf } from './request-id.js';
import { loadUws, type HttpRequest, type HttpResponse, type TemplatedApp, type us_listen_socket, type WebSocket } from './uws.js';

/** A hard ceiling for any body; plan payload caps are checked per route below it. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

const STATUS_LINE = new Map<number, string>();
const statusLine = (status: number): string => {
  let line = STATUS_LINE.get(status);
  if (!line) {
    line = `${status} ${STATUS_CODES[status] ?? ''}`;
    STATUS_LINE.set(status, line);
  }
  return line;
};

/** The request target (path and query) beyond which the answer is 414. */
export const MAX_TARGET_BYTES = 8 * 1024;
/** One header value, all headers together, and their number, beyond which the answer is 431. */
export const MAX_HEADER_BYTES = 8 * 1024;
export const MAX_HEADERS_BYTES = 32 * 1024;
/**
 * Below what uWS holds itself, or this check could never fire: 20.57 parses at most 98 headers and answers 431
 * (its own HTML body) to more; 20.30 parses 48 and drops the connection on more (docs/api.md, Input limits).
 */
export const MAX_HEADERS = 90;
/** HTTP's methods (RFC 9110, and PATCH): any other is refused and the connection closed, whatever the path. */
const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);
/** Headers that carry a credential: given twice, which one counts is ambiguous, so the request is refused. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'x-admin-key', 'x-webhook-token']);

/** Bytes a streamed response or a WebSocket may have queued for a reader that is not reading before it is dropped. */
export const MAX_STREAM_BACKLOG = 1024 * 1024;

/** A WebSocket endpoint; the credential may come in the query string (SPEC Authentication 3) or the header. */
export interface SocketRoute {
  path: string;
  permission: string;
  /** After the credential and permission check, during the upgrade: an AppError refuses it (no upgrade). */
  accept(principal: Principal, query: URLSearchParams): SocketSession | Promise<SocketSession>;
}

/** One accepted WebSocket. close() runs once, whether or not open() ran (the client may leave mid-upgrade). */
export interface SocketSession {
  open(conn: SocketConn): void;
  close(): void;
}

export interface SocketConn {
  /** Sends a text frame; false when the socket is gone. */
  send(text: string): boolean;
  end(code: number, reason: string): void;
}

interface SocketData {
  session: SocketSession;
  closed: boolean;
}

export interface HttpServerOptions extends BodyLimits {
  /** The X-Sluice-Version of every answer (package.json's version). */
  version: string;
  /** Whether an X-Admin-Key value is the service's admin key: it counts as a credential for an unknown path. */
  isAdminKey?: (key: string) => boolean;
  /** Each answer, for metrics: the route template (never the raw path; 'unmatched' when none) and the time to it. */
  observe?: (method: string, route: string, status: number, seconds: number) => void;
}

/** What an answer is counted under: a matched route's method and template, or OTHER / unmatched (bounded labels). */
interface Seen {
  method: string;
  route: string;
}

const NO_PRINCIPAL: Principal = Object.freeze({ organizationId: '', apiKeyId: null, permissions: [], via: 'api_key' as const });

export class HttpServer {
  private app: TemplatedApp | null = null;
  private socket: us_listen_socket | null = null;
  private readonly socketRoutes: SocketRoute[] = [];
  /** Open streamed responses and WebSockets: close() ends them. */
  private readonly streams = new Set<StreamSink>();
  private readonly sockets = new Set<WebSocket<SocketData>>();
  /** Requests being handled, and what close() waits on to see them answered. */
  private inflight = 0;
  private draining: (() => void) | null = null;
  port = 0;

  constructor(
    private readonly router: Router,
    private readonly auth: Authenticator,
    private readonly log: Log,
    /** Per-organization admission of authenticated requests (rate limits, call counting). */
    private readonly admit: (organizationId: string) => Promise<void> = async () => {},
    private readonly options: HttpServerOptions = { version: 'unknown', maxDepth: DEFAULT_MAX_DEPTH, maxValues: DEFAULT_MAX_VALUES },
  ) {}

  /** Adds a WebSocket endpoint; before listen(). */
  webSocket(route: SocketRoute): this {
    this.socketRoutes.push(route);
    return this;
  }

  listen(host: string, port: number): Promise<number> {
    const uws = loadUws();
    const app = uws.App();
    for (const route of this.socketRoutes) this.addSocket(app, route);
    app.any('/*', (res, req) => {
      const method = req.getMethod().toUpperCase() as Method;
      const path = req.getUrl();
      const query = req.getQuery() ?? '';
      const id = requestIdOf(req.getHeader('x-request-id'));
      // Refused before anything else runs, on what uWS let through (it drops worse requests itself).
      const malformed = malformedHead(req, path, query);
      if (malformed) {
        res.cork(() => write(res, this.errorResponse(malformed, id), id, this.options.version, true));
        return;
      }
      if (!HTTP_METHODS.has(method)) {
        res.cork(() => write(res, this.unknownMethod(method, path), id, this.options.version, true));
        return;
      }
      const authorization = req.getHeader('authorization');
      const adminKey = req.getHeader('x-admin-key');
      const headers = { webhookToken: req.getHeader('x-webhook-token'), host: req.getHeader('host') };
      const started = performance.now();
      let aborted = false;
      res.onAborted(() => {
        aborted = true;
      });
      this.inflight++;
      const seen: Seen = { method: 'OTHER', route: 'unmatched' };
      const finish = (r: Response) => {
        this.options.observe?.(seen.method, seen.route, r.status, (performance.now() - started) / 1000);
        if (this.log.debugging) {
          this.log.debug(`${method} ${path} ${r.status}`, undefined, { request_id: id, ms: Math.round((performance.now() - started) * 10) / 10, ...(aborted ? { aborted: true } : {}) });
        }
        if (--this.inflight === 0) this.draining?.();
        if (r.stream) return this.stream(res, r, aborted, id);
        if (aborted) return r.undelivered?.();
        // While draining, every answer closes its connection: the client's next request goes to another node.
        res.cork(() => {
          if (!write(res, r, id, this.options.version, this.draining !== null)) {
            this.log.error('a response body could not be encoded: answered 500', undefined, { request_id: id, route: seen.route });
          }
        });
      };
      const run = (body: Buffer | null) => {
        this.handle(method, path, query, authorization, adminKey, headers, body, seen).then(finish, (err) => finish(this.errorResponse(err, id)));
      };
      if (method === 'GET') return run(null);
      readBody(res, (body) => (body === null ? finish(this.errorResponse(new AppError('PAYLOAD_TOO_LARGE', 'Request body too large', { limit: MAX_BODY_BYTES }), id)) : run(body)));
    });
    this.app = app;
    return new Promise((resolve, reject) => {
      app.listen(host, port, (socket) => {
        if (!socket) return reject(new Error(`could not listen on ${host}:${port}`));
        this.socket = socket;
        this.port = uws.us_socket_local_port(socket);
        resolve(this.port);
      });
    });
  }

  /** Open streamed responses (SSE) and WebSockets, for metrics. */
  get openStreams(): { sse: number; websocket: number } {
    return { sse: this.streams.size, websocket: this.sockets.size };
  }

  /**
   * Stops taking connections and ends streams and WebSockets at once, then gives the requests in flight up to
   * `graceMs` to be answered (each closing its connection) before every socket is closed: a rolling restart
   * drops no request that was already being handled.
   */
  async close(graceMs = 0): Promise<void> {
    const uws = loadUws();
    if (this.socket) uws.us_listen_socket_close(this.socket);
    this.socket = null;
    for (const sink of [...this.streams]) sink.end();
    for (const ws of [...this.sockets]) ws.end(1001, 'server shutting down');
    if (this.inflight > 0 && graceMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.draining = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    (this.app as any)?.close?.();
    this.app = null;
  }

  private async handle(
    method: Method,
    path: string,
    query: string,
    authorization: string,
    adminKey: string,
    headers: { webhookToken: string; host: string },
    raw: Buffer | null,
    seen: Seen,
  ): Promise<Response> {
    const match = this.router.match(method, path);
    if (match === null) {
      await this.unknownPath(path, query, authorization, adminKey);
      throw new AppError('NOT_FOUND', `No route for ${method} ${path}`);
    }
    if ('allow' in match) {
      const err = new AppError('METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}`);
      return { status: err.status, body: err.toBody(), headers: { allow: match.allow.join(', ') } };
    }
    const { route, params } = match;
    seen.method = route.method;
    seen.route = route.path;
    const q = new URLSearchParams(query);
    assertCleanParams(q, params);
    if (route.queryCredential) authorization = queryCredential(q, authorization);
    else rejectQueryCredential(q);
    let principal = NO_PRINCIPAL;
    if (route.permission !== null) principal = await this.principal(authorization, route.permission);
    const req: Request = { method, path, params, query: q, authorization, adminKey, ...headers, body: undefined, principal };
    if (route.authenticate) {
      req.principal = await route.authenticate(req);
      await this.admit(req.principal.organizationId);
    }
    req.body = parseJson(raw, this.options);
    return route.handler(req);
  }

  /** 401 unless the request carries a valid credential: which paths exist is for callers the service knows. */
  private async unknownPath(path: string, query: string, authorization: string, adminKey: string): Promise<void> {
    if (path.startsWith('/ui/')) return;
    rejectQueryCredential(new URLSearchParams(query));
    if (adminKey !== '' && this.options.isAdminKey?.(adminKey)) return;
    await this.principal(authorization, ANY_CREDENTIAL);
  }

  private async principal(authorization: string, permission: string): Promise<Principal> {
    const principal = await this.auth.credential(bearerToken(authorization));
    await this.admit(principal.organizationId);
    authorize(principal, permission);
    return principal;
  }

  /** Sends the status and headers, then hands the route a sink over the response until either side ends it. */
  private stream(res: HttpResponse, r: Response, aborted: boolean, id: string): void {
    let closed = aborted;
    let ended = false;
    /** Bytes written since the socket last reported it had drained; null while not backed up. */
    let backlog: number | null = null;
    const listeners: Array<() => void> = [];
    const close = () => {
      if (closed) return;
      closed = true;
      this.streams.delete(sink);
      for (const fn of listeners.splice(0)) fn();
    };
    const sink: StreamSink = {
      get closed() {
        return closed;
      },
      write: (chunk) => {
        if (closed) return false;
        let ok = true;
        res.cork(() => {
          ok = res.write(chunk);
        });
        if (ok) return true;
        backlog = (backlog ?? 0) + Buffer.byteLength(chunk);
        if (backlog > MAX_STREAM_BACKLOG) {
          // The reader is not keeping up: drop it rather than queue without bound.
          ended = true;
          close();
          res.close();
          return false;
        }
        return true;
      },
      end: () => {
        if (closed) return;
        ended = true;
        close();
        res.cork(() => res.end());
      },
      onClose: (fn) => {
        if (closed) fn();
        else listeners.push(fn);
      },
    };
    if (!aborted) {
      this.streams.add(sink);
      res.onWritable(() => {
        backlog = null;
        return true;
      });
      // The handler's onAborted set `aborted` only; from here on the client leaving closes the stream.
      res.onAborted(() => {
        if (!ended) close();
      });
      res.cork(() => {
        res.writeStatus(statusLine(r.status));
        res.writeHeader('x-request-id', id);
        res.writeHeader('x-sluice-version', this.options.version);
        for (const [k, v] of Object.entries(r.headers ?? {})) res.writeHeader(k, v);
      });
    }
    r.stream!(sink);
  }

  private addSocket(app: TemplatedApp, route: SocketRoute): void {
    app.ws<SocketData>(route.path, {
      idleTimeout: 60,
      sendPingsAutomatically: true,
      maxPayloadLength: 16 * 1024,
      maxBackpressure: MAX_STREAM_BACKLOG,
      closeOnBackpressureLimit: 1,
      upgrade: (res, req, context) => {
        // The request dies when this handler returns: copy what the upgrade needs first.
        const query = new URLSearchParams(req.getQuery() ?? '');
        const authorization = req.getHeader('authorization');
        const key = req.getHeader('sec-websocket-key');
        const protocol = req.getHeader('sec-websocket-protocol');
        const extensions = req.getHeader('sec-websocket-extensions');
        const id = requestIdOf(req.getHeader('x-request-id'));
        let aborted = false;
        res.onAborted(() => {
          aborted = true;
        });
        const refuse = (err: unknown) => {
          if (!aborted) res.cork(() => write(res, this.errorResponse(err, id), id, this.options.version));
        };
        (async () => {
          assertCleanParams(query, {});
          const principal = await this.principal(queryCredential(query, authorization), route.permission);
          return route.accept(principal, query);
        })().then((session) => {
          if (aborted) return session.close();
          res.cork(() => res.upgrade<SocketData>({ session, closed: false }, key, protocol, extensions, context));
        }, refuse);
      },
      open: (ws) => {
        const data = ws.getUserData();
        this.sockets.add(ws);
        data.session.open({
          send: (text) => {
            if (data.closed) return false;
            let sent = 0;
            ws.cork(() => {
              sent = ws.send(text, false);
            });
            return sent !== 2;
          },
          end: (code, reason) => {
            if (!data.closed) ws.end(code, reason);
          },
        });
      },
      close: (ws) => {
        const data = ws.getUserData();
        data.closed = true;
        this.sockets.delete(ws);
        data.session.close();
      },
    });
  }

  /** 405 to a method HTTP does not define (20.57 passes it on; 20.30 drops it), with the path's methods if it has any. */
  private unknownMethod(method: string, path: string): Response {
    const err = new AppError('METHOD_NOT_ALLOWED', `${method.slice(0, 32)} is not an HTTP method`);
    const match = this.router.match(method, path);
    return { status: err.status, body: err.toBody(), ...(match && 'allow' in match ? { headers: { allow: match.allow.join(', ') } } : {}) };
  }

  private errorResponse(err: unknown, requestId: string): Response {
    if (err instanceof AppError) {
      const retryAfter = err.extra.retry_after;
      return { status: err.status, body: err.toBody(), ...(typeof retryAfter === 'number' ? { headers: { 'retry-after': String(retryAfter) } } : {}) };
    }
    this.log.error('unhandled error', err, { request_id: requestId });
    const e = new AppError('INTERNAL');
    return { status: e.status, body: e.toBody() };
  }
}

/**
 * `close`: end the connection after the answer (a malformed request: what follows it cannot be trusted). False when
 * the body could not be encoded (JSON.stringify runs out of stack on a value nested thousands of levels deep, which a
 * row stored before the edge refused such values may hold): that request alone is answered 500 INTERNAL, and the
 * exception, thrown in a promise's callback, does not end the process.
 */
function write(res: HttpResponse, r: Response, requestId: string, version: string, close = false): boolean {
  let text: string | undefined;
  let encoded = true;
  // A string body comes with its own content type (the Prometheus text format); anything else is JSON.
  const raw = typeof r.body === 'string' && Boolean(r.headers?.['content-type']);
  if (r.body !== undefined && !raw) {
    try {
      text = JSON.stringify(r.body);
    } catch {
      const e = new AppError('INTERNAL', 'The response could not be encoded');
      r = { status: e.status, body: e.toBody() };
      text = JSON.stringify(r.body);
      encoded = false;
    }
  }
  res.writeStatus(statusLine(r.status));
  res.writeHeader('x-request-id', requestId);
  res.writeHeader('x-sluice-version', version);
  if (r.headers) for (const [k, v] of Object.entries(r.headers)) res.writeHeader(k, v);
  if (r.body === undefined) {
    res.end(undefined, close);
  } else if (raw) {
    res.end(r.body as string, close);
  } else {
    res.writeHeader('content-type', 'application/json');
    res.end(text, close);
  }
  return encoded;
}

/** What is wrong with the request line and headers, or null. Runs on every request: one pass over the headers. */
function malformedHead(req: HttpRequest, path: string, query: string): AppError | null {
  if (path.length + query.length > MAX_TARGET_BYTES) {
    return new AppError('URI_TOO_LONG', `The path and query string are longer than ${MAX_TARGET_BYTES} bytes`);
  }
  let count = 0;
  let total = 0;
  let problem: AppError | null = null;
  const seen = new Set<string>();
  req.forEach((name, value) => {
    if (problem) return;
    count++;
    total += name.length + value.length;
    if (value.length > MAX_HEADER_BYTES) problem = new AppError('HEADERS_TOO_LARGE', `The ${name} header is longer than ${MAX_HEADER_BYTES} bytes`);
    else if (CONTROL.test(value)) problem = new AppError('BAD_REQUEST', `The ${name} header contains a control character`);
    else if (CREDENTIAL_HEADERS.has(name)) {
      if (seen.has(name)) problem = new AppError('BAD_REQUEST', `The ${name} header is given more than once`);
      seen.add(name);
    }
  });
  if (problem) return problem;
  if (count > MAX_HEADERS) return new AppError('HEADERS_TOO_LARGE', `More than ${MAX_HEADERS} headers`);
  if (total > MAX_HEADERS_BYTES) return new AppError('HEADERS_TOO_LARGE', `The headers are larger than ${MAX_HEADERS_BYTES} bytes`);
  return null;
}

/** Control characters other than tab: HTTP forbids them in field values. */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** Collects the body; null when it exceeds MAX_BODY_BYTES. uWS chunks are only valid during the callback. */
function readBody(res: HttpResponse, done: (body: Buffer | null) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.onData((chunk, isLast) => {
    if (!over) {
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) over = true;
      else chunks.push(Buffer.from(chunk.slice(0)));
    }
    if (isLast) done(over ? null : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
  });
}

export interface BodyLimits {
  maxDepth: number;
  maxValues: number;
}

/** Empty bodies are accepted (undefined); anything else must be JSON within the limits, and storable. */
function parseJson(raw: Buffer | null, limits: BodyLimits): unknown {
  if (raw === null || raw.length === 0) return undefined;
  const shape = scanJson(raw, limits.maxDepth, limits.maxValues);
  if (shape !== null) {
    const message = shape === 'depth' ? `nests deeper than ${limits.maxDepth} levels` : `holds more than ${limits.maxValues} values`;
    throw new AppError('VALIDATION_ERROR', `The body ${message}`, { details: [{ field: '(body)', message }] });
  }
  const text = raw.toString('utf8');
  if (text.trim() === '') return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new AppError('VALIDATION_ERROR', `The body is not valid JSON: ${(err as Error).message}`, {
      details: [{ field: '(body)', message: 'is not valid JSON' }],
    });
  }
  assertClean(body, limits.maxDepth);
  return body;
}
