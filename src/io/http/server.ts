// The REST surface on uWebSockets.js: one catch-all handler reads the request synchronously (uWS request
// objects die when the handler returns), streams in the body, then runs the pipeline
// route → credential → permission → JSON body → handler, and writes the answer corked.
import { STATUS_CODES } from 'node:http';
import { AppError } from '../../errors.js';
import { authorize, rejectQueryCredential, type Authenticator, type Principal } from './auth.js';
import type { Method, Request, Response, Router } from './router.js';
import { loadUws, type HttpResponse, type TemplatedApp, type us_listen_socket } from './uws.js';

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

const NO_PRINCIPAL: Principal = Object.freeze({ organizationId: '', apiKeyId: null, permissions: [], via: 'api_key' as const });

export class HttpServer {
  private app: TemplatedApp | null = null;
  private socket: us_listen_socket | null = null;
  port = 0;

  constructor(
    private readonly router: Router,
    private readonly auth: Authenticator,
    private readonly log: (msg: string, err?: unknown) => void,
    /** Per-organization admission of authenticated requests (rate limits, call counting). */
    private readonly admit: (organizationId: string) => Promise<void> = async () => {},
  ) {}

  listen(host: string, port: number): Promise<number> {
    const uws = loadUws();
    const app = uws.App();
    app.any('/*', (res, req) => {
      const method = req.getMethod().toUpperCase() as Method;
      const path = req.getUrl();
      const query = req.getQuery() ?? '';
      const authorization = req.getHeader('authorization');
      const adminKey = req.getHeader('x-admin-key');
      const headers = { webhookToken: req.getHeader('x-webhook-token'), host: req.getHeader('host') };
      let aborted = false;
      res.onAborted(() => {
        aborted = true;
      });
      const finish = (r: Response) => {
        if (aborted) return;
        res.cork(() => write(res, r));
      };
      const run = (body: Buffer | null) => {
        this.handle(method, path, query, authorization, adminKey, headers, body).then(finish, (err) => finish(this.errorResponse(err)));
      };
      if (method === 'GET') return run(null);
      readBody(res, (body) => (body === null ? finish(this.errorResponse(new AppError('PAYLOAD_TOO_LARGE', 'Request body too large', { limit: MAX_BODY_BYTES }))) : run(body)));
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

  close(): void {
    const uws = loadUws();
    if (this.socket) uws.us_listen_socket_close(this.socket);
    this.socket = null;
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
  ): Promise<Response> {
    const match = this.router.match(method, path);
    if (match === null) throw new AppError('NOT_FOUND', `No route for ${method} ${path}`);
    if ('allow' in match) {
      const err = new AppError('METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}`);
      return { ...this.errorResponse(err), headers: { allow: match.allow.join(', ') } };
    }
    const { route, params } = match;
    const q = new URLSearchParams(query);
    rejectQueryCredential(q);
    let principal = NO_PRINCIPAL;
    if (route.permission !== null) {
      principal = await this.auth.authenticate(authorization);
      await this.admit(principal.organizationId);
      authorize(principal, route.permission);
    }
    const req: Request = { method, path, params, query: q, authorization, adminKey, ...headers, body: undefined, principal };
    if (route.authenticate) {
      req.principal = await route.authenticate(req);
      await this.admit(req.principal.organizationId);
    }
    req.body = parseJson(raw);
    return route.handler(req);
  }

  private errorResponse(err: unknown): Response {
    if (err instanceof AppError) {
      const retryAfter = err.extra.retry_after;
      return { status: err.status, body: err.toBody(), ...(typeof retryAfter === 'number' ? { headers: { 'retry-after': String(retryAfter) } } : {}) };
    }
    this.log('unhandled error', err);
    const e = new AppError('INTERNAL');
    return { status: e.status, body: e.toBody() };
  }
}

function write(res: HttpResponse, r: Response): void {
  res.writeStatus(statusLine(r.status));
  if (r.headers) for (const [k, v] of Object.entries(r.headers)) res.writeHeader(k, v);
  if (r.body === undefined) {
    res.end();
    return;
  }
  res.writeHeader('content-type', 'application/json');
  res.end(JSON.stringify(r.body));
}

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

/** Empty bodies are accepted (undefined); anything else must be JSON. */
function parseJson(raw: Buffer | null): unknown {
  if (raw === null || raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new AppError('VALIDATION_ERROR', `The body is not valid JSON: ${(err as Error).message}`, {
      details: [{ field: '(body)', message: 'is not valid JSON' }],
    });
  }
}
