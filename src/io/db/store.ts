import type { MessagePort } from 'node:worker_threads';

// One interface over PostgreSQL (pg) and the embedded PGlite. Each write batch of the journal is a single
// statement, so `query` is also the unit of atomicity: no interactive transactions cross this interface.

export type Row = Record<string, any>;

export interface Store {
  /** `name`: a statement run often with the same text, prepared once per connection where the driver can. */
  query<T extends Row = Row>(sql: string, params?: readonly unknown[], name?: string): Promise<T[]>;
  /** Several statements without parameters, in one implicit transaction (migrations). */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

/** How a thread reaches the store: its own pg pool, or the PGlite storage thread over a MessagePort. */
export type StoreLink =
  | { kind: 'pg'; url: string; poolSize: number }
  | { kind: 'remote'; port: MessagePort };
