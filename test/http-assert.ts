// Assertions and fixtures shared by the HTTP tests: the catalog error shape, and organizations with keys
// written straight into the store.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { digestKey } from '../src/actors/org/api-key.js';
import { CATALOG, type ErrorCode } from '../src/errors.js';
import type { ApiResponse, TestNode } from './helpers.js';

const BASE = ['error', 'code', 'message', 'status'];

/** The catalog shape, exactly: the four fields, plus only the extras the code is allowed to add. */
export function assertError(r: ApiResponse, status: number, code: ErrorCode, extras: string[] = []): void {
  assert.equal(r.status, status, `expected ${status} ${code}, got ${r.status} ${JSON.stringify(r.body)}`);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  const b = r.body as Record<string, unknown>;
  assert.ok(b !== null && typeof b === 'object' && !Array.isArray(b), `error body is not an object: ${JSON.stringify(b)}`);
  for (const k of BASE) assert.ok(k in b, `error body lacks "${k}": ${JSON.stringify(b)}`);
  for (const k of Object.keys(b)) assert.ok(BASE.includes(k) || extras.includes(k), `unexpected "${k}" in ${JSON.stringify(b)}`);
  assert.match(b.error as string, /^[a-z]+(_[a-z]+)*$/);
  assert.match(b.code as string, /^[A-Z]+(_[A-Z]+)*$/);
  assert.equal(b.code, code);
  assert.equal(b.error, CATALOG[code].error);
  assert.equal(typeof b.message, 'string');
  assert.ok((b.message as string).length > 0);
  assert.equal(b.status, r.status);
  // An error never offers a next page.
  assert.equal(r.headers.get('x-next-cursor'), null);
  assert.equal(r.headers.get('link'), null);
}

/** 422 validation_error whose details name every given field and hold only {field, message} pairs. */
export function assertInvalid(r: ApiResponse, ...fields: string[]): void {
  assertError(r, 422, 'VALIDATION_ERROR', ['details']);
  const details = r.body.details as Array<Record<string, unknown>>;
  assert.ok(Array.isArray(details) && details.length > 0, `no details: ${JSON.stringify(r.body)}`);
  for (const d of details) {
    assert.deepEqual(Object.keys(d).sort(), ['field', 'message']);
    assert.equal(typeof d.field, 'string');
    assert.equal(typeof d.message, 'string');
    assert.ok((d.message as string).length > 0);
  }
  const named = details.map((d) => d.field);
  for (const f of fields) assert.ok(named.includes(f), `details ${JSON.stringify(details)} do not name "${f}"`);
}

/** The methods of an Allow header. */
export function allowOf(r: ApiResponse): string[] {
  return (r.headers.get('allow') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The fields a 429 QUOTA_EXCEEDED carries besides the generic ones (SPEC Errors). */
export const QUOTA_EXTRAS = ['resource', 'current', 'limit', 'plan', 'upgrade_to'];

/** An organization (new unless given) and a key of it with these permissions. */
export async function insertKey(
  n: TestNode,
  opts: { organizationId?: string; permissions?: string[]; plan?: string; revoked?: boolean; limited?: boolean } = {},
): Promise<{ key: string; organizationId: string }> {
  const now = new Date();
  let organizationId = opts.organizationId;
  if (!organizationId) {
    organizationId = randomUUID();
    // Neither rate-limited nor held to job quotas unless asked: tests that send many requests must not depend on
    // how fast they run or how many jobs they leave behind.
    const overrides = opts.limited ? {} : { rate_per_second: null, burst: null, active_jobs: null, jobs_per_day: null };
    await n.node.store.query(
      'INSERT INTO organizations (id, name, slug, plan, limit_overrides, created_at, updated_at) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $6)',
      [organizationId, 'Other', `other-${organizationId.slice(0, 8)}`, opts.plan ?? 'free', JSON.stringify(overrides), now],
    );
  }
  const key = `svc_test_${randomUUID().replaceAll('-', '')}`;
  // One comma-separated string: array parameters differ between pg and PGlite.
  await n.node.store.query(
    `INSERT INTO api_keys (id, organization_id, name, key_digest, key_prefix, permissions, created_at, revoked_at)
     VALUES ($1, $2, 'test', $3, $4, string_to_array($5, ','), $6, $7)`,
    [randomUUID(), organizationId, digestKey(key), key.slice(0, 16), (opts.permissions ?? ['*']).join(','), now, opts.revoked ? now : null],
  );
  return { key, organizationId };
}

/** The organization of a key. */
export async function orgOf(n: TestNode, key: string): Promise<string> {
  const rows = await n.node.store.query<{ organization_id: string }>('SELECT organization_id FROM api_keys WHERE key_digest = $1', [
    digestKey(key),
  ]);
  return rows[0]!.organization_id;
}

/** The target of a `Link: <…>; rel="next"` header. */
export function nextLink(r: ApiResponse): string | null {
  const link = r.headers.get('link');
  if (link === null) return null;
  const m = /^<([^>]+)>; rel="next"$/.exec(link);
  assert.ok(m, `malformed Link header: ${link}`);
  return m[1]!;
}
