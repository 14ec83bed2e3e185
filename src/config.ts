// The only module that reads process.env. Every setting is parsed and checked at once, all problems are
// reported together, and the result is frozen: the rest of the code receives compiled values only.
import os from 'node:os';
import path from 'node:path';

export interface Config {
  readonly host: string;
  readonly port: number;
  /** Unset: the embedded PGlite store in dataDir. */
  readonly databaseUrl: string | null;
  readonly dataDir: string;
  readonly production: boolean;
  readonly nodeEnv: string;
  /** One retry "minute": the backoff is min(2^retry_count, 60) units. */
  readonly retryUnitMs: number;
  readonly actorThreads: number;
  readonly defaultMaxRetries: number;
  readonly defaultTimeoutSeconds: number;
  /** Connections per actor thread (one commits, the others load actors) and for the main thread. */
  readonly pgPoolSize: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

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
    host: str('HOST', '0.0.0.0'),
    port: int('PORT', 8080, 0, 65535),
    databaseUrl,
    dataDir: path.resolve(str('DATA_DIR', './data')),
    production: nodeEnv === 'production',
    nodeEnv,
    retryUnitMs: int('RETRY_UNIT_MS', 60_000, 1, 3_600_000),
    actorThreads: int('ACTOR_THREADS', Math.max(1, os.availableParallelism()), 1, 64),
    defaultMaxRetries: int('DEFAULT_MAX_RETRIES', 3, 0, 100),
    defaultTimeoutSeconds: int('DEFAULT_TIMEOUT_SECONDS', 300, 5, 3600),
    pgPoolSize: int('PG_POOL_SIZE', 4, 2, 100),
    logLevel: oneOf('LOG_LEVEL', 'info', ['debug', 'info', 'warn', 'error', 'silent'] as const),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
