import pg from 'pg';
import type { Row, Store } from './store.js';

// timestamptz stays a Date (pg's default); int8 counts are cast to int in SQL, so no parser is needed here.

export class PgStore implements Store {
  private readonly pool: pg.Pool;

  constructor(url: string, poolSize: number) {
    // UTC sessions: to_jsonb() of a timestamptz then always reads as an instant with +00:00.
    this.pool = new pg.Pool({ connectionString: url, max: poolSize, idleTimeoutMillis: 30_000, options: '-c TimeZone=UTC' });
    // A dropped idle connection must not crash the process; the next query opens a new one.
    this.pool.on('error', () => {});
  }

  async query<T extends Row = Row>(sql: string, params?: readonly unknown[], name?: string): Promise<T[]> {
    const res = await this.pool.query({ text: sql, values: params as unknown[] | undefined, name });
    return res.rows as T[];
  }

  async exec(sql: string): Promise<void> {
    await this.pool.query(sql);
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
