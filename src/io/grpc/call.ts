// What every RPC shares: the credential (metadata `x-api-key`, API keys only: SPEC Authentication 4), the same
// admission as REST (rate limit, API call counting) and permission check, and catalog errors as gRPC statuses.
import { Metadata, status as Status, type handleUnaryCall, type ServiceError } from '@grpc/grpc-js';
import { AppError, CATALOG } from '../../errors.js';
import type { Log } from '../../log.js';
import { authorize, type Authenticator } from '../http/auth.js';
import type { Services } from '../http/routes/services.js';
import type { WorkerOps } from '../http/routes/workers.js';

export interface GrpcContext {
  services: Services;
  auth: Authenticator;
  /** The per-organization admission HTTP requests go through. */
  admit: (organizationId: string) => Promise<void>;
  workers: WorkerOps;
  log: Log;
  /** Open streams, ended when the server stops (they would otherwise hold the shutdown). */
  streams: Set<() => void>;
}

/** The organization behind the call's API key, admitted and allowed `permission`. */
export async function organizationOf(ctx: GrpcContext, metadata: Metadata, permission: string): Promise<string> {
  const [raw] = metadata.get('x-api-key');
  const key = typeof raw === 'string' ? raw.trim() : '';
  if (key === '') throw new AppError('UNAUTHORIZED', 'Missing x-api-key metadata (an API key)');
  if (key.startsWith('eyJ')) throw new AppError('UNAUTHORIZED', 'gRPC accepts API keys only; JWTs are not accepted');
  const principal = await ctx.auth.apiKey(key);
  await ctx.admit(principal.organizationId);
  authorize(principal, permission);
  return principal.organizationId;
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

/** A unary RPC: authenticate, run, answer. */
export function unary<Req, Res>(ctx: GrpcContext, permission: string, fn: (org: string, req: Req) => Promise<Res>): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    organizationOf(ctx, call.metadata, permission)
      .then((org) => fn(org, call.request))
      .then(
        (res) => callback(null, res),
        (err) => callback(grpcError(err, ctx.log) as ServiceError),
      );
  };
}

/** "" and 0 are proto3's "not given" (SPEC: 0 retries means the default): undefined, so REST's default applies. */
export const given = <T extends string | number>(v: T | null | undefined): T | undefined => (v ? v : undefined);
