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
import { Authenticator } from './io/http/auth.js';
import { Tokens } from './io/http/tokens.js';
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
import type { Services } from './io/http/routes/services.js';
import { Router } from './io/http/router.js';
import { HttpServer } from './io/http/server.js';
import { openApiDocument } from './io/http/openapi.js';
import { ActorPool, type LinkFactory } from './runtime/actor-pool.js';
import { bootstrap } from './runtime/bootstrap.js';
import { loadJwtSecret } from './runtime/jwt-secret.js';
import { JobPlaces } from './runtime/job-places.js';
import { Quotas } from './runtime/quotas.js';
import { EventBus } from './runtime/event-bus.js';
import { ApiCalls } from './runtime/api-calls.js';
import { RateLimiter } from './io/http/rate-limit.js';
import { usageRoutes } from './io/http/routes/usage.js';
import { RetentionSweeper } from './runtime/retention.js';
import { spawnWorker } from './runtime/spawn.js';
import { WorkflowCoordinator } from './runtime/workflows.js';
import { workflowRoutes } from './io/http/routes/workflows.js';

const VERSION = (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface NodeOptions {
  config: Config;
  clock?: Clock;
  log?: Log;
}

export interface SluiceNode {
  readonly url: string;
  readonly port: number;
  readonly store: Store;
  readonly pool: ActorPool;
  /** The background sweep of finished jobs past their plan's retention window. */
  readonly retention: RetentionSweeper;
  /** Workflow coordination (tests wait on it and reconcile at moments they choose). */
  readonly workflows: WorkflowCoordinator;
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
  const log = opts.log ?? createLog(config.logLevel);
  const setup = config.databaseUrl ? await openPostgres(config.databaseUrl, config) : await openEmbedded(config);
  const { store } = setup;
  let pool: ActorPool | null = null;
  let http: HttpServer | null = null;
  let apiCalls: ApiCalls | null = null;
  let mailer: Mailer | null = null;
  let workflows: WorkflowCoordinator | null = null;
  const retention = new RetentionSweeper({ store, clock, log, planOverrides: config.planOverrides });
  try {
    const bootstrapKey = await bootstrap(store, config, clock.now(), (m) => log.info(m));
    pool = new ActorPool(config, clock, setup.makeLink);
    await pool.start();
    const tokens = new Tokens(
      loadJwtSecret(config, (m) => log.info(m)),
      clock,
      config.jwtAccessTtlSeconds,
      config.jwtRefreshTtlSeconds,
    );
    const auth = new Authenticator({ store, clock, tokens, log });
    await auth.start();
    mailer = createMailer(config, log);
    const quotas = new Quotas(pool, clock);
    const events = new EventBus(clock, (err) => log.error('event listener failed', err));
    pool.onEvents((e) => events.fromActors(e));
    const services: Services = { config, clock, pool, store, places: new JobPlaces(store), quotas, auth, mailer, events };
    const flows = (workflows = new WorkflowCoordinator({ pool, store, quotas, events, places: services.places, clock, log }));
    const limiter = new RateLimiter(store, clock, config.planOverrides);
    const calls = (apiCalls = new ApiCalls(store, clock, log));
    const router = new Router().add(
      ...healthRoutes(services),
      ...jobRoutes(services),
      ...jobQueryRoutes(services),
      ...dlqRoutes(services),
      ...queueRoutes(services),
      ...queueQueryRoutes(services),
      ...usageRoutes(services, { limiter, apiCalls: calls }),
      ...apiKeyRoutes(services),
      ...authRoutes(services),
      ...organizationRoutes(services),
      ...workflowRoutes(services, flows),
    );
    let openapi: Record<string, unknown> | null = null;
    router.add({
      method: 'GET',
      path: '/api/v1/openapi.json',
      permission: null,
      handler: () => ({ status: 200, body: (openapi ??= openApiDocument(router.list(), VERSION)) }),
      doc: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1' } } },
    });
    /** Every authenticated request: the organization's rate limit, and the count behind its usage statistics. */
    const admit = async (org: string) => {
      try {
        await limiter.admit(org);
        calls.count(org, false);
      } catch (err) {
        calls.count(org, true);
        throw err;
      }
    };
    http = new HttpServer(router, auth, (m, e) => log.error(m, e), admit);
    const port = await http.listen(config.host, config.port);
    const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
    log.info(`listening on http://${host}:${port} (${config.databaseUrl ? 'PostgreSQL' : `embedded store in ${config.dataDir}`}, ${config.actorThreads} actor threads)`);
    retention.start();
    calls.start();
    flows.start();
    const p = pool;
    const h = http;
    const m = mailer;
    let stopped: Promise<void> | null = null;
    return {
      url: `http://${host}:${port}`,
      port,
      store,
      pool: p,
      retention,
      workflows: flows,
      bootstrapKey,
      stop: () =>
        (stopped ??= (async () => {
          h.close();
          await retention.stop();
          await flows.stop();
          await calls.stop();
          await m.close();
          quotas.stop(); // unused admission credit goes back before the actor threads drain
          await p.stop();
          await setup.close();
        })()),
    };
  } catch (err) {
    http?.close();
    await retention.stop();
    await workflows?.stop().catch(() => {});
    await apiCalls?.stop().catch(() => {});
    await mailer?.close().catch(() => {});
    await pool?.stop().catch(() => {});
    await setup.close().catch(() => {});
    throw err;
  }
}
