// The gRPC server (grpc-js): QueueService and WorkerService of proto/queue/v1/queue.proto on GRPC_PORT, plain
// HTTP/2 (TLS is the hosting proxy's business, as for REST).
import { Server, ServerCredentials, type ServiceClientConstructor } from '@grpc/grpc-js';
import type { GrpcContext } from './call.js';
import { loadQueueV1 } from './proto.js';
import { queueService } from './queue-service.js';
import { workerService } from './worker-service.js';

/** How long stop() lets calls in flight finish before cutting the connections. */
const SHUTDOWN_GRACE_MS = 2_000;

export class GrpcServer {
  private readonly server = new Server();
  private readonly ctx: GrpcContext;

  constructor(ctx: Omit<GrpcContext, 'streams'>) {
    this.ctx = { ...ctx, streams: new Set() };
    const v1 = loadQueueV1();
    const def = (c: ServiceClientConstructor) => c.service;
    this.server.addService(def(v1.QueueService), queueService(this.ctx));
    this.server.addService(def(v1.WorkerService), workerService(this.ctx));
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
