// The gRPC server (grpc-js): QueueService and WorkerService of proto/queue/v1/queue.proto on GRPC_PORT, plain
// HTTP/2 (TLS is the hosting proxy's business, as for REST).
import { performance } from 'node:perf_hooks';
import {
  Server,
  ServerCredentials,
  status as Status,
  type handleUnaryCall,
  type ServiceClientConstructor,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { GrpcContext } from './call.js';
import { loadQueueV1 } from './proto.js';
import { queueService } from './queue-service.js';
import { workerService } from './worker-service.js';

/** How long stop() lets calls in flight finish before cutting the connections. */
const SHUTDOWN_GRACE_MS = 2_000;

/**
 * HTTP/2 keepalive towards clients (0: none). A stream ends only when its client says so or its connection
 * drops; a client that vanished without closing (a crash behind a middlebox, a cut path) would keep its streams
 * open for ever, their claims still taking jobs for it. An unanswered ping drops the connection, the streams end,
 * and jobs their claims take afterwards go back at once. (grpc-js servers have no ping policy: they take client
 * pings at any rate, so the SDK's keepalive needs no server option.)
 */
export interface GrpcKeepalive {
  keepaliveMs: number;
  keepaliveTimeoutMs: number;
}

export class GrpcServer {
  private readonly server: Server;
  private readonly ctx: GrpcContext;

  constructor(ctx: Omit<GrpcContext, 'streams'>, observe: ObserveCall | undefined, keepalive: GrpcKeepalive) {
    this.server = new Server(
      keepalive.keepaliveMs > 0 ? { 'grpc.keepalive_time_ms': keepalive.keepaliveMs, 'grpc.keepalive_timeout_ms': keepalive.keepaliveTimeoutMs } : {},
    );
    this.ctx = { ...ctx, streams: new Set() };
    const v1 = loadQueueV1();
    const add = (c: ServiceClientConstructor, impl: UntypedServiceImplementation) =>
      this.server.addService(c.service, observe ? timed(c.service, impl, observe) : impl);
    add(v1.QueueService, queueService(this.ctx));
    add(v1.WorkerService, workerService(this.ctx));
  }

  /** Streaming calls open now (metrics). */
  get openStreams(): number {
    return this.ctx.streams.size;
  }

  /** Binds host:port (0: any free port); the bound port. */
  listen(host: string, port: number): Promise<number> {
    const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    return new Promise((resolve, reject) =>
      this.server.bindAsync(address, ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
    );
  }

  /** Ends open streams (UNAVAILABLE: reconnect elsewhere), lets unary calls finish, then cuts what is left. */
  async stop(): Promise<void> {
    for (const end of [...this.ctx.streams]) end();
    this.ctx.streams.clear();
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, SHUTDOWN_GRACE_MS);
      this.server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }
}

/** A finished unary call, for metrics: 'queue.v1.QueueService/Enqueue', 'OK', seconds. */
export type ObserveCall = (method: string, code: string, seconds: number) => void;

/** Times the unary methods of a service by method and status; streaming ones are counted open instead. */
function timed(def: ServiceDefinition, impl: UntypedServiceImplementation, observe: ObserveCall): UntypedServiceImplementation {
  const out: UntypedServiceImplementation = {};
  for (const [name, fn] of Object.entries(impl)) {
    const m = def[name];
    if (!m || m.requestStream || m.responseStream) {
      out[name] = fn;
      continue;
    }
    const method = m.path.slice(1);
    const unary = fn as handleUnaryCall<unknown, unknown>;
    out[name] = ((call, callback) => {
      const started = performance.now();
      unary(call, (err, value, trailer, flags) => {
        observe(method, Status[err?.code ?? Status.OK] ?? 'UNKNOWN', (performance.now() - started) / 1000);
        callback(err, value, trailer, flags);
      });
    }) as handleUnaryCall<unknown, unknown>;
  }
  return out;
}
