// What every RPC shares: the credential (metadata `x-api-key`, API keys only: SPEC Authentication 4), the same
// admission as REST (rate limit, API call counting) and permission check, and catalog errors as gRPC statuses.
import { Metadata, status as Status, type handleUnaryCall, type ServerDuplexStream, type ServerWritableStream, type ServiceError } from '@grpc/grpc-js';
import { AppError, CATALOG } from '../../errors.js';
import { assertClean } from '../input.js';
import type { Log } from '../../log.js';
import type { App } from '../../app/app.js';
import { authorize, type Principal } from '../../app/auth.js';

export interface GrpcContext {
  app: App;
  /** The per-organization admission HTTP requests go through. */
  admit: (organizationId: string) => Promise<void>;
  log: Log;
  /** Open streams, ended when the server stops (they would otherwise hold the shutdown). */
  streams: Set<() => void>;
}

/** The principal of the call's API key, admitted and allowed `permission`. */
export async function principalOf(ctx: GrpcContext, metadata: Metadata, permission: string): Promise<Principal> {
  const [raw] = metadata.get('x-api-key');
  const key = typeof raw === 'string' ? raw.trim() : '';
  if (key === '') throw new AppError('UNAUTHORIZED', 'Missing x-api-key metadata (an API key)');
  if (key.startsWith('eyJ')) throw new AppError('UNAUTHORIZED', 'gRPC accepts API keys only; JWTs are not accepted');
  const principal = await ctx.app.auth.apiKey(key);
  await ctx.admit(principal.organizationId);
  authorize(principal, permission);
  return principal;
}

/**
 * A catalog error as a gRPC status. The message starts with the catalog code (so LEASE_EXPIRED and
 * QUOTA_EXCEEDED can be matched) and carries the REST body's extra fields as JSON (quota figures, field
 * problems); the code is also in the trailing metadata `x-error-code`.
 */
export function grpcError(err: unknown, log: Log): Partial<ServiceError> {
  const e = err instanceof AppError ? err : new AppError('INTERNAL');
  if (!(err instanceof AppError)) log.error('gRPC call failed', err);
  const metadata = new Metadata();
  metadata.set('x-error-code', e.code);
  const extra = Object.keys(e.extra).length > 0 ? ` ${JSON.stringify(e.extra)}` : '';
  return { code: CATALOG[e.code].grpc as Status, details: `${e.code}: ${e.message}${extra}`, metadata };
}

/**
 * Refuses a decoded request that nests too deep or holds a string PostgreSQL cannot store, as REST refuses such a
 * body. A google.protobuf.Struct spends three object levels per JSON level ({fields: {k: {structValue: …}}}).
 */
export function assertCleanRequest(ctx: GrpcContext, request: unknown): void {
  assertClean(request, 3 * ctx.app.ctx.config.bodyMaxDepth + 8, '(request)');
}

/** A unary RPC: authenticate, check the request, run, answer. */
export function unary<Req, Res>(ctx: GrpcContext, permission: string, fn: (org: string, req: Req) => Promise<Res>): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    principalOf(ctx, call.metadata, permission)
      .then((p) => {
        assertCleanRequest(ctx, call.request);
        return fn(p.organizationId, call.request);
      })
      .then(
        (res) => callback(null, res),
        (err) => callback(grpcError(err, ctx.log) as ServiceError),
      );
  };
}

/** "" and 0 are proto3's "not given" (SPEC: 0 retries means the default): undefined, so REST's default applies. */
export const given = <T extends string | number>(v: T | null | undefined): T | undefined => (v ? v : undefined);

/**
 * One streaming call, open until the client cancels or the server ends it: by end(), by fail(err), when the
 * server stops (UNAVAILABLE), or when the key it was opened with is revoked (UNAUTHENTICATED).
 */
export class OpenStream {
  private live = true;
  private cleanups: Array<() => void> = [];
  private drained: Promise<void> | null = null;

  constructor(
    private readonly ctx: GrpcContext,
    private readonly call: ServerWritableStream<unknown, unknown> | ServerDuplexStream<unknown, unknown>,
  ) {
    const stop = () => this.fail(new AppError('UNAVAILABLE', 'The server is shutting down'));
    ctx.streams.add(stop);
    this.cleanups.push(() => ctx.streams.delete(stop));
    call.on('cancelled', () => this.close());
  }

  get open(): boolean {
    return this.live;
  }

  /** The caller's organization; the stream fails when its key is revoked. */
  async authenticate(permission: string): Promise<string> {
    const p = await principalOf(this.ctx, this.call.metadata, permission);
    const keyId = p.apiKeyId;
    const stop = this.ctx.app.auth.onRevoke((r) => {
      if (r.keyId === keyId) {
        this.fail(new AppError('UNAUTHORIZED', r.changed ? "The API key's permissions changed; open the stream again" : 'The API key has been revoked'));
      }
    });
    if (this.live) this.cleanups.push(stop);
    else stop();
    return p.organizationId;
  }

  /**
   * Resolves once the stream takes more. The writes it refuses meanwhile (a burst of acks outruns its buffer) share
   * one wait for 'drain': a listener each went past the emitter's limit of 10, and every time the count went past
   * it again Node built a MaxListenersExceededWarning with its stack trace and printed it, some 450 times in
   * 20,000 jobs of a gRPC worker (docs/BENCHMARKS.md).
   */
  write(msg: unknown): Promise<void> {
    if (this.call.write(msg)) return Promise.resolve();
    this.drained ??= new Promise<void>((resolve) =>
      this.call.once('drain', () => {
        this.drained = null;
        resolve();
      }),
    );
    return this.drained;
  }

  end(): void {
    if (!this.live) return;
    this.close();
    this.call.end();
  }

  fail(err: unknown): void {
    if (!this.live) return;
    this.close();
    this.call.emit('error', grpcError(err, this.ctx.log));
  }

  private close(): void {
    this.live = false;
    for (const fn of this.cleanups) fn();
    this.cleanups = [];
  }
}
