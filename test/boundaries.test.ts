// The layout's rules that an import graph cannot show (the import rules are .dependency-cruiser.cjs, run by
// `make lint-deps`): SQL is written only under src/io/db, one SQL operation per module of src/io/db/sql named after
// it, and no message to the actors is dispatched through `as any`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helpers.js';

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const SRC = path.join(ROOT, 'src');
const rel = (p: string) => path.relative(ROOT, p);

test('SQL statements are written under src/io/db only', () => {
  // A string literal that starts like a statement: SELECT/INSERT/UPDATE/DELETE/WITH … followed by SQL words.
  const statement = /['"`]\s*(SELECT\s+[\w*(]|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS\s*\(|CREATE\s+(TABLE|INDEX)|ALTER\s+TABLE)/;
  const outside = sources(SRC)
    .filter((f) => !rel(f).startsWith(path.join('src', 'io', 'db')))
    .flatMap((f) =>
      fs
        .readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, i) => (statement.test(line) && !line.trim().startsWith('//') ? [`${rel(f)}:${i + 1}: ${line.trim()}`] : [])),
    );
  assert.deepEqual(outside, []);
});

test('each module of src/io/db/sql is one operation, named after it', () => {
  const dir = path.join(SRC, 'io', 'db', 'sql');
  const wrong = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .flatMap((f) => {
      const text = fs.readFileSync(path.join(dir, f), 'utf8');
      const fns = [...text.matchAll(/^export async function (\w+)/gm)].map((m) => m[1]);
      return fns.length === 1 && fns[0] === f.slice(0, -3) ? [] : [`${f}: ${fns.join(', ') || 'no operation'}`];
    });
  assert.deepEqual(wrong, []);
});

test('no `as any` in the engine or the domain: messages are dispatched through the typed op map', () => {
  const found = [path.join(SRC, 'runtime'), path.join(SRC, 'actors'), path.join(SRC, 'app')]
    .flatMap(sources)
    .flatMap((f) =>
      fs
        .readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, i) => (/\bas any\b/.test(line) ? [`${rel(f)}:${i + 1}`] : [])),
    );
  assert.deepEqual(found, []);
});
