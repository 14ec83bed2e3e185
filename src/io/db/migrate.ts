import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Store } from './store.js';

// Numbered .sql files in ./migrations, applied in order, each in its own transaction with its row in
// schema_migrations. On PostgreSQL the caller holds an advisory lock so replicas booting together apply
// each file once.

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
export const MIGRATION_LOCK_KEY = 0x51_1ce;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function readMigrations(): Migration[] {
  return fs
    .readdirSync(DIR)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f.slice(5, -4), sql: fs.readFileSync(path.join(DIR, f), 'utf8') }));
}

export async function migrate(store: Store): Promise<number[]> {
  await store.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
  );
  const done = new Set((await store.query<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version));
  const applied: number[] = [];
  for (const m of readMigrations()) {
    if (done.has(m.version)) continue;
    await store.exec(
      `BEGIN;\n${m.sql}\nINSERT INTO schema_migrations (version, name) VALUES (${m.version}, '${m.name}');\nCOMMIT;`,
    );
    applied.push(m.version);
  }
  return applied;
}
