// docs/errors.md must list exactly the entries of the catalog in src/errors.ts, with the same `error`, HTTP
// status and gRPC status: the page is what clients read, the catalog is what the server sends.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AppError, CATALOG, type ErrorCode } from '../src/errors.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Status names from the gRPC specification, by number. */
const GRPC_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

interface DocRow {
  code: string;
  error: string;
  http: string;
  grpc: string;
  when: string;
}

const cells = (line: string): string[] =>
  line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((c) => c.trim().replace(/^`(.*)`$/, '$1'));

/** The rows of the table whose header starts with "Code". Other tables on the page are ignored. */
function catalogTable(markdown: string): DocRow[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim().startsWith('|') && cells(l)[0]?.toLowerCase() === 'code');
  assert.ok(start >= 0, 'docs/errors.md has no table whose first column is "Code"');
  const header = cells(lines[start]!).map((h) => h.toLowerCase());
  const col = (name: string): number => {
    const i = header.findIndex((h) => h.startsWith(name));
    assert.ok(i >= 0, `the catalog table has no "${name}" column (header: ${header.join(' | ')})`);
    return i;
  };
  const at = { code: col('code'), error: col('error'), http: col('http'), grpc: col('grpc'), when: col('when') };
  assert.match(lines[start + 1] ?? '', /^\s*\|[\s:|-]+\|\s*$/, 'the catalog table header is not followed by a separator row');
  const rows: DocRow[] = [];
  for (let i = start + 2; i < lines.length && lines[i]!.trim().startsWith('|'); i++) {
    const c = cells(lines[i]!);
    rows.push({ code: c[at.code]!, error: c[at.error]!, http: c[at.http]!, grpc: c[at.grpc]!, when: c[at.when] ?? '' });
  }
  return rows;
}

describe('docs/errors.md', () => {
  const rows = catalogTable(fs.readFileSync(path.join(ROOT, 'docs/errors.md'), 'utf8'));
  const codes = Object.keys(CATALOG) as ErrorCode[];

  test('lists every catalog code exactly once, and nothing else', () => {
    const listed = rows.map((r) => r.code);
    assert.equal(new Set(listed).size, listed.length, `a code is listed twice: ${listed.join(', ')}`);
    assert.deepEqual([...listed].sort(), [...codes].sort());
  });

  test('each row has the catalog error, HTTP status and gRPC status', () => {
    for (const r of rows) {
      const entry = CATALOG[r.code as ErrorCode];
      if (!entry) continue; // reported by the test above
      assert.equal(r.error, entry.error, `${r.code}: error`);
      assert.equal(r.http, String(entry.status), `${r.code}: HTTP status`);
      assert.equal(r.grpc, GRPC_NAMES[entry.grpc], `${r.code}: gRPC status`);
      assert.ok(r.when.length > 10, `${r.code}: says when it happens`);
    }
  });

  test('the catalog itself keeps the body conventions the page describes', () => {
    for (const code of codes) {
      const entry = CATALOG[code];
      assert.match(code, /^[A-Z]+(_[A-Z]+)*$/);
      assert.match(entry.error, /^[a-z]+(_[a-z]+)*$/);
      assert.ok(entry.status >= 400 && entry.status <= 599, `${code}: status ${entry.status}`);
      assert.ok(entry.grpc > 0 && GRPC_NAMES[entry.grpc] !== undefined, `${code}: gRPC status ${entry.grpc}`);
      const body = new AppError(code).toBody();
      assert.deepEqual(body, { error: entry.error, code, message: entry.message, status: entry.status });
    }
  });
});

test("an error's wire form is its own: one error fails several requests, and each reply may be changed by its receiver", () => {
  const e = new AppError('VALIDATION_ERROR', 'bad', { details: [{ field: 'x', message: 'y' }] });
  const a = e.toWire();
  const b = e.toWire();
  assert.notEqual(a.extra, b.extra);
  a.extra.details = [];
  a.extra.added = true;
  assert.deepEqual(b.extra, { details: [{ field: 'x', message: 'y' }] });
  assert.deepEqual(e.extra, { details: [{ field: 'x', message: 'y' }] });
});
