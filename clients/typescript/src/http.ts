// The one place requests are sent: credentials, JSON, timeouts, error mapping and automatic retries.
//
// Retry policy. A request is retried only when sending it twice cannot do something twice:
// - it is idempotent: GET, PUT, DELETE; a POST the caller marks so (an enqueue with an idempotency key;
//   complete / fail / heartbeat, which are fenced by the lease; pause / resume; trigger is not);
// - and the failure is transient: no answer at all (connection refused or reset, timeout), 429 RATE_LIMITED,
//   502, 503 or 504.
// Waits grow exponentially from `baseDelayMs` with full jitter (so many clients refused at once do not come
// back at once), capped by `maxDelayMs`; a `Retry-After` is honoured as a floor (plus up to 10% jitter). A
// Retry-After longer than `maxRetryAfterMs` is not waited for: the error is thrown so the caller can decide.
// QUOTA_EXCEEDED is never retried: it is a plan limit, not a moment's congestion.
//
// Requests with a JSON answer go through node:http(s) with a keep-alive agent unless the caller passes its own
// `fetch`: the global fetch cost about three times the CPU per request (its streams, Request and Headers objects and
// an AbortSignal each), which a busy worker pays on every claim and acknowledgement. Streams (SSE) use fetch.
import http from 'node:http';
import https from 'node:https';
import { ConnectionError, errorFromResponse, SluiceError, UnavailableError, UnknownApiError } from './errors.js';

export interface RetryOptions {
  /** Retries after the first attempt (default 4; 0 disables retrying). */
  retries?: number;
  /** First backoff, before jitter (default 250 ms). */
  baseDelayMs?: number;
  /** Largest backoff (default 10 s). */
  maxDelayMs?: number;
  /** Largest Retry-After the client waits for (default 60 s). */
  maxRetryAfterMs?: number;
}

export interface RetryEvent {
  method: string;
  path: string;
  /** 1 for the first retry. */
  attempt: number;
  delayMs: number;
  error: SluiceError;
}

export interface HttpOptions {
  url: string;
  apiKey?: string | undefined;
  adminKey?: string | undefined;
  timeoutMs?: number;
  retry?: RetryOptions;
  fetch?: typeof fetch;
  headers?: Record<string, string>;
  userAgent?: string;
  onRetry?: (e: RetryEvent) => void;
}

export type Query = Record<string, string | number | boolean | readonly (string | number)[] | null | undefined>;

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Query;
  body?: unknown;
  /** Safe to send again (see the policy above). Defaults to true for GET, PUT and DELETE, false for POST. */
  idempotent?: boolean;
  /** Which credential: the API key (default), the admin key, or none. */
  auth?: 'key' | 'admin' | 'none';
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** Per-attempt timeout; defaults to the client's. */
  timeoutMs?: number;
  /** Called before each automatic retry of this request (besides the client's `onRetry`). */
  onRetry?: ((e: RetryEvent) => void) | undefined;
  /** Called when an answer's status and headers have come, before its body. */
  onHeaders?: (() => void) | undefined;
}

export interface RawResponse<T> {
  status: number;
  headers: Headers;
  body: T;
}

const DEFAULTS = { retries: 4, baseDelayMs: 250, maxDelayMs: 10_000, maxRetryAfterMs: 60_000 };
const RETRY_STATUSES = new Set([502, 503, 504]);

export class HttpCore {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly adminKey: string | undefined;
  readonly timeoutMs: number;
  private readonly retry: Required<RetryOptions>;
  private readonly fetchImpl: typeof fetch;
  /** The caller's fetch, which then carries every request; undefined: node:http(s) through `agent`. */
  private readonly customFetch: typeof fetch | undefined;
  private readonly agent: http.Agent;
  private readonly node: typeof http | typeof https;
  /** The base URL's host, port and path ('' or '/prefix', which every request path follows). */
  private readonly hostname: string;
  private readonly port: string;
  private readonly basePath: string;
  private readonly extraHeaders: Record<string, string>;
  /** The client's hook, called before each automatic retry (the gRPC worker's unary calls call it too). */
  readonly onRetry: ((e: RetryEvent) => void) | undefined;

  constructor(opts: HttpOptions) {
    let base: URL | null = null;
    try {
      base = new URL(opts.url);
    } catch {
      /* reported below */
    }
    if (!base || (base.protocol !== 'http:' && base.protocol !== 'https:')) {
      throw new TypeError(`Sluice: url must be an absolute http(s) URL such as http://localhost:8080, got ${JSON.stringify(opts.url)}`);
    }
    this.baseUrl = base.toString().replace(/\/+$/, '');
    this.apiKey = opts.apiKey || undefined;
    this.adminKey = opts.adminKey || undefined;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    const r = { ...DEFAULTS, ...dropUndefined(opts.retry ?? {}) };
    for (const [k, v] of Object.entries(r)) {
      if (!Number.isFinite(v) || v < 0) throw new RangeError(`Sluice: retry.${k} must be a non-negative number`);
    }
    this.retry = r;
    this.fetchImpl = opts.fetch ?? globalThis.fetch;
    this.customFetch = opts.fetch;
    this.node = base.protocol === 'https:' ? https : http;
    // An idle connection is dropped after 4 s (as fetch's does), well before the service closes it (uWS: 10 s): a
    // request sent on a connection the server is closing at that moment would fail.
    this.agent = new this.node.Agent({ keepAlive: true, timeout: 4_000 });
    this.hostname = base.hostname.replace(/^\[(.*)\]$/, '$1');
    this.port = base.port;
    this.basePath = base.pathname.replace(/\/+$/, '');
    this.extraHeaders = { 'user-agent': opts.userAgent ?? 'sluice-client-ts/0.1', ...(opts.headers ?? {}) };
    this.onRetry = opts.onRetry;
  }

  /** Retries after a first attempt that failed transiently (`retry.retries`). */
  get retries(): number {
    return this.retry.retries;
  }

  /** Sends the request (retrying as the policy allows) and returns the parsed JSON body, or throws a SluiceError. */
  async request<T>(spec: RequestSpec): Promise<RawResponse<T>> {
    const idempotent = spec.idempotent ?? spec.method !== 'POST';
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once<T>(spec);
      } catch (err) {
        // The caller's signal ends the request with its reason, never a retry (the worker's close() aborts its
        // reports with a ConnectionError, which would pass for a transient failure).
        if (spec.signal?.aborted) throw spec.signal.reason ?? err;
        if (!(err instanceof SluiceError)) throw err;
        const delay = idempotent && attempt < this.retry.retries ? this.retryDelay(err, attempt) : null;
        if (delay === null) throw err;
        const event = { method: spec.method, path: spec.path, attempt: attempt + 1, delayMs: delay, error: err };
        this.onRetry?.(event);
        spec.onRetry?.(event);
        await sleep(delay, spec.signal);
      }
    }
  }

  /** One attempt, returning the response unparsed (streams: SSE). Non-2xx answers throw. */
  async open(spec: RequestSpec): Promise<Response> {
    const { res } = await this.send(spec, false);
    return res;
  }

  /**
   * Milliseconds to wait before retrying after `err` (attempt 0: the first retry), or null when it must not be
   * retried. Also the rule of the gRPC worker's unary calls (grpc.ts).
   */
  retryDelay(err: SluiceError, attempt: number): number | null {
    const transient =
      err instanceof ConnectionError ||
      err.code === 'RATE_LIMITED' ||
      err instanceof UnavailableError ||
      (err instanceof UnknownApiError && (RETRY_STATUSES.has(err.status) || (err.status === 429 && err.retryAfter !== null)));
    if (!transient) return null;
    const backoff = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** attempt);
    const jittered = Math.random() * backoff;
    if (err.retryAfter !== null) {
      const floor = err.retryAfter * 1000;
      if (floor > this.retry.maxRetryAfterMs) return null;
      return floor + Math.random() * Math.max(100, floor * 0.1);
    }
    return jittered;
  }

  private async once<T>(spec: RequestSpec): Promise<RawResponse<T>> {
    if (this.customFetch === undefined) return this.onceNode<T>(spec);
    const { res, abandon } = await this.send(spec, true);
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw this.connectionError(spec, err, abandon());
    } finally {
      abandon();
    }
    return { status: res.status, headers: res.headers, body: bodyOf<T>(spec, res.status, text) };
  }

  /** One attempt over node:http(s), as `once` over fetch: the parsed body, or the mapped error. */
  private onceNode<T>(spec: RequestSpec): Promise<RawResponse<T>> {
    const signal = spec.signal;
    if (signal?.aborted) return Promise.reject(signal.reason ?? new DOMException('The operation was aborted', 'AbortError'));
    let headers: Record<string, string>;
    let body: string | undefined;
    let path: string;
    try {
      headers = this.headersOf(spec);
      body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
      path = this.pathOf(spec);
    } catch (err) {
      return Promise.reject(err);
    }
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    return new Promise<RawResponse<T>>((resolve, reject) => {
      let timedOut = false;
      let settled = false;
      const req = this.node.request({ hostname: this.hostname, port: this.port, path, method: spec.method, headers, agent: this.agent });
      const timer = setTimeout(() => {
        timedOut = true;
        req.destroy(new Error('timed out'));
      }, spec.timeoutMs ?? this.timeoutMs);
      const onAbort = () => req.destroy(signal!.reason instanceof Error ? signal!.reason : new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      const fail = (err: unknown) => {
        if (!settle()) return;
        if (signal?.aborted) reject(signal.reason ?? err);
        else reject(this.connectionError(spec, err, timedOut));
      };
      req.on('error', fail);
      req.on('response', (res) => {
        spec.onHeaders?.();
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', fail);
        // The connection closed before the whole body came: what fetch calls a terminated body.
        res.on('close', () => {
          if (!res.complete) fail(Object.assign(new Error('the answer ended early'), { code: 'ECONNRESET' }));
        });
        res.on('end', () => {
          if (!settle()) return;
          const status = res.statusCode ?? 0;
          const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
          const retryAfter = res.headers['retry-after'];
          try {
            if (status >= 400) throw errorOf(spec, status, text, typeof retryAfter === 'string' ? retryAfter : null);
            resolve({ status, headers: headersOf(res.headers), body: bodyOf<T>(spec, status, text) });
          } catch (err) {
            reject(err);
          }
        });
      });
      req.end(body);
    });
  }

  /**
   * Sends one attempt; throws the mapped error for a non-2xx answer. `abandon` clears the timeout and unlinks the
   * caller's signal (returns whether the timeout fired). Without `timeBody` (a stream) only the timeout ends with
   * the headers: the caller's signal must still be able to close the connection while the body is read.
   */
  private async send(spec: RequestSpec, timeBody: boolean): Promise<{ res: Response; abandon: () => boolean }> {
    if (spec.signal?.aborted) throw spec.signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
    const ctl = new AbortController();
    let timedOut = false;
    const timeoutMs = spec.timeoutMs ?? this.timeoutMs;
    const timer = setTimeout(() => {
      timedOut = true;
      ctl.abort(new DOMException('timed out', 'TimeoutError'));
    }, timeoutMs);
    const onAbort = () => ctl.abort(spec.signal!.reason);
    spec.signal?.addEventListener('abort', onAbort, { once: true });
    const abandon = () => {
      clearTimeout(timer);
      spec.signal?.removeEventListener('abort', onAbort);
      return timedOut;
    };
    let res: Response;
    let headers: Record<string, string>;
    try {
      headers = this.headersOf(spec);
    } catch (err) {
      abandon();
      throw err;
    }
    try {
      res = await this.fetchImpl(this.urlOf(spec), {
        method: spec.method,
        headers,
        body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
        signal: ctl.signal,
      });
    } catch (err) {
      abandon();
      if (spec.signal?.aborted) throw spec.signal.reason ?? err;
      throw this.connectionError(spec, err, timedOut);
    }
    if (!timeBody) clearTimeout(timer);
    spec.onHeaders?.();
    if (res.status >= 400) {
      const text = await res.text().catch(() => '');
      abandon();
      throw errorOf(spec, res.status, text, res.headers.get('retry-after'));
    }
    return { res, abandon };
  }

  private connectionError(spec: RequestSpec, err: unknown, timedOut: boolean): ConnectionError {
    const reason = timedOut
      ? `timed out after ${spec.timeoutMs ?? this.timeoutMs} ms`
      : describeCause(err);
    return new ConnectionError(`${spec.method} ${this.baseUrl}${spec.path}: ${reason}`, { cause: err, method: spec.method, path: spec.path, timedOut });
  }

  /** The request target: the base URL's path, the request's path and its query string. */
  private pathOf(spec: Pick<RequestSpec, 'path' | 'query'>): string {
    if (spec.query === undefined) return this.basePath + spec.path;
    const u = new URL(this.urlOf(spec));
    return u.pathname + u.search;
  }

  urlOf(spec: Pick<RequestSpec, 'path' | 'query'>): string {
    const u = new URL(this.baseUrl + spec.path);
    for (const [k, v] of Object.entries(spec.query ?? {})) {
      if (v === undefined || v === null) continue;
      if (Array.isArray(v)) for (const item of v) u.searchParams.append(k, String(item));
      else u.searchParams.set(k, String(v));
    }
    return u.toString();
  }

  private headersOf(spec: RequestSpec): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', ...this.extraHeaders, ...(spec.headers ?? {}) };
    if (spec.body !== undefined) h['content-type'] = 'application/json';
    const auth = spec.auth ?? 'key';
    if (auth === 'key') {
      if (!this.apiKey) throw new TypeError('Sluice: this call needs an API key (or access token): pass apiKey to the client');
      h.authorization = `Bearer ${this.apiKey}`;
    } else if (auth === 'admin') {
      if (!this.adminKey) throw new TypeError('Sluice: admin calls need the admin key: pass adminKey to the client');
      h['x-admin-key'] = this.adminKey;
    }
    return h;
  }
}

/** A 2xx answer's body: its JSON (undefined when empty), or UnknownApiError when it is not JSON. */
function bodyOf<T>(spec: RequestSpec, status: number, text: string): T {
  if (text.length === 0) return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new UnknownApiError({ status, code: `HTTP_${status}`, message: `${spec.method} ${spec.path}: the answer is not JSON`, method: spec.method, path: spec.path });
  }
}

/** The error of a non-2xx answer, from its body (JSON, or a proxy's page kept as text for the message). */
function errorOf(spec: RequestSpec, status: number, text: string, retryAfter: string | null): SluiceError {
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: keep the text */
  }
  return errorFromResponse(status, body, retryAfter, spec.method, spec.path);
}

/** A node response's headers as fetch's Headers (what RawResponse carries). */
function headersOf(h: http.IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const k in h) {
    const v = h[k];
    if (typeof v === 'string') out.append(k, v);
    else if (Array.isArray(v)) for (const item of v) out.append(k, item);
  }
  return out;
}

/** fetch says only "fetch failed": the reason (ECONNREFUSED…) is in its cause, or in the cause's errors. */
function describeCause(err: unknown): string {
  type Cause = { code?: string; message?: string; errors?: Cause[] };
  let cause = (err as { cause?: Cause })?.cause;
  if (cause && !cause.code && Array.isArray(cause.errors) && cause.errors[0]) cause = cause.errors[0];
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  if (cause?.message) return cause.message;
  // node:http's own errors carry the code themselves.
  const own = err as Cause;
  if (own?.code) return own.message?.includes(own.code) ? own.message : `${own.code}${own.message ? ` (${own.message})` : ''}`;
  return err instanceof Error ? err.message : String(err);
}

function dropUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Exponential backoff with full jitter: up to 0.25 s, 0.5 s, 1 s… capped at 10 s. */
export function backoff(attempt: number): number {
  return Math.random() * Math.min(10_000, 250 * 2 ** Math.min(attempt, 10));
}
