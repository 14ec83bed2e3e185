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
    return new PgStore(url, inFlight, { name: 'commits', keepOpen: inFlight, settings: { plan_cache_mode: 'force_generic_plan' } });
  }

  /**
   * The pool of the counts nobody waits for, each without parallel workers. A parallel count of a million rows took
   * both cores of a small machine for 200 ms, and another queue's commit waited 45-75 ms behind it; alone on one
   * core it takes a little longer and the other core serves (docs/BENCHMARKS.md).
   */
  static forBackground(url: string, poolSize: number): PgStore {
    return new PgStore(url, poolSize, { name: 'background', keepOpen: 0, settings: { max_parallel_workers_per_gather: '0' } });
  }

  private readonly keepOpen: number;

  /**
   * `name` shows in pg_stat_activity as `sluice <name>`. `keepOpen` connections stay open however long they idle
   * (others close after 30 s) and are opened by `warm`: after a quiet half minute the first request otherwise paid for
   * a new connection and, on the commit pool, for preparing its statements again (19.7 ms against 5.7 ms after 5 s
   * idle on loopback, docs/BENCHMARKS.md; more to a remote server). `settings`: more session settings for every
   * connection (`-c name=value`).
   */
  constructor(url: string, poolSize: number, o: { name?: string; keepOpen?: number; settings?: Readonly<Record<string, string>> } = {}) {
    this.keepOpen = Math.min(poolSize, o.keepOpen ?? 1);
    // UTC sessions: row_to_json() of a timestamptz then always reads as an instant with +00:00.
    // A server that stops answering must not hold requests forever: connecting gives up after 5 s (then 503).
    this.pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      min: this.keepOpen,
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
      application_name: `sluice ${o.name ?? 'general'}`,
      options: Object.entries({ TimeZone: 'UTC', ...o.settings }).map(([k, v]) => `-c ${k}=${v}`).join(' '),
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

  /** Opens the connections kept open, before the first request needs them. A failure is left to that request. */
  async warm(): Promise<void> {
    const clients = await Promise.allSettled(Array.from({ length: this.keepOpen }, () => this.pool.connect()));
    for (const c of clients) if (c.status === 'fulfilled') c.value.release();
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
