// The composition root: one Sluice node from a Config and a Clock. main.ts runs it; tests start whole nodes
// on ephemeral ports with a ManualClock and stop them cleanly.
import fs from 'node:fs';
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { createLog, type Log } from './log.js';
import { MIGRATION_LOCK_KEY, migrate } from './io/db/migrate.js';
import { PgStore } from './io/db/pg.js';
import { lockDataDir } from './io/db/pglite.js';
import { RemoteStore } from './io/db/remote.js';
import type { Store } from './io/db/store.js';
import { LocalInvalidations, PgInvalidations, type InvalidationChannel } from './io/db/invalidations.js';
import { createMailer, type Mailer } from './io/mail/mailer.js';
import { apiKeyRoutes } from './io/http/routes/api-keys.js';
import { authRoutes } from './io/http/routes/auth.js';
import { organizationRoutes } from './io/http/routes/organizations.js';
import { healthRoutes } from './io/http/routes/health.js';
import { dlqRoutes } from './io/http/routes/dlq.js';
import { jobQueryRoutes } from './io/http/routes/job-queries.js';
import { jobRoutes } from './io/http/routes/jobs.js';
import { queueQueryRoutes } from './io/http/routes/queue-queries.js';
import { queueRoutes } from './io/http/routes/queues.js';
import { scheduleRoutes } from './io/http/routes/schedules.js';
import { outgoingWebhookRoutes } from './io/http/routes/outgoing-webhooks.js';
import { Deliverer } from './io/webhooks/deliverer.js';
import { policyOf } from './io/webhooks/ssrf.js';
import { Router } from './io/http/router.js';
import { HttpServer } from './io/http/server.js';
import { adminKeyValid } from './io/http/admin.js';
import { openApiDocument } from './io/http/openapi.js';
import { OpenApiDocument } from './io/http/schemas.js';
import { ActorPool, type LinkFactory } from './runtime/actor-pool.js';
import { Cluster } from './runtime/cluster/cluster.js';
import { JobPlaces } from './runtime/job-places.js';
import { Quotas } from './app/quotas.js';
import { warmUp } from './warm-up.js';
import { createApp, type App } from './app/app.js';
import type { AppContext } from './app/context.js';
import type { Deliveries } from './app/deliveries.js';
import { EventBus } from './app/events.js';
import { bootstrap } from './app/organizations.js';
import { loadJwtSecret, Tokens } from './app/tokens.js';
import type { ApiCalls } from './app/api-calls.js';
import { admission } from './app/rate-limit.js';
import { usageRoutes } from './io/http/routes/usage.js';
import { metricsRoutes } from './io/http/routes/metrics.js';
import { dashboardRoutes } from './io/http/routes/dashboard.js';
import { Metrics } from './app/metrics.js';
import { eventRoutes, eventSocket } from './io/http/routes/events.js';
import { StreamHub } from './io/events/hub.js';
import { EventFanOut } from './io/events/fan-out.js';
import { QueueStatsFeed } from './io/events/queue-stats.js';
import { RetentionSweeper } from './app/retention.js';
import { analyzeJobsIfStale } from './io/db/sql/analyzeJobsIfStale.js';
import type { Workflows } from './app/workflows.js';
import { spawnWorker } from './runtime/spawn.js';
import { workerRoutes } from './io/http/routes/workers.js';
import { incomingWebhookRoutes } from './io/http/routes/incoming-webhooks.js';
import { WorkerReaper } from './app/worker-reaper.js';
import { Periodic } from './app/periodic.js';
import { workflowRoutes } from './io/http/routes/workflows.js';
import { uiRoutes } from './io/http/routes/ui.js';
import { GrpcServer } from './io/grpc/server.js';

const VERSION = (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** How long a stopping node waits for the requests it is handling (a claim may long-poll up to 30 s: it is cut). */
const SHUTDOWN_GRACE_MS = 5_000;

export interface NodeOptions {
  config: Config;
  clock?: Clock;
  log?: Log;
}

export interface SluiceNode {
  readonly url: string;
  readonly port: number;
  /** The port the gRPC API listens on. */
  readonly grpcPort: number;
  /** This node's id in the cluster's registry (the owner named in the shards table). */
  readonly nodeId: string;
  readonly store: Store;
  readonly pool: ActorPool;
  /** The background sweep of finished jobs past their plan's retention window. */
  readonly retention: RetentionSweeper;
  /** Public events, and the real-time streams open on this node. */
  readonly events: EventBus;
  readonly streams: StreamHub;
  /** Outgoing webhook and completion callback deliveries (tests prune its history at a moment they choose). */
  readonly webhooks: Deliveries;
  /** Workflow coordination (tests wait on it and reconcile at moments they choose). */
  readonly workflows: Workflows;
  /** The key created on first boot, when this boot created it. */
  readonly bootstrapKey: string | null;
  stop(): Promise<void>;
}

interface StoreSetup {
  store: Store;
  makeLink: LinkFactory;
  close(): Promise<void>;
}

async function openPostgres(url: string, config: Config): Promise<StoreSetup> {
  const store = new PgStore(url, config.pgPoolSize);
  await store.withAdvisoryLock(MIGRATION_LOCK_KEY, migrate);
  return {
    store,
    makeLink: () => ({ link: { kind: 'pg', url, poolSize: config.pgPoolSize }, transfer: [] }),
    close: () => store.close(),
  };
}

/** PGlite lives in its own storage thread; every other thread gets a MessagePort to it. */
async function openEmbedded(config: Config): Promise<StoreSetup> {
  const unlock = lockDataDir(config.dataDir);
  const worker = spawnWorker(new URL('./runtime/storage-thread.ts', import.meta.url), {
    workerData: { dir: path.join(config.dataDir, 'pglite') },
  });
  try {
    await new Promise<void>((resolve, reject) => {
      worker.once('message', (m: { t: string; message?: string }) =>
        m.t === 'ready' ? resolve() : reject(new Error(`embedded store failed to open: ${m.message}`)),
      );
      worker.once('error', reject);
    });
  } catch (err) {
    await worker.terminate();
    unlock();
    throw err;
  }
  const connect = () => {
    const { port1, port2 } = new MessageChannel();
    worker.postMessage({ t: 'serve', port: port1 }, [port1]);
    return port2;
  };
  const store = new RemoteStore(connect());
  return {
    store,
    makeLink: () => {
      const port = connect();
      return { link: { kind: 'remote', port }, transfer: [port] };
    },
    close: async () => {
      await new Promise<void>((resolve) => {
        worker.once('message', () => resolve());
        worker.postMessage({ t: 'close' });
      });
      await store.close();
      await worker.terminate();
      unlock();
    },
  };
}

export async function startNode(opts: NodeOptions): Promise<SluiceNode> {
  const { config } = opts;
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLog(config.logLevel, config.logFormat);
  const setup = config.databaseUrl ? await openPostgres(config.databaseUrl, config) : await openEmbedded(config);
  const { store } = setup;
  let pool: ActorPool | null = null;
  let cluster: Cluster | null = null;
  let http: HttpServer | null = null;
  let grpc: GrpcServer | null = null;
  let apiCalls: ApiCalls | null = null;
  let mailer: Mailer | null = null;
  const channel: InvalidationChannel = config.databaseUrl ? new PgInvalidations(config.databaseUrl, store, log) : new LocalInvalidations();
  let hub: StreamHub | null = null;
  let stats: QueueStatsFeed | null = null;
  let reaper: WorkerReaper | null = null;
  let orphans: Periodic<number> | null = null;
  let deliverer: Deliverer | null = null;
  let webhooks: Deliveries | null = null;
  let built: App | null = null;
  const retention = new RetentionSweeper({ store, clock, log, planOverrides: config.planOverrides });
  try {
    const bootstrapKey = await bootstrap(store, config, clock.now(), (m) => log.info(m));
    // Before the queues are rebuilt: their reads are planned on these statistics (a bulk load may have left them stale).
    if (await analyzeJobsIfStale(store)) log.info('the statistics of the jobs table were stale: analyzed it');
    const c = (cluster = new Cluster({ config, store, log }));
    const actors = (pool = new ActorPool(config, clock, setup.makeLink, c.nodeId));
    await actors.start();
    await c.start(pool);
    const tokens = new Tokens(
      loadJwtSecret(config, (m) => log.info(m)),
      clock,
      config.jwtAccessTtlSeconds,
      config.jwtRefreshTtlSeconds,
    );
    mailer = createMailer(config, log);
    const quotas = new Quotas(pool, clock);
    const events = new EventBus(clock, (err) => log.error('event listener failed', err));
    pool.onEvents((e) => events.fromActors(e));
    const metrics = new Metrics({ actorThreads: config.actorThreads, store, clock, log, actors: pool });
    pool.onEvents((e) => metrics.onEvents(e));
    pool.onStats((st) => metrics.onCommits(st));
    deliverer = new Deliverer({
      clock,
      policy: policyOf(config),
      retryUnitMs: config.webhookRetryUnitMs,
      timeoutMs: config.webhookTimeoutMs,
      concurrency: config.webhookConcurrency,
    });
    const ctx: AppContext = {
      config,
      clock,
      log,
      actors: pool,
      store,
      places: new JobPlaces(store),
      quotas,
      events,
      invalidations: channel,
      deliverer,
      tokens,
      mailer,
      nodeId: c.nodeId,
    };
    const app = (built = createApp(ctx, VERSION));
    const deliveries = (webhooks = app.deliveries);
    deliveries.observe(metrics);
    const { auth, limiter } = app;
    await channel.start({
      apply: (inv) => {
        auth.apply(inv);
        if (inv.kind === 'org') limiter.invalidate(inv.id);
        else if (inv.kind === 'webhooks') webhooks?.forget(inv.id);
        else if (inv.kind === 'schedule') built?.scheduler.changed(inv.organizationId, inv.id).catch((err) => log.error('could not read a changed schedule', err));
      },
      resync: () => {
        auth.resync();
        limiter.invalidateAll();
        webhooks?.forget(null);
        // Schedule changes may have been missed: the leader loads them all again.
        if (cluster?.leader) built?.scheduler.lead(true).catch((err) => log.error('could not reload the schedules', err));
      },
    });
    await auth.start();
    app.scheduler.start();
    const calls = (apiCalls = app.apiCalls);
    const streams = (hub = new StreamHub(events, clock, auth, config.streamsPerOrg));
    // Subscribers on every node hear the events of every node; stream caps count every node's streams.
    new EventFanOut(c, events, streams).start();
    const queueStats = (stats = new QueueStatsFeed(app.jobs, events, clock, streams, log));
    const router = new Router().add(
      ...healthRoutes(store, () => actors.loaded),
      ...jobRoutes(app),
      ...jobQueryRoutes(app),
      ...dlqRoutes(app),
      ...queueRoutes(app),
      ...queueQueryRoutes(app),
      ...usageRoutes(app, config),
      ...apiKeyRoutes(app),
      ...authRoutes(app),
      ...organizationRoutes(app, config),
      ...metricsRoutes(config, metrics),
      ...eventRoutes(app, { hub: streams, stats: queueStats }),
      ...scheduleRoutes(app),
      ...workerRoutes(app),
      ...incomingWebhookRoutes(app),
      ...outgoingWebhookRoutes(app),
      ...workflowRoutes(app),
      ...dashboardRoutes(app),
      ...uiRoutes(),
    );
    let openapi: Record<string, unknown> | null = null;
    router.add({
      method: 'GET',
      path: '/api/v1/openapi.json',
      permission: null,
      handler: () => ({ status: 200, body: (openapi ??= openApiDocument(router.list(), VERSION)) }),
      doc: {
        operationId: 'getOpenApiDocument',
        summary: 'This document',
        responses: { 200: { description: 'OpenAPI 3.1', schema: OpenApiDocument } },
      },
    });
    const admit = admission(limiter, calls, (admitted) => metrics.onRequest(admitted));
    const observe = (method: string, route: string, status: number, seconds: number) => metrics.onHttp(method, route, status, seconds);
    const h0 = (http = new HttpServer(router, auth, log, admit, {
      version: VERSION,
      isAdminKey: (key) => adminKeyValid(key, config),
      maxDepth: config.bodyMaxDepth,
      maxValues: config.bodyMaxValues,
      observe,
    }).webSocket(eventSocket(streams)));
    // Before it listens: a fresh process compiles its hot path under its first load (src/warm-up.ts). A manual
    // clock (tests) would hold the warm-up's long polls until the test moves it.
    if (!clock.manual) {
      await warmUp({
        config,
        store,
        actors,
        queues: app.queues,
        clock,
        log,
        forgetCredit: (org) => quotas.forget(org),
        listen: async () => {
          // Like the node's servers, but neither admitting (rate limits, call counts) nor observed (metrics).
          const s = new HttpServer(router, auth, log, async () => {}, {
            version: VERSION,
            isAdminKey: () => false,
            maxDepth: config.bodyMaxDepth,
            maxValues: config.bodyMaxValues,
          });
          const gs = new GrpcServer({ app, admit: async () => {}, log }, undefined, { keepaliveMs: 0, keepaliveTimeoutMs: 0 });
          const ports = { http: await s.listen('127.0.0.1', 0), grpc: await gs.listen('127.0.0.1', 0) };
          return { ...ports, close: async () => void (await Promise.all([s.close(), gs.stop()])) };
        },
      });
    }
    metrics.countStreams('sse', () => h0.openStreams.sse);
    metrics.countStreams('websocket', () => h0.openStreams.websocket);
    const port = await http.listen(config.host, config.port);
    const g = (grpc = new GrpcServer(
      { app, admit, log },
      (method, code, seconds) => metrics.onGrpc(method, code, seconds),
      { keepaliveMs: config.grpcKeepaliveMs, keepaliveTimeoutMs: config.grpcKeepaliveTimeoutMs },
    ));
    metrics.countStreams('grpc', () => g.openStreams);
    const grpcPort = await g.listen(config.host, config.grpcPort);
    const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
    // Say what is bound, not only a URL to click: 0.0.0.0 is every interface, 127.0.0.1 this machine only.
    const bound = config.host === '0.0.0.0' ? '0.0.0.0, every interface' : config.host === '127.0.0.1' ? '127.0.0.1, this machine only' : config.host;
    log.info(
      `listening on http://${host}:${port} (HTTP, dashboard at /ui/) and ${host}:${grpcPort} (gRPC), bound to ${bound}; ` +
        `${config.databaseUrl ? 'PostgreSQL' : `embedded store in ${config.dataDir}`}, ${config.actorThreads === 0 ? 'actors on the main thread' : `${config.actorThreads} actor threads`}, version ${VERSION}`,
      undefined,
      { address: config.host, http_port: port, grpc_port: grpcPort, version: VERSION },
    );
    calls.start();
    const r = (reaper = new WorkerReaper({ store, clock, quotas, events, log, staleSeconds: config.workerStaleSeconds }));
    // Deliveries whose node is gone are taken over by the leader: at once when it takes the lead, then as
    // often as a node can be found gone.
    const adoption = (orphans = new Periodic({ name: 'webhook delivery adoption', intervalMs: config.clusterLeaseMs, run: () => deliveries.adopt(), log }));
    // The cluster-wide tasks run on the one node that holds the leader lease (every node alone leads itself).
    const lead = async (on: boolean): Promise<void> => {
      for (const task of [retention, r, adoption, app.workflows]) {
        if (on) task.start();
        else task.pause();
      }
      if (on) void adoption.runOnce().catch((err) => log.error('could not adopt the deliveries of nodes that are gone', err));
      await app.scheduler.lead(on).catch((err) => log.error(on ? 'could not load the schedules' : 'could not stop firing schedules', err));
    };
    c.onLeader((on) => void lead(on));
    // A node that leads from the start has its schedules loaded before it says it is up.
    if (c.leader) await lead(true);
    deliveries.start();
    const p = pool;
    const wh = webhooks;
    const h = http;
    const m = mailer;
    let stopped: Promise<void> | null = null;
    return {
      url: `http://${host}:${port}`,
      port,
      grpcPort,
      nodeId: c.nodeId,
      store,
      pool: p,
      retention,
      events,
      streams,
      webhooks: wh,
      workflows: app.workflows,
      bootstrapKey,
      stop: () =>
        (stopped ??= (async () => {
          // Ends open streams and WebSockets at once and answers what is in flight; the long polls parked on the
          // actors are answered now, empty (their answers close their connections), not at the end of the grace, and
          // so are those this node forwarded to others (they answer through it).
          const closing = h.close(SHUTDOWN_GRACE_MS);
          c.unparkElsewhere();
          await p.unpark();
          await closing;
          await g.stop();
          await wh.stop(); // deliveries cut short stay pending: the leader adopts them
          streams.stop();
          queueStats.stop();
          await app.scheduler.stop();
          await retention.stop();
          await adoption.stop();
          await r.stop();
          await app.workflows.stop();
          await calls.stop();
          await m.close();
          quotas.stop(); // unused admission credit goes back before the actor threads drain
          await c.stop(); // hands the shards over once what they wrote is committed
          await p.stop();
          await channel.close();
          await setup.close();
        })()),
    };
  } catch (err) {
    await http?.close();
    await grpc?.stop();
    hub?.stop();
    stats?.stop();
    await built?.scheduler.stop();
    await (webhooks?.stop() ?? deliverer?.stop());
    await retention.stop();
    await reaper?.stop();
    await orphans?.stop();
    await built?.workflows.stop().catch(() => {});
    await apiCalls?.stop().catch(() => {});
    await mailer?.close().catch(() => {});
    await cluster?.stop().catch(() => {});
    await pool?.stop().catch(() => {});
    await channel.close();
    await setup.close().catch(() => {});
    throw err;
  }
}
