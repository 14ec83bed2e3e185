import type { MessagePort } from 'node:worker_threads';

// One interface over PostgreSQL (pg) and the embedded PGlite. Each write batch of the journal is a single
// statement, so `query` is also the unit of atomicity: no interactive transactions cross this interface.

export type Row = Record<string, any>;

export interface Store {
  query<T extends Row = Row>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Several statements without parameters, in one implicit transaction (migrations). */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

/** How a thread reaches the store: its own pg pool, or the PGlite storage thread over a MessagePort. */
export type StoreLink =
  | { kind: 'pg'; url: string; poolSize: number }
  | { kind: 'remote'; port: MessagePort };
