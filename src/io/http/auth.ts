// REST credentials: only `Authorization: Bearer <token>`. A token starting with `eyJ` is a JWT access token,
// anything else an API key. A credential in the query string is refused (401) so keys do not end up in access
// logs; the four real-time routes (SSE, WebSocket) are the exception, since browsers cannot set headers there
// (`queryCredential`). X-API-Key is not read at all.
//
// Keys are cached for a short time, by digest (API key credentials) and by id (the key behind a JWT, which dies
// with its key): the lookup is on every request's path. Revocation is immediate: the revoke route calls
// `revokeKey`, which marks the key dead in this node's cache (a lookup already in flight cannot bring it back)
// and tells the other nodes through the invalidation channel (LISTEN/NOTIFY), which do the same.
//
// JWT ids revoked by logout live in the store and in memory here, loaded at boot, announced to the other nodes
// the same way, and dropped once expired.
import { digestKey } from '../../actors/org/api-key.js';
import type { Clock } from '../../clock.js';
import { AppError } from '../../errors.js';
import type { Log } from '../../log.js';
import type { Store } from '../db/store.js';
import { findApiKey, type KeyRow } from '../db/sql/findApiKey.js';
import { findApiKeyById } from '../db/sql/findApiKeyById.js';
import { liveRevokedTokens } from '../db/sql/liveRevokedTokens.js';
import { revokeTokens, type RevokedToken } from '../db/sql/revokeTokens.js';
import { touchApiKey } from '../db/sql/touchApiKey.js';
import type { Invalidation, InvalidationChannel } from '../db/invalidations.js';
import type { TokenClaims, Tokens } from './tokens.js';

export interface Principal {
  organizationId: string;
  /** The API key used directly or behind a JWT; null for email sessions. */
  apiKeyId: string | null;
  permissions: readonly string[];
  /**
   * api_key: the key itself; jwt: an access token of a session opened with a key; email: an email session;
   * webhook: the organization's incoming-webhook token.
   */
  via: 'api_key' | 'jwt' | 'email' | 'webhook';
  /** JWT credentials only: the token's jti, its session (the refresh token's jti), and its lifetime (epoch ms). */
  tokenId?: string;
  sessionId?: string;
  issuedAt?: number;
  expiresAt?: number;
}

/** The permission of routes any valid credential may call (who am I, logout). */
export const ANY_CREDENTIAL = 'authenticated';

/** The permissions a key may hold (SPEC Authentication); `*` grants all, and alone the `*` routes. */
export const PERMISSIONS = ['*', 'jobs:read', 'jobs:write', 'queues:read', 'queues:write', 'dlq:read', 'dlq:write'] as const;

const CACHE_MS = 30_000;
const CACHE_MAX = 10_000;
/** SPEC: last-used time is written at most every 5 minutes per key. */
export const LAST_USED_EVERY_MS = 5 * 60_000;

interface KeyState {
  principal: Principal;
  digest: string;
  revoked: boolean;
  until: number;
}

export interface AuthenticatorOptions {
  store: Store;
  clock: Clock;
  tokens: Tokens;
  log: Log;
  /** How revocations reach the other nodes (and come back from them). */
  channel: InvalidationChannel;
}

export class Authenticator {
  readonly tokens: Tokens;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly log: Log;
  private readonly channel: InvalidationChannel;
  /** By key id. */
  private readonly keys = new Map<string, KeyState>();
  /** Digest → key id. */
  private readonly digests = new Map<string, string>();
  /** Keys revoked on this node lately (real-time ms until which to remember), kept apart from the evictable cache. */
  private readonly revokedKeys = new Map<string, number>();
  /** Key id → clock time of the last last_used_at write this node made. */
  private readonly lastUsedWrites = new Map<string, number>();
  /** Revoked jti → expiry (epoch ms). */
  private readonly revokedTokens = new Map<string, number>();
  /** Told of revocations on this node: open streams of a revoked credential end. */
  private readonly revocationListeners = new Set<(r: Revocation) => void>();

  constructor(opts: AuthenticatorOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.tokens = opts.tokens;
    this.log = opts.log;
    this.channel = opts.channel;
  }

  /** Loads the revoked JWT ids that have not expired yet. */
  async start(): Promise<void> {
    for (const t of await liveRevokedTokens(this.store, new Date(this.clock.now()))) this.revokedTokens.set(t.jti, t.expiresAt);
  }

  async authenticate(authorization: string): Promise<Principal> {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m) throw new AppError('UNAUTHORIZED', 'Missing Authorization: Bearer <API key or access token>');
    const token = m[1]!;
    if (token.startsWith('eyJ')) return this.principalOf(await this.tokens.verify(token, 'access'));
    return this.apiKey(token);
  }

  /** The principal of an API key (also the login route's check of the key it is given). */
  async apiKey(key: string): Promise<Principal> {
    const digest = digestKey(key);
    const id = this.digests.get(digest);
    let state = id === undefined ? undefined : this.fresh(id);
    if (!state) {
      const row = await findApiKey(this.store, digest);
      if (!row) throw new AppError('UNAUTHORIZED', 'Invalid API key');
      state = this.remember(row);
    }
    if (state.revoked) throw new AppError('UNAUTHORIZED', 'Invalid API key');
    this.touch(state.principal.apiKeyId!);
    return state.principal;
  }

  /** The principal of verified access-token claims: not revoked, and its key (if any) still live. */
  async principalOf(claims: TokenClaims): Promise<Principal> {
    this.checkSession(claims);
    if (claims.apiKeyId !== null) {
      const key = await this.keyById(claims.apiKeyId);
      if (!key || key.revoked || key.principal.organizationId !== claims.organizationId) {
        throw new AppError('UNAUTHORIZED', 'The API key this token was issued for has been revoked');
      }
      this.touch(claims.apiKeyId);
    }
    return {
      organizationId: claims.organizationId,
      apiKeyId: claims.apiKeyId,
      permissions: claims.permissions,
      via: claims.via === 'email' ? 'email' : 'jwt',
      tokenId: claims.jti,
      sessionId: claims.sid,
      issuedAt: claims.issuedAt,
      expiresAt: claims.expiresAt,
    };
  }

  /** 401 when the token or its session was revoked. */
  checkSession(claims: TokenClaims): void {
    if (this.isRevoked(claims.jti) || this.isRevoked(claims.sid)) throw new AppError('UNAUTHORIZED', 'The token has been revoked');
  }

  /** The live key with this id (refresh checks it too), or null. */
  async liveKey(id: string): Promise<Principal | null> {
    const key = await this.keyById(id);
    return key && !key.revoked ? key.principal : null;
  }

  /** The key was revoked in the store: from now on every node refuses it and every JWT issued from it. */
  async revokeKey(id: string): Promise<void> {
    this.keyRevoked(id);
    await this.announce({ kind: 'api_key', id });
  }

  /** Revocations announced by a node (this one included). */
  apply(inv: Invalidation): void {
    if (inv.kind === 'api_key') this.keyRevoked(inv.id);
    else if (inv.kind === 'tokens') this.tokensRevoked(inv.tokens);
  }

  /** Announcements may have been lost (the channel reconnected): cached keys are read again, revoked ids reloaded. */
  resync(): void {
    this.keys.clear();
    this.digests.clear();
    this.start().catch((err) => this.log.error('could not reload revoked tokens', err));
  }

  private keyRevoked(id: string): void {
    const now = Date.now();
    this.revokedKeys.set(id, now + 2 * CACHE_MS);
    const state = this.keys.get(id);
    if (state) state.revoked = true;
    for (const [k, until] of this.revokedKeys) if (until <= now) this.revokedKeys.delete(k);
    this.tellListeners({ keyId: id, tokenIds: [] });
  }

  /** Listens to revocations (keys, and JWT ids by logout), made on this node or announced by another. Returns the unsubscribe. */
  onRevoke(fn: (r: Revocation) => void): () => void {
    this.revocationListeners.add(fn);
    return () => this.revocationListeners.delete(fn);
  }

  private tellListeners(r: Revocation): void {
    for (const fn of this.revocationListeners) {
      try {
        fn(r);
      } catch (err) {
        this.log.error('revocation listener failed', err);
      }
    }
  }

  /** Revokes JWT ids: written to the store first (so the revocation survives a restart), then refused here. */
  async revokeTokens(organizationId: string, tokens: RevokedToken[]): Promise<void> {
    await revokeTokens(this.store, organizationId, tokens, new Date(this.clock.now()));
    this.tokensRevoked(tokens);
    await this.announce({ kind: 'tokens', tokens });
  }

  private tokensRevoked(tokens: RevokedToken[]): void {
    const now = this.clock.now();
    for (const [jti, exp] of this.revokedTokens) if (exp <= now) this.revokedTokens.delete(jti);
    for (const t of tokens) this.revokedTokens.set(t.jti, Math.max(t.expiresAt, this.revokedTokens.get(t.jti) ?? 0));
    this.tellListeners({ keyId: null, tokenIds: tokens.map((t) => t.jti) });
  }

  /**
   * The change is committed and applied here; other nodes hear of it now. A failed NOTIFY is logged, not
   * thrown: the revocation stands, and other nodes see it when their cache entry expires (30 s) at worst.
   */
  private async announce(inv: Invalidation): Promise<void> {
    await this.channel.publish(inv).catch((err) => this.log.error(`could not announce a ${inv.kind} revocation to other nodes`, err));
  }

  private isRevoked(jti: string): boolean {
    const exp = this.revokedTokens.get(jti);
    if (exp === undefined) return false;
    if (exp > this.clock.now()) return true;
    // The token has expired anyway: verification refuses it without this entry.
    this.revokedTokens.delete(jti);
    return false;
  }

  private async keyById(id: string): Promise<KeyState | null> {
    const state = this.fresh(id);
    if (state) return state;
    const row = await findApiKeyById(this.store, id);
    return row ? this.remember(row) : null;
  }

  private fresh(id: string): KeyState | undefined {
    const state = this.keys.get(id);
    return state && state.until > Date.now() ? state : undefined;
  }

  private remember(row: KeyRow): KeyState {
    const now = Date.now();
    const revokedHere = (this.revokedKeys.get(row.id) ?? 0) > now;
    const state: KeyState = {
      principal: { organizationId: row.organization_id, apiKeyId: row.id, permissions: row.permissions, via: 'api_key' },
      digest: row.key_digest,
      // A read that started before a revocation on this node must not revive the key.
      revoked: row.revoked || revokedHere,
      until: now + CACHE_MS,
    };
    const old = this.keys.get(row.id);
    if (old) {
      this.keys.delete(row.id);
      this.digests.delete(old.digest);
    }
    while (this.keys.size >= CACHE_MAX) {
      const [oldestId, oldest] = this.keys.entries().next().value!;
      this.keys.delete(oldestId);
      this.digests.delete(oldest.digest);
    }
    this.keys.set(row.id, state);
    this.digests.set(row.key_digest, row.id);
    return state;
  }

  /** Writes last_used_at at most every 5 minutes per key, off the request's path: a failure is only logged. */
  private touch(keyId: string): void {
    const now = this.clock.now();
    const last = this.lastUsedWrites.get(keyId);
    if (last !== undefined && now - last < LAST_USED_EVERY_MS) return;
    this.lastUsedWrites.delete(keyId);
    if (this.lastUsedWrites.size >= CACHE_MAX) this.lastUsedWrites.delete(this.lastUsedWrites.keys().next().value!);
    this.lastUsedWrites.set(keyId, now);
    touchApiKey(this.store, keyId, new Date(now)).catch((err) => this.log.warn(`could not record the use of API key ${keyId}`, err));
  }
}

/** What was revoked: a key (and so every JWT issued from it), or JWT ids (access tokens or sessions). */
export interface Revocation {
  keyId: string | null;
  tokenIds: string[];
}

/**
 * The credential of a real-time route: the Authorization header, else `api_key` or `token` from the query
 * string (either may hold an API key or an access token; `eyJ…` is a JWT as in the header).
 */
export function queryCredential(query: URLSearchParams, authorization: string): string {
  if (authorization !== '') return authorization;
  const given = [...query.getAll('api_key'), ...query.getAll('token')];
  if (given.length > 1) throw new AppError('UNAUTHORIZED', 'Give one credential in the query string: api_key or token');
  return given.length === 1 ? `Bearer ${given[0]}` : '';
}

/** Any REST route, public ones included: a key in a URL lands in access logs whether or not the route needs it. */
export function rejectQueryCredential(query: URLSearchParams): void {
  if (query.has('api_key') || query.has('token')) {
    throw new AppError('UNAUTHORIZED', 'Credentials in the query string are not accepted; use the Authorization header');
  }
}

export function authorize(principal: Principal, permission: string): void {
  if (permission === ANY_CREDENTIAL) return;
  if (permission === '*' ? principal.permissions.includes('*') : principal.permissions.some((p) => p === '*' || p === permission)) {
    return;
  }
  throw new AppError('FORBIDDEN', `This credential lacks the '${permission}' permission`);
}
