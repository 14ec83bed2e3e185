import pg from 'pg';
import { storeError } from './faults.js';
import type { Row, Store } from './store.js';

// timestamptz stays a Date (pg's default); int8 counts are cast to int in SQL, so no parser is needed here.

export class PgStore implements Store {
  private readonly pool: pg.Pool;

  /**
   * The pool of group commits: a connection for each commit in flight. Commits find rows by key only, so each
   * statement shape's generic plan is the plan, and forcing it spares a planning per commit. Left to choose, a
   * connection whose first five commits were small kept planning every commit anew (their custom estimates came
   * out cheaper than the generic one): half of PostgreSQL's CPU at 1,000 claims/s (docs/BENCHMARKS.md).
   */
  static forCommits(url: string, inFlight: number): PgStore {
    return new PgStore(url, inFlight, { plan_cache_mode: 'force_generic_plan' });
  }

  /**
   * The pool of the counts nobody waits for, each without parallel workers. A parallel count of a million rows took
   * both cores of a small machine for 200 ms, and another queue's commit waited 45-75 ms behind it; alone on one
   * core it takes a little longer and the other core serves (docs/BENCHMARKS.md).
   */
  static forBackground(url: string, poolSize: number): PgStore {
    return new PgStore(url, poolSize, { max_parallel_workers_per_gather: '0' });
  }

  /** `settings`: more session settings for every connection of this pool (`-c name=value`). */
  constructor(url: string, poolSize: number, settings: Readonly<Record<string, string>> = {}) {
    // UTC sessions: row_to_json() of a timestamptz then always reads as an instant with +00:00.
    // A server that stops answering must not hold requests forever: connecting gives up after 5 s (then 503).
    this.pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
      options: Object.entries({ TimeZone: 'UTC', ...settings }).map(([k, v]) => `-c ${k}=${v}`).join(' '),
    });
    // A dropped idle connection must not crash the process; the next query opens a new one.
    this.pool.on('error', () => {});
  }

  /** A store that cannot be reached fails with the catalog's 503; a refused statement keeps its SQLSTATE. */
  async query<T extends Row = Row>(sql: string, params?: readonly unknown[], name?: string): Promise<T[]> {
    try {
      const res = await this.pool.query({ text: sql, values: params as unknown[] | undefined, name });
      return res.rows as T[];
    } catch (err) {
      throw storeError(err);
    }
  }

  async exec(sql: string): Promise<void> {
    try {
      await this.pool.query(sql);
    } catch (err) {
      throw storeError(err);
    }
  }

  /** Runs fn on one connection while holding a session advisory lock (migrations when replicas boot together). */
  async withAdvisoryLock<T>(key: number, fn: (store: Store) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1)', [key]);
      const one: Store = {
        query: async (sql, params) => (await client.query(sql, params as unknown[] | undefined)).rows,
        exec: async (sql) => {
          await client.query(sql);
        },
        close: async () => {},
      };
      try {
        return await fn(one);
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [key]);
      }
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
