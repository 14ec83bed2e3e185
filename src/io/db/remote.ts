import type { MessagePort } from 'node:worker_threads';
import { storeError } from './faults.js';
import type { Row, Store } from './store.js';

// Threads reach the PGlite storage thread through a MessagePort. Requests carry an id; the storage thread
// answers each one. Postgres errors keep their SQLSTATE `code` so callers can tell a conflict from an outage.

interface Request {
  id: number;
  op: 'query' | 'exec';
  sql: string;
  params?: readonly unknown[];
}
type Response = { id: number; rows?: Row[]; error?: { message: string; code?: string } };

export class RemoteStore implements Store {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (rows: Row[]) => void; reject: (e: Error) => void }>();

  constructor(private readonly port: MessagePort) {
    port.on('message', (res: Response) => {
      const w = this.waiting.get(res.id);
      if (!w) return;
      this.waiting.delete(res.id);
      if (res.error) w.reject(storeError(Object.assign(new Error(res.error.message), { code: res.error.code })) as Error);
      else w.resolve(res.rows ?? []);
    });
    port.unref();
  }

  private send(op: Request['op'], sql: string, params?: readonly unknown[]): Promise<Row[]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.port.ref();
      this.port.postMessage({ id, op, sql, params } satisfies Request);
    }).finally(() => {
      if (this.waiting.size === 0) this.port.unref();
    }) as Promise<Row[]>;
  }

  async query<T extends Row = Row>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    return (await this.send('query', sql, params)) as T[];
  }

  async exec(sql: string): Promise<void> {
    await this.send('exec', sql);
  }

  async close(): Promise<void> {
    this.port.close();
  }
}

/** The storage-thread side: answers every request arriving on `port` from `store`. */
export function serveStore(store: Store, port: MessagePort): void {
  port.on('message', async (req: Request) => {
    try {
      const rows = req.op === 'query' ? await store.query(req.sql, req.params) : (await store.exec(req.sql), []);
      port.postMessage({ id: req.id, rows } satisfies Response);
    } catch (err) {
      const e = err as Error & { code?: string };
      port.postMessage({ id: req.id, error: { message: e.message, code: e.code } } satisfies Response);
    }
  });
}
