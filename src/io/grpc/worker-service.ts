// WorkerService: register, heartbeat and deregister through the WorkerOps the REST routes use (upsert, the
// other organization's id refused, the 'workers' quota, the worker.registered / deregistered events).
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { presentWorker } from '../http/routes/workers.js';
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
  const ops = ctx.workers;
  return {
    Register: unary(ctx, 'jobs:write', async (org, r: { workerId: string; queueName: string; hostname: string; maxConcurrency: number }) => {
      const res = await ops.register(org, {
        worker_id: given(r.workerId),
        queue_name: given(r.queueName),
        hostname: given(r.hostname),
        max_concurrency: given(r.maxConcurrency),
      });
      const worker = toWorker(res.body as Json);
      return { workerId: worker.workerId, created: res.status === 201, worker };
    }),
    Heartbeat: unary(ctx, 'jobs:write', async (org, r: { workerId: string }) => toWorker(presentWorker(await ops.heartbeat(org, r.workerId)))),
    Deregister: unary(ctx, 'jobs:write', async (org, r: { workerId: string }) => ({
      ...toWorker(presentWorker(await ops.deregister(org, r.workerId))),
      status: 'deregistered',
    })),
  };
}
