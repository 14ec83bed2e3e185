// The only module that reads process.env. Every setting is parsed and checked at once, all problems are
// reported together, and the result is frozen: the rest of the code receives compiled values only.
import os from 'node:os';
import path from 'node:path';
import { PLAN_RESOURCES, PLAN_TIERS, type PlanOverrides, type PlanResource, type PlanTier } from './actors/org/plans.js';

export interface Config {
  /** The address both APIs bind: 127.0.0.1 by default outside production, 0.0.0.0 in production (DESIGN §2). */
  readonly host: string;
  readonly port: number;
  /** The gRPC API's port (0: any free port). */
  readonly grpcPort: number;
  /**
   * HTTP/2 keepalive pings the gRPC server sends each connection (0: none), and how long one may go unanswered
   * before the connection is dropped: a client gone silently then ends its streams, whose later claims go back.
   */
  readonly grpcKeepaliveMs: number;
  readonly grpcKeepaliveTimeoutMs: number;
  /** Unset: the embedded PGlite store in dataDir. */
  readonly databaseUrl: string | null;
  readonly dataDir: string;
  readonly production: boolean;
  readonly nodeEnv: string;
  /** One retry "minute": the backoff is min(2^retry_count, 60) units. */
  readonly retryUnitMs: number;
  /** Worker threads for the actors; 0: the actors run on the main thread (one host, inline-thread.ts). */
  readonly actorThreads: number;
  readonly defaultMaxRetries: number;
  readonly defaultTimeoutSeconds: number;
  /** Connections per actor thread (its commits in flight, and actors loading) and for the main thread. */
  readonly pgPoolSize: number;
  /** Group commits each actor thread keeps in flight at once (1: one at a time). */
  readonly commitPipeline: number;
  /**
   * Ready jobs a queue actor holds in memory, the head of its claim order; the rest of the backlog stays in the
   * store and is read back page by page as claims drain the window (docs/architecture.md, "Paging").
   */
  readonly queueWindow: number;
  /** Memory for the rows of new jobs, kept so that their claims need not read them back (ROW_CACHE_MB; 0: none). */
  readonly rowCacheBytes: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** text: one human line per event; json: one JSON object per line (log shippers). */
  readonly logFormat: 'text' | 'json';
  /** HS256 secret for JWTs. Null outside production: generated once and kept in dataDir. */
  readonly jwtSecret: string | null;
  readonly jwtAccessTtlSeconds: number;
  readonly jwtRefreshTtlSeconds: number;
  /** Enables the admin API (X-Admin-Key). Null: the admin API answers 401 to everyone. */
  readonly adminApiKey: string | null;
  /** open: anyone may create an organization; closed: only with X-Admin-Key. */
  readonly registrationMode: 'open' | 'closed';
  /** When set, GET /metrics needs `Authorization: Bearer <token>`; unset, it is open. */
  readonly metricsToken: string | null;
  /** smtp:// or smtps:// URL; null: login mails go to the log. */
  readonly smtpUrl: string | null;
  readonly mailFrom: string;
  /** PLAN_<TIER>_<RESOURCE> settings: null means unlimited. */
  readonly planOverrides: PlanOverrides;
  /** Open SSE streams and WebSockets per organization on one node. */
  readonly streamsPerOrg: number;
  /** A worker whose last heartbeat is older than this is removed by the stale-worker reaper. */
  readonly workerStaleSeconds: number;
  /** The base URL clients reach this service at (webhook URLs); null: taken from the request's Host header. */
  readonly publicUrl: string | null;
  /** Outgoing webhooks and completion callbacks: attempts of one delivery wait 1, 2, 4, 8 units. */
  readonly webhookRetryUnitMs: number;
  /** Per attempt. */
  readonly webhookTimeoutMs: number;
  /** Requests in flight, process-wide. */
  readonly webhookConcurrency: number;
  /** In production, let outgoing URLs reach private and loopback addresses (self-hosted on a private network). */
  readonly webhookAllowPrivate: boolean;
  /** Request bodies (and gRPC payloads) nested deeper than this are refused with 422 before any work. */
  readonly bodyMaxDepth: number;
  /** Shards of (organization, queue) across the cluster; every node of one database must use the same count. */
  readonly shardCount: number;
  /** A node that stops renewing its shard leases loses them after this long (PostgreSQL only). */
  readonly clusterLeaseMs: number;
  /** The node-to-node channel: where it listens (0: any free port) and the address peers are told to use. */
  readonly clusterHost: string;
  readonly clusterPort: number;
  /** host:port peers reach this node at; null: derived from clusterHost (or this machine's address) and the port. */
  readonly clusterAdvertise: string | null;
  /** Shared by every node of a cluster; null: this node runs on its own and refuses to share its database. */
  readonly clusterSecret: string | null;
  /** Request bodies holding more JSON values (object members and array elements) are refused with 422 unparsed. */
  readonly bodyMaxValues: number;
  /**
   * Jobs the node runs through its own HTTP API before it listens (src/warm-up.ts): a fresh process runs its hot
   * path unoptimised and compiles it under the first seconds of load, which is where a new node's slow answers
   * came from (docs/BENCHMARKS.md). 0: no warm-up.
   */
  readonly warmUpJobs: number;
  /** The warm-up stops after this long, whatever it has run. */
  readonly warmUpMs: number;
  /**
   * How long a node given SIGTERM or SIGINT may take to stop before it exits anyway (status 1): a store that no
   * longer answers would otherwise hold the process forever. Nothing acknowledged is lost by the exit (a reply
   * follows its commit), and the shards it held are taken over once their leases run out.
   */
  readonly stopTimeoutMs: number;
}



export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/**
 * One actor thread per core; on two cores or fewer, none: the actors then run on the main thread (0), where they
 * answered claims with lower latency and the same throughput on the 2-core machine of docs/BENCHMARKS.md, since a
 * message to a worker thread cost more there than the work it carried.
 */
export function defaultActorThreads(cores = os.availableParallelism()): number {
  return cores <= 2 ? 0 : cores;
}

/** The actor hosts of a node: one per actor thread, or the main thread's one when ACTOR_THREADS is 0. */
export function actorHosts(actorThreads: number): number {
  return Math.max(1, actorThreads);
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const str = (name: string, fallback: string): string => {
    const v = env[name];
    return v === undefined || v === '' ? fallback : v;
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name}=${JSON.stringify(raw)} must be an integer from ${min} to ${max}`);
      return fallback;
    }
    return n;
  };
  const oneOf = <T extends string>(name: string, fallback: T, allowed: readonly T[]): T => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!(allowed as readonly string[]).includes(raw)) {
      problems.push(`${name}=${JSON.stringify(raw)} must be one of ${allowed.join(', ')}`);
      return fallback;
    }
    return raw as T;
  };

  const databaseUrl = env.DATABASE_URL ? env.DATABASE_URL : null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const nodeEnv = str('NODE_ENV', 'development');
  const config: Config = {
    // Outside production the webhook SSRF guard is off (deliveries may call private addresses), so a development
    // node open to the network could be used to probe it: it listens on this machine only unless HOST says so.
    host: str('HOST', nodeEnv === 'production' ? '0.0.0.0' : '127.0.0.1'),
    port: int('PORT', 8080, 0, 65535),
    grpcPort: int('GRPC_PORT', 50051, 0, 65535),
    grpcKeepaliveMs: int('GRPC_KEEPALIVE_MS', 30_000, 0, 86_400_000),
    grpcKeepaliveTimeoutMs: int('GRPC_KEEPALIVE_TIMEOUT_MS', 10_000, 1, 600_000),
    databaseUrl,
    dataDir: path.resolve(str('DATA_DIR', './data')),
    production: nodeEnv === 'production',
    nodeEnv,
    retryUnitMs: int('RETRY_UNIT_MS', 60_000, 1, 3_600_000),
    actorThreads: int('ACTOR_THREADS', defaultActorThreads(), 0, 64),
    defaultMaxRetries: int('DEFAULT_MAX_RETRIES', 3, 0, 100),
    defaultTimeoutSeconds: int('DEFAULT_TIMEOUT_SECONDS', 300, 5, 3600),
    pgPoolSize: int('PG_POOL_SIZE', 4, 2, 100),
    commitPipeline: int('COMMIT_PIPELINE', 2, 1, 8),
    queueWindow: int('QUEUE_WINDOW', 10_000, 10, 10_000_000),
    rowCacheBytes: int('ROW_CACHE_MB', 32, 0, 65_536) * 1024 * 1024,
    logLevel: oneOf('LOG_LEVEL', 'info', ['debug', 'info', 'warn', 'error', 'silent'] as const),
    logFormat: oneOf('LOG_FORMAT', 'text', ['text', 'json'] as const),
    jwtSecret: env.JWT_SECRET ? env.JWT_SECRET : null,
    jwtAccessTtlSeconds: int('JWT_ACCESS_TTL_SECONDS', 3600, 60, 86_400),
    jwtRefreshTtlSeconds: int('JWT_REFRESH_TTL_SECONDS', 30 * 86_400, 300, 365 * 86_400),
    adminApiKey: env.ADMIN_API_KEY ? env.ADMIN_API_KEY : null,
    metricsToken: env.METRICS_TOKEN ? env.METRICS_TOKEN : null,
    registrationMode: oneOf('REGISTRATION_MODE', 'closed', ['open', 'closed'] as const),
    smtpUrl: env.SMTP_URL ? env.SMTP_URL : null,
    mailFrom: str('MAIL_FROM', 'Sluice <no-reply@localhost>'),
    planOverrides: planOverrides(env, problems),
    streamsPerOrg: int('STREAMS_PER_ORG', 100, 1, 100_000),
    workerStaleSeconds: int('WORKER_STALE_SECONDS', 120, 1, 86_400),
    publicUrl: env.PUBLIC_URL ? env.PUBLIC_URL.replace(/\/+$/, '') : null,
    webhookRetryUnitMs: int('WEBHOOK_RETRY_UNIT_MS', 1000, 1, 3_600_000),
    webhookTimeoutMs: int('WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
    webhookConcurrency: int('WEBHOOK_CONCURRENCY', 64, 1, 10_000),
    webhookAllowPrivate: oneOf('WEBHOOK_ALLOW_PRIVATE', 'false', ['true', 'false'] as const) === 'true',
    bodyMaxDepth: int('BODY_MAX_DEPTH', 64, 4, 1000),
    shardCount: int('SHARD_COUNT', 256, 1, 65_536),
    clusterLeaseMs: int('CLUSTER_LEASE_MS', 10_000, 500, 600_000),
    clusterHost: str('CLUSTER_HOST', str('HOST', nodeEnv === 'production' ? '0.0.0.0' : '127.0.0.1')),
    clusterPort: int('CLUSTER_PORT', 0, 0, 65535),
    clusterAdvertise: env.CLUSTER_ADVERTISE ? env.CLUSTER_ADVERTISE : null,
    clusterSecret: env.CLUSTER_SECRET ? env.CLUSTER_SECRET : null,
    bodyMaxValues: int('BODY_MAX_VALUES', 50_000, 1000, 10_000_000),
    warmUpJobs: int('WARM_UP_JOBS', 2000, 0, 100_000),
    warmUpMs: int('WARM_UP_MS', 3000, 100, 60_000),
    stopTimeoutMs: int('STOP_TIMEOUT_MS', 30_000, 1_000, 3_600_000),
  };
  if (config.jwtSecret !== null && config.jwtSecret.length < 32) problems.push('JWT_SECRET must be at least 32 characters');
  if (config.jwtSecret === null && config.production) problems.push('JWT_SECRET is required when NODE_ENV=production');
  if (config.adminApiKey !== null && config.adminApiKey.length < 16) problems.push('ADMIN_API_KEY must be at least 16 characters');
  if (config.smtpUrl !== null && !/^smtps?:\/\//.test(config.smtpUrl)) problems.push('SMTP_URL must start with smtp:// or smtps://');
  if (config.publicUrl !== null && !/^https?:\/\/[^/]/.test(config.publicUrl)) problems.push('PUBLIC_URL must be an http:// or https:// URL');
  if (config.clusterSecret !== null && config.clusterSecret.length < 32) problems.push('CLUSTER_SECRET must be at least 32 characters');
  if (config.clusterAdvertise !== null && !/^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(config.clusterAdvertise)) {
    problems.push('CLUSTER_ADVERTISE must be host:port');
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** PLAN_<TIER>_<RESOURCE>=<integer ≥ 0 | unlimited>, e.g. PLAN_FREE_ACTIVE_JOBS=50. Unknown names are errors. */
function planOverrides(env: Env, problems: string[]): PlanOverrides {
  const out: { [T in PlanTier]?: { [R in PlanResource]?: number | null } } = {};
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith('PLAN_') || raw === undefined || raw === '') continue;
    const rest = name.slice(5).toLowerCase();
    const tier = PLAN_TIERS.find((t) => rest.startsWith(`${t}_`));
    const resource = tier && PLAN_RESOURCES.find((r) => rest === `${tier}_${r}`);
    if (!tier || !resource) {
      problems.push(`${name} is not PLAN_<${PLAN_TIERS.join('|').toUpperCase()}>_<${PLAN_RESOURCES.join('|').toUpperCase()}>`);
      continue;
    }
    const n = Number(raw);
    if (raw.toLowerCase() === 'unlimited') (out[tier] ??= {})[resource] = null;
    else if (Number.isInteger(n) && n >= 0) (out[tier] ??= {})[resource] = n;
    else problems.push(`${name}=${JSON.stringify(raw)} must be an integer ≥ 0 or "unlimited"`);
  }
  return out;
}
