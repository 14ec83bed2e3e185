import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { Row, Store } from './store.js';

// PGlite is single-process Postgres in WASM. Two instances on one directory lose writes, so the directory is
// guarded by a lock file holding the owner's pid; a lock left by a dead process (kill -9) is taken over.

export class DataDirLockedError extends Error {}

/** Data directories locked by nodes of this process (two nodes can share a process: tests do). */
const heldHere = new Set<string>();

export function lockDataDir(dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true });
  const dir = fs.realpathSync(dataDir);
  const file = path.join(dir, 'sluice.lock');
  const inUse = (owner: number) =>
    new DataDirLockedError(
      `data directory ${dataDir} is in use by process ${owner}: the embedded store serves one node; to run several nodes, ` +
        'give each the same DATABASE_URL (PostgreSQL) and CLUSTER_SECRET (docs/operations.md, "Many nodes")',
    );
  if (heldHere.has(dir)) throw inUse(process.pid);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
      heldHere.add(dir);
      return () => {
        heldHere.delete(dir);
        fs.rmSync(file, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(fs.readFileSync(file, 'utf8').trim());
      // A lock of this process that no node holds any more was left by one that did not stop cleanly.
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) throw inUse(owner);
      fs.rmSync(file, { force: true });
    }
  }
  throw new DataDirLockedError(`could not lock data directory ${dataDir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class PgliteStore implements Store {
  private constructor(private readonly db: PGlite) {}

  /** `dir` null: in memory (tests that need no persistence). */
  static async open(dir: string | null): Promise<PgliteStore> {
    const db = dir === null ? new PGlite() : new PGlite(dir);
    await db.waitReady;
    await db.exec("SET TIME ZONE 'UTC'");
    return new PgliteStore(db);
  }

  async query<T extends Row = Row>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    const res = await this.db.query<T>(sql, params as unknown[] | undefined);
    return res.rows;
  }

  async exec(sql: string): Promise<void> {
    await this.db.exec(sql);
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
