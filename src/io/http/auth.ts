// REST credentials: only `Authorization: Bearer <key>`. A credential in the query string is refused (401)
// so keys do not end up in access logs; the real-time routes that may take one come with their own issue.
//
// Resolved keys are cached by digest for a short time: the lookup is on every request's path.
import { AppError } from '../../errors.js';
import { digestKey } from '../../actors/org/api-key.js';
import type { Store } from '../db/store.js';
import { findApiKey } from '../db/sql/findApiKey.js';

export interface Principal {
  organizationId: string;
  apiKeyId: string;
  permissions: readonly string[];
}

const CACHE_MS = 30_000;
const CACHE_MAX = 10_000;

export class Authenticator {
  private readonly cache = new Map<string, { principal: Principal; until: number }>();

  constructor(private readonly store: Store) {}

  async authenticate(authorization: string): Promise<Principal> {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m) throw new AppError('UNAUTHORIZED', 'Missing Authorization: Bearer <api key>');
    const digest = digestKey(m[1]!);
    const now = Date.now();
    const hit = this.cache.get(digest);
    if (hit && hit.until > now) return hit.principal;
    const row = await findApiKey(this.store, digest);
    if (!row) throw new AppError('UNAUTHORIZED', 'Invalid API key');
    const principal: Principal = { organizationId: row.organization_id, apiKeyId: row.id, permissions: row.permissions };
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(digest, { principal, until: now + CACHE_MS });
    return principal;
  }
}

/** Any REST route, public ones included: a key in a URL lands in access logs whether or not the route needs it. */
export function rejectQueryCredential(query: URLSearchParams): void {
  if (query.has('api_key') || query.has('token')) {
    throw new AppError('UNAUTHORIZED', 'Credentials in the query string are not accepted; use the Authorization header');
  }
}

export function authorize(principal: Principal, permission: string): void {
  if (permission === '*' ? principal.permissions.includes('*') : principal.permissions.some((p) => p === '*' || p === permission)) {
    return;
  }
  throw new AppError('FORBIDDEN', `This credential lacks the '${permission}' permission`);
}
