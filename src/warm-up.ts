// The node's warm-up: before it listens, the node runs WARM_UP_JOBS jobs through its own APIs on private loopback
// ports — over HTTP enqueued one at a time and in bulk, claimed, completed one at a time and in batch
// acknowledgements; an eighth over gRPC, enqueued by the unary call and worked through ProcessJobs streams — in an
// organization of its own, which it then deletes. A fresh process runs its hot path unoptimised and compiles it
// under its first seconds of load: measured, a new node's first second answered with a p90 ten times its later
// seconds', and its latency p99 was twice a warmed node's (docs/BENCHMARKS.md). This moves that cost before the
// node takes traffic. Everything of it is real (HTTP, auth, actors, journal,
// store): the jobs are committed like any others. Nothing of it is seen: the organization's slug cannot be
// registered (it starts with an underscore), its events reach no listener (no metrics, streams, webhooks), its
// requests are neither rate-limited nor counted, and its rows go with it. A node that stops during its warm-up
// leaves the organization behind; the next warm-up of any node removes it.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { credentials, Metadata, type ClientDuplexStream } from '@grpc/grpc-js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import { AppError } from './errors.js';
import type { Log } from './log.js';
import { newApiKey } from './actors/org/api-key.js';
import { createOrganization } from './io/db/sql/createOrganization.js';
import { deleteOrganization } from './io/db/sql/deleteOrganization.js';
import { WARM_UP_SLUG_PREFIX, warmUpLeftovers } from './io/db/sql/warmUpLeftovers.js';
import { loadQueueV1 } from './io/grpc/proto.js';
import type { Store } from './io/db/store.js';
import type { Queues } from './app/queues.js';
import type { ActorPool } from './runtime/actor-pool.js';
import { ORG_ACTOR } from './runtime/protocol.js';

/** A leftover is an organization whose warm-up began this long ago: a warm-up lasts WARM_UP_MS at most. */
const LEFTOVER_AGE_MS = 10 * 60_000;
/** Ids tried for an organization (and names for its queue) whose actors this node serves, in a cluster. */
const PLACE_TRIES = 10_000;

export interface WarmUpDeps {
  config: Config;
  store: Store;
  actors: ActorPool;
  /** Deletes the warm-up's queues (their actors drop them). */
  queues: Pick<Queues, 'delete'>;
  clock: Clock;
  log: Log;
  /** Drops the admission credit this node holds for an organization (it is about to be deleted). */
  forgetCredit(org: string): void;
  /** Starts HTTP and gRPC servers like the node's, on private loopback ports, for the warm-up's requests alone. */
  listen(): Promise<{ http: number; grpc: number; close(): Promise<void> }>;
}

export interface WarmUpReport {
  /** Jobs completed over HTTP and over gRPC. */
  jobs: number;
  grpc: number;
  /** One per actor host of this node and API. */
  queues: number;
  ms: number;
}

/** When the warm-up's loops stop: at the deadline (performance.now()), or at the first failure of any. */
interface Limit {
  deadline: number;
  failed: boolean;
}

/** Runs the warm-up; never throws (a failed warm-up only leaves the node cold). null: none ran. */
export async function warmUp(d: WarmUpDeps): Promise<WarmUpReport | null> {
  if (d.config.warmUpJobs === 0) return null;
  try {
    await removeLeftovers(d, new Date(d.clock.now() - LEFTOVER_AGE_MS));
  } catch (err) {
    d.log.warn('could not remove the organizations of earlier warm-ups', err);
  }
  const place = placeOnThisNode(d.actors);
  if (!place) {
    d.log.info('no warm-up: this node serves no shard yet');
    return null;
  }
  const { key, digest, prefix } = newApiKey(d.config.production);
  d.actors.silence(place.org);
  const started = performance.now();
  let done = 0;
  let viaGrpc = 0;
  try {
    await createOrganization(d.store, {
      id: place.org,
      name: 'Sluice warm-up (internal; deleted when its node has started)',
      slug: `${WARM_UP_SLUG_PREFIX}${place.org}`,
      plan: 'enterprise',
      keyId: randomUUID(),
      keyName: 'warm-up',
      keyDigest: digest,
      keyPrefix: prefix,
      at: new Date(d.clock.now()),
    });
    const servers = await d.listen();
    try {
      const limit: Limit = { deadline: performance.now() + d.config.warmUpMs, failed: false };
      const grpcJobs = Math.floor(d.config.warmUpJobs / 8);
      // Both parts end before the servers close and the organization goes (the first failure ends both).
      const [viaHttp, grpc] = await Promise.allSettled([
        driveHttp(servers.http, key, place.queues, d.config.warmUpJobs - grpcJobs, limit),
        driveGrpc(servers.grpc, key, place.grpcQueues, grpcJobs, limit),
      ]);
      if (viaHttp.status === 'rejected') throw viaHttp.reason;
      if (grpc.status === 'rejected') throw grpc.reason;
      [done, viaGrpc] = [viaHttp.value, grpc.value];
    } finally {
      await servers.close();
    }
  } catch (err) {
    d.log.warn('the warm-up failed: the node starts cold', err);
  } finally {
    await remove(d, { id: place.org, queues: [...place.queues, ...place.grpcQueues], live: null }).catch((err) =>
      d.log.warn('could not delete the warm-up organization: the next warm-up will', err),
    );
  }
  const report = { jobs: done + viaGrpc, grpc: viaGrpc, queues: place.queues.length + place.grpcQueues.length, ms: Math.round(performance.now() - started) };
  d.log.info(`warmed up: ${report.jobs} jobs through the APIs (${report.grpc} over gRPC) in ${report.ms} ms`, undefined, report);
  return report;
}

/**
 * An organization id whose actor lives on this node, and for each of this node's actor hosts (threads) a queue
 * whose actor lives there, one set for each API: every host's code is warmed, not only one's.
 */
function placeOnThisNode(actors: ActorPool): { org: string; queues: string[]; grpcQueues: string[] } | null {
  let org: string | null = null;
  for (let i = 0; i < PLACE_TRIES && org === null; i++) {
    const id = randomUUID();
    if (actors.hostOf(id, ORG_ACTOR) !== null) org = id;
  }
  if (org === null) return null;
  const perHost = (prefix: string): string[] => {
    const byHost = new Map<number, string>();
    for (let i = 0; i < PLACE_TRIES && byHost.size < actors.hosts; i++) {
      const host = actors.hostOf(org, `${prefix}-${i}`);
      if (host !== null && !byHost.has(host)) byHost.set(host, `${prefix}-${i}`);
    }
    return [...byHost.values()];
  };
  const queues = perHost('warm-up');
  return queues.length === 0 ? null : { org, queues, grpcQueues: perHost('warm-up-grpc') };
}

async function removeLeftovers(d: WarmUpDeps, before: Date): Promise<void> {
  for (const left of await warmUpLeftovers(d.store, before)) {
    d.actors.silence(left.id);
    await remove(d, left);
    d.log.info('removed the organization of a warm-up that did not finish', undefined, { organization_id: left.id });
  }
}

/**
 * Cancels the organization's live jobs through their actors, deletes its queues the same way (the actors drop
 * them), then deletes the organization. `live` null: read them from the store.
 */
async function remove(d: WarmUpDeps, org: { id: string; queues: string[]; live: Array<{ id: string; queue: string }> | null }): Promise<void> {
  const live = org.live ?? (await warmUpLeftovers(d.store, null, org.id))[0]?.live ?? [];
  // Straight to the actor, not Jobs.cancel: the queue is known (no lookup per job), and a job that finished
  // meanwhile (null) is no error here.
  for (const job of live) await d.actors.ask(org.id, job.queue, 'cancel', { id: job.id });
  for (const queue of new Set([...org.queues, ...live.map((j) => j.queue)])) {
    await d.queues.delete(org.id, queue).catch((err: unknown) => {
      // A queue that was never created (the warm-up stopped before its first job) is not an error.
      if (!(err instanceof AppError && err.code === 'NOT_FOUND')) throw err;
    });
  }
  d.forgetCredit(org.id);
  await deleteOrganization(d.store, org.id);
}

/**
 * The warm-up's HTTP load, spread over the queues: half the jobs enqueued one at a time (16 in flight), half in batches
 * of 50; per queue four workers long-polling for ten jobs at a time, two completing each job on its own, one
 * acknowledging the ten in one call and one also claiming the next ten with that acknowledgement. Returns the jobs
 * completed. The first failure stops every loop.
 */
async function driveHttp(port: number, key: string, queues: string[], jobs: number, limit: Limit): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const call = (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> =>
    new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          agent,
          headers: { authorization: `Bearer ${key}`, ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  const ok = async (method: string, path: string, body?: unknown): Promise<any> => {
    const r = await call(method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const over = (): boolean => limit.failed || performance.now() > limit.deadline;
  const loop = async (body: () => Promise<void>): Promise<void> => {
    try {
      await body();
    } catch (err) {
      limit.failed = true;
      throw err;
    }
  };
  const queueOf = (n: number): string => queues[n % queues.length]!;
  let completed = 0;
  let singles = Math.ceil(jobs / 2);
  let batched = jobs - singles;
  let batches = 0;
  const producers = [
    ...Array.from({ length: 16 }, () =>
      loop(async () => {
        while (singles > 0 && !over()) {
          const n = singles--;
          await ok('POST', '/api/v1/jobs', { queue_name: queueOf(n), payload: { n } });
        }
      }),
    ),
    ...Array.from({ length: 2 }, () =>
      loop(async () => {
        while (batched > 0 && !over()) {
          const n = Math.min(50, batched);
          batched -= n;
          const queue = queueOf(batches++);
          await ok('POST', '/api/v1/jobs/bulk', { jobs: Array.from({ length: n }, (_, i) => ({ queue_name: queue, payload: { n: i } })) });
        }
      }),
    ),
  ];
  const workers = queues.flatMap((queue) =>
    [0, 1, 2, 3].map((w) =>
      loop(async () => {
        const worker_id = `warm-up-${w}`;
        let claimed: any[] = [];
        while (completed < jobs && !over()) {
          if (claimed.length === 0) claimed = (await ok('POST', '/api/v1/jobs/claim', { queue_name: queue, worker_id, limit: 10, wait_ms: 100 })).jobs;
          if (claimed.length === 0) continue;
          const batch = claimed;
          claimed = [];
          if (w < 2) {
            await Promise.all(batch.map((job) => ok('POST', `/api/v1/jobs/${job.id}/complete`, { worker_id, lease_id: job.lease_id, result: { ok: true } })));
          } else {
            const r = await ok('POST', '/api/v1/jobs/complete', {
              worker_id,
              jobs: batch.map((job) => ({ id: job.id, lease_id: job.lease_id, result: { ok: true } })),
              ...(w === 3 ? { claim: { queue_name: queue, limit: 10 } } : {}),
            });
            claimed = r.jobs ?? [];
          }
          completed += batch.length;
        }
      }),
    ),
  );
  // Every loop has ended before the organization is removed: none has a request in flight that could add a job.
  const ended = await Promise.allSettled([...producers, ...workers]);
  agent.destroy();
  const failure = ended.find((e) => e.status === 'rejected');
  if (failure) throw failure.reason;
  return completed;
}

/**
 * The warm-up's gRPC load: `jobs` enqueued by the unary Enqueue (16 in flight), worked by one ProcessJobs stream per
 * queue that keeps 20 jobs asked for and completes each on the stream. Returns the jobs completed.
 */
async function driveGrpc(port: number, key: string, queues: string[], jobs: number, limit: Limit): Promise<number> {
  if (jobs === 0 || queues.length === 0) return 0;
  const client = new (loadQueueV1().QueueService)(`127.0.0.1:${port}`, credentials.createInsecure()) as any;
  const md = new Metadata();
  md.set('x-api-key', key);
  let failed: Error | null = null;
  const fail = (err: Error): void => {
    failed ??= err;
    limit.failed = true;
  };
  const over = (): boolean => limit.failed || performance.now() > limit.deadline;
  let completed = 0;
  let toSend = jobs;
  const producers = Array.from({ length: 16 }, async () => {
    while (toSend > 0 && !over()) {
      const n = toSend--;
      await new Promise<void>((resolve, reject) =>
        client.Enqueue({ queueName: queues[n % queues.length], payload: { fields: { n: { numberValue: n } } } }, md, (err: Error | null) =>
          err ? reject(err) : resolve(),
        ),
      ).catch(fail);
    }
  });
  const streams = queues.map(
    (queue) =>
      new Promise<void>((resolve) => {
        const call: ClientDuplexStream<any, any> = client.ProcessJobs(md);
        let ref = 0;
        let freed = 0;
        const ask = (n: number) => call.write({ ref: String(ref++), claim: { queueName: queue, workerId: 'warm-up-grpc', batchSize: n } });
        const finish = () => {
          clearInterval(watch);
          call.cancel();
          resolve();
        };
        // A stream waiting for jobs that will not come (the time is up, or the others took them) is ended from here.
        const watch = setInterval(() => {
          if (over() || completed >= jobs) finish();
        }, 20);
        call.on('data', (m: any) => {
          if (m.job) {
            call.write({ ref: String(ref++), complete: { jobId: m.job.id, workerId: 'warm-up-grpc', leaseId: m.job.leaseId, result: { fields: { ok: { boolValue: true } } } } });
          } else if (m.ack?.complete) {
            completed++;
            if (++freed >= 10 && !over()) {
              ask(freed);
              freed = 0;
            }
          }
        });
        call.on('error', (err: Error & { code?: number }) => {
          // CANCELLED (1) is this side's own cancel.
          if (err.code !== 1) fail(err);
          finish();
        });
        call.on('end', finish);
        ask(20);
      }),
  );
  await Promise.all([...producers, ...streams]);
  client.close();
  if (failed) throw failed;
  return completed;
}
