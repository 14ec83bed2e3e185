// WorkerService (gRPC adapter): register, heartbeat and deregister through the use cases the REST routes call
// (src/app/workers.ts: upsert, the other organization's id refused, the 'workers' quota, the
// worker.registered / deregistered events).
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { RegisterBody } from '../../app/workers.js';
import { presentWorker } from '../present.js';
import { given, unary, type GrpcContext } from './call.js';

type Json = Record<string, unknown>;

/** A worker as the REST API shows it, as a queue.v1.Worker. */
function toWorker(w: Json): Json {
  return {
    workerId: w.worker_id,
    queueName: w.queue_name ?? '',
    hostname: w.hostname ?? '',
    maxConcurrency: w.max_concurrency ?? 0,
    registeredAt: w.registered_at,
    lastHeartbeatAt: w.last_heartbeat_at,
    status: w.status,
  };
}

export function workerService(ctx: GrpcContext): UntypedServiceImplementation {
  const { workers } = ctx.app;
  return {
    Register: unary(ctx, 'jobs:write', async (org, r: { workerId: string; queueName: string; hostname: string; maxConcurrency: number }) => {
      const { created, worker } = await workers.register(
        org,
        RegisterBody({
          worker_id: given(r.workerId),
          queue_name: given(r.queueName),
          hostname: given(r.hostname),
          max_concurrency: given(r.maxConcurrency),
        }),
      );
      const w = toWorker(presentWorker(worker, workers.timing));
      return { workerId: w.workerId, created, worker: w };
    }),
    Heartbeat: unary(ctx, 'jobs:write', async (org, r: { workerId: string }) => toWorker(presentWorker(await workers.heartbeat(org, r.workerId), workers.timing))),
    Deregister: unary(ctx, 'jobs:write', async (org, r: { workerId: string }) => ({
      ...toWorker(presentWorker(await workers.deregister(org, r.workerId), workers.timing)),
      status: 'deregistered',
    })),
  };
}
