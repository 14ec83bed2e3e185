// Credentials and sessions. A token starting with `eyJ` is a JWT access token, anything else an API key (how a
// credential travels is the edge's business: io/http reads the Authorization header, io/grpc the x-api-key
// metadata).
//
// Keys are cached for a short time, by digest (API key credentials) and by id (the key behind a JWT, which dies
// with its key, and whose permissions are narrowed to the key's current ones): the lookup is on every request's
// path. Revocation is immediate: revoking a key calls `revokeKey`, which marks the key dead in this node's cache
// (a lookup already in flight cannot bring it back) and tells the other nodes through the invalidation channel
// (LISTEN/NOTIFY), which do the same. A change of a key's permissions (`keyChanged`) drops it from every node's
// cache the same way, so the next request reads the new permissions.
//
// JWT ids revoked by logout live in the store and in memory here, loaded at boot, announced to the other nodes
// the same way, and dropped once expired.
//
// Sessions (below): login with an API key, refresh, logout; and passwordless email login for the owner of an
// organization. Tokens are JWTs (tokens.ts); a session lives as long as its refresh token, its key, and until
// logout. Email login answers `start` the same way whether or not the address owns an organization (and the
// same throttle for every address), so neither the answer nor a 429 tells who has an account.
import { randomInt, randomUUID } from 'node:crypto';
import Type from 'typebox';
import { digestKey } from '../actors/org/api-key.js';
import type { Clock } from '../clock.js';
import { AppError, validationError } from '../errors.js';
import type { Log } from '../log.js';
import type { Store } from '../io/db/store.js';
import { findApiKeys, type KeyRow } from '../io/db/sql/findApiKeys.js';
import { findApiKeyById } from '../io/db/sql/findApiKeyById.js';
import { issueLoginCode } from '../io/db/sql/issueLoginCode.js';
import { liveRevokedTokens } from '../io/db/sql/liveRevokedTokens.js';
import { pruneEmailLogin } from '../io/db/sql/pruneEmailLogin.js';
import { revokeTokens, type RevokedToken } from '../io/db/sql/revokeTokens.js';
import { throttleLoginMail } from '../io/db/sql/throttleLoginMail.js';
import { touchApiKey } from '../io/db/sql/touchApiKey.js';
import { useLoginCode } from '../io/db/sql/useLoginCode.js';
import type { Invalidation, InvalidationChannel } from '../io/db/invalidations.js';
import { validator, type Valid } from '../io/validate.js';
import type { AppContext } from './context.js';
import { KeyLookups } from './key-lookups.js';
import type { Session, TokenClaims, Tokens } from './tokens.js';

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

export class Authenticator {
  private readonly tokens: Tokens;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly log: Log;
  /** How revocations reach the other nodes (and come back from them). */
  private readonly channel: InvalidationChannel;
  /** By key id. */
  private readonly keys = new Map<string, KeyState>();
  /** Digest → key id. */
  private readonly digests = new Map<string, string>();
  /**
   * Key → its digest, for keys seen lately: a SHA-256 per request cost 3–5% of the main thread (docs/BENCHMARKS.md).
   * It holds keys the node is being sent anyway, and only as long as the cache of what they map to.
   */
  private readonly keyDigests = new Map<string, string>();
  /**
   * Digests no key has, until when (real-time ms): a key sent again and again that does not exist is refused without
   * a read. A key is a random secret, so a key created later cannot have been sent (and remembered here) before.
   */
  private readonly unknownDigests = new Map<string, number>();
  private readonly lookups: KeyLookups;
  /** Keys revoked on this node lately (real-time ms until which to remember), kept apart from the evictable cache. */
  private readonly revokedKeys = new Map<string, number>();
  /** Changes of keys' permissions applied on this node: a read in flight across one is not cached. */
  private rereads = 0;
  /** Key id → clock time of the last last_used_at write this node made. */
  private readonly lastUsedWrites = new Map<string, number>();
  /** Revoked jti → expiry (epoch ms). */
  private readonly revokedTokens = new Map<string, number>();
  /** Told of revocations on this node: open streams of a revoked credential end. */
  private readonly revocationListeners = new Set<(r: Revocation) => void>();

  constructor(c: AppContext) {
    this.store = c.store;
    this.clock = c.clock;
    this.tokens = c.tokens;
    this.log = c.log;
    this.channel = c.invalidations;
    this.lookups = new KeyLookups((digests) => findApiKeys(this.store, digests));
  }

  /** Loads the revoked JWT ids that have not expired yet. */
  async start(): Promise<void> {
    for (const t of await liveRevokedTokens(this.store, new Date(this.clock.now()))) this.revokedTokens.set(t.jti, t.expiresAt);
  }

  /** The principal of a credential: an access token (`eyJ…`) or an API key. */
  async credential(token: string): Promise<Principal> {
    if (token.startsWith('eyJ')) return this.principalOf(await this.tokens.verify(token, 'access'));
    return this.apiKey(token);
  }

  /** The principal of an API key (also login's check of the key it is given). */
  async apiKey(key: string): Promise<Principal> {
    const seen = this.keyDigests.get(key);
    const digest = seen ?? digestKey(key);
    const id = this.digests.get(digest);
    let state = id === undefined ? undefined : this.fresh(id);
    if (!state) {
      if ((this.unknownDigests.get(digest) ?? 0) > Date.now()) throw new AppError('UNAUTHORIZED', 'Invalid API key');
      const rereads = this.rereads;
      const row = await this.lookups.find(digest);
      if (!row) {
        setNewest(this.unknownDigests, digest, Date.now() + CACHE_MS);
        throw new AppError('UNAUTHORIZED', 'Invalid API key');
      }
      state = this.remember(row, rereads);
    }
    // Only keys that exist are remembered by their text: unknown ones would push the live keys out.
    if (seen === undefined) setNewest(this.keyDigests, key, digest);
    if (state.revoked) throw new AppError('UNAUTHORIZED', 'Invalid API key');
    this.touch(state.principal.apiKeyId!);
    return state.principal;
  }

  /** The principal of verified access-token claims: not revoked, and its key (if any) still live. */
  private async principalOf(claims: TokenClaims): Promise<Principal> {
    this.checkSession(claims);
    let key: KeyState | null = null;
    if (claims.apiKeyId !== null) {
      key = await this.keyById(claims.apiKeyId);
      if (!key || key.revoked || key.principal.organizationId !== claims.organizationId) {
        throw new AppError('UNAUTHORIZED', 'The API key this token was issued for has been revoked');
      }
      this.touch(claims.apiKeyId);
    }
    return {
      organizationId: claims.organizationId,
      apiKeyId: claims.apiKeyId,
      permissions: key === null ? claims.permissions : narrowed(claims.permissions, key.principal.permissions),
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

  /**
   * The key's permissions changed in the store: every node reads it again, so the key and the JWTs issued from
   * it get the new permissions at once; its open streams end (they were authorized under the old ones).
   */
  async keyChanged(id: string): Promise<void> {
    this.keyReread(id);
    await this.announce({ kind: 'api_key_changed', id });
  }

  /** The key was revoked in the store: from now on every node refuses it and every JWT issued from it. */
  async revokeKey(id: string): Promise<void> {
    this.keyRevoked(id);
    await this.announce({ kind: 'api_key', id });
  }

  /** Revocations announced by a node (this one included). */
  apply(inv: Invalidation): void {
    if (inv.kind === 'api_key') this.keyRevoked(inv.id);
    else if (inv.kind === 'api_key_changed') this.keyReread(inv.id);
    else if (inv.kind === 'tokens') this.tokensRevoked(inv.tokens);
  }

  /** Announcements may have been lost (the channel reconnected): cached keys are read again, revoked ids reloaded. */
  resync(): void {
    this.rereads++;
    this.keys.clear();
    this.digests.clear();
    this.keyDigests.clear();
    this.start().catch((err) => this.log.error('could not reload revoked tokens', err));
  }

  /** Drops the cached key (the next use reads it again) and ends the streams opened with it. */
  private keyReread(id: string): void {
    this.rereads++;
    const state = this.keys.get(id);
    if (state) {
      this.keys.delete(id);
      this.digests.delete(state.digest);
    }
    this.tellListeners({ keyId: id, tokenIds: [], changed: true });
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
    const rereads = this.rereads;
    const row = await findApiKeyById(this.store, id);
    return row ? this.remember(row, rereads) : null;
  }

  private fresh(id: string): KeyState | undefined {
    const state = this.keys.get(id);
    return state && state.until > Date.now() ? state : undefined;
  }

  /** `rereads`: the count when the read began; a key changed since may have been read as it was, and is not cached. */
  private remember(row: KeyRow, rereads: number): KeyState {
    const now = Date.now();
    const revokedHere = (this.revokedKeys.get(row.id) ?? 0) > now;
    const state: KeyState = {
      principal: { organizationId: row.organization_id, apiKeyId: row.id, permissions: row.permissions, via: 'api_key' },
      digest: row.key_digest,
      // A read that started before a revocation on this node must not revive the key.
      revoked: row.revoked || revokedHere,
      until: now + CACHE_MS,
    };
    if (rereads !== this.rereads) return state;
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
    setNewest(this.lastUsedWrites, keyId, now);
    touchApiKey(this.store, keyId, new Date(now)).catch((err) => this.log.warn(`could not record the use of API key ${keyId}`, err));
  }
}

/** What was revoked: a key (and so every JWT issued from it), or JWT ids (access tokens or sessions). */
export interface Revocation {
  keyId: string | null;
  tokenIds: string[];
  /** The key is not revoked, its permissions changed: what was opened with it ends, and may open again. */
  changed?: true;
}

/**
 * A token's permissions as its key now allows them: what it was issued with, within what the key holds today
 * (a key narrowed after the token was issued narrows the token; a key widened does not widen it).
 */
function narrowed(token: readonly string[], key: readonly string[]): readonly string[] {
  if (key.includes('*')) return token;
  if (token.includes('*')) return key;
  return token.filter((p) => key.includes(p));
}

export function authorize(principal: Principal, permission: string): void {
  if (permission === ANY_CREDENTIAL) return;
  if (permission === '*' ? principal.permissions.includes('*') : principal.permissions.some((p) => p === '*' || p === permission)) {
    return;
  }
  throw new AppError('FORBIDDEN', `This credential lacks the '${permission}' permission`);
}

/** DESIGN §4: a code is valid 10 minutes and allows 5 attempts; at most 5 codes per address per hour. */
export const CODE_TTL_MS = 10 * 60_000;
export const CODE_ATTEMPTS = 5;
export const CODES_PER_HOUR = 5;
const PRUNE_EVERY_MS = 60_000;

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' });
export const LoginBody = validator(Type.Object({ api_key: Type.String({ minLength: 1, maxLength: 512 }) }));
export const RefreshBody = validator(Type.Object({ refresh_token: Type.String({ minLength: 1, maxLength: 4096 }) }));
export const LogoutBody = validator(Type.Object({ refresh_token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })) }));
export const EmailStartBody = validator(Type.Object({ email: Email }));
export const EmailVerifyBody = validator(Type.Object({ email: Email, code: Type.String({ minLength: 6, maxLength: 6, pattern: '^[0-9]{6}$' }) }));

/** Addresses compare case-insensitively (as owner_email is looked up). */
const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** A signed token and what it says. */
export interface SignedToken {
  token: string;
  claims: TokenClaims;
}

/** What a login or a refresh hands out: an access token, and the session's refresh token. */
export interface SessionTokens {
  access: SignedToken;
  refresh: SignedToken;
}

export class Sessions {
  private lastPrune = 0;
  private readonly tokens: Tokens;

  constructor(
    private readonly c: AppContext,
    private readonly auth: Authenticator,
  ) {
    this.tokens = c.tokens;
  }

  /** A session opened with an API key: its tokens carry the key's permissions and die with it. */
  async login(body: Valid<typeof LoginBody>): Promise<SessionTokens> {
    const key = await this.auth.apiKey(body.api_key);
    return this.open({ organizationId: key.organizationId, apiKeyId: key.apiKeyId, permissions: key.permissions, via: 'api_key' });
  }

  /** A new access token of a live session; the refresh token stays the same. */
  async refresh(body: Valid<typeof RefreshBody>): Promise<SessionTokens> {
    const claims = await this.tokens.verify(body.refresh_token, 'refresh');
    this.auth.checkSession(claims);
    if (claims.apiKeyId !== null) {
      const key = await this.auth.liveKey(claims.apiKeyId);
      if (!key || key.organizationId !== claims.organizationId) {
        throw new AppError('UNAUTHORIZED', 'The API key this session was opened with has been revoked');
      }
    }
    return { access: await this.tokens.access(claims), refresh: { token: body.refresh_token, claims } };
  }

  /**
   * Ends the session of the caller's access token (if it is one) and the session of the refresh token given.
   * Returns how many distinct token ids were revoked.
   */
  async logout(p: Principal, body: Valid<typeof LogoutBody>): Promise<number> {
    const ended: RevokedToken[] = [];
    if (p.tokenId !== undefined && p.sessionId !== undefined) {
      ended.push({ jti: p.tokenId, expiresAt: p.expiresAt! });
      // The session's refresh token was issued no later than this access token, so it expires by then.
      ended.push({ jti: p.sessionId, expiresAt: p.issuedAt! + this.tokens.refreshTtlSeconds * 1000 });
    }
    if (body.refresh_token !== undefined) {
      const claims = await this.tokens.check(body.refresh_token, 'refresh');
      // An expired refresh token has nothing left to revoke.
      if (claims !== 'expired') {
        if (typeof claims === 'string' || claims.organizationId !== p.organizationId) {
          throw validationError([{ field: 'refresh_token', message: "is not a refresh token of this credential's organization" }]);
        }
        ended.push({ jti: claims.sid, expiresAt: claims.expiresAt });
      }
    }
    await this.auth.revokeTokens(p.organizationId, ended);
    return new Set(ended.map((t) => t.jti)).size;
  }

  /** Mails a login code when the address owns an organization; the same outcome, and throttle, either way. */
  async startEmailLogin(body: Valid<typeof EmailStartBody>): Promise<void> {
    const email = normalizeEmail(body.email);
    const now = this.c.clock.now();
    if (now - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = now;
      await pruneEmailLogin(this.c.store, new Date(now));
    }
    const throttle = await throttleLoginMail(this.c.store, email, new Date(now), CODES_PER_HOUR);
    if (!throttle.admitted) {
      const seconds = Math.max(1, Math.ceil((throttle.retryAt! - now) / 1000));
      // retry_after becomes the Retry-After header, as for the request rate limiter.
      throw new AppError('RATE_LIMITED', `At most ${CODES_PER_HOUR} login codes per address per hour; try again in ${seconds} s`, {
        retry_after: seconds,
      });
    }
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const issued = await issueLoginCode(this.c.store, {
      id: randomUUID(),
      email,
      digest: this.tokens.mac('email-login', `${email}\n${code}`),
      at: new Date(now),
      expiresAt: new Date(now + CODE_TTL_MS),
    });
    // Sent in the background: the answer takes the same time whether or not a mail goes out.
    if (issued) {
      this.c.mailer.send({
        to: email,
        subject: `Your Sluice login code: ${code}`,
        text:
          `Your Sluice login code is ${code}\n\n` +
          `It is valid for ${CODE_TTL_MS / 60_000} minutes and can be tried ${CODE_ATTEMPTS} times. ` +
          'If you did not ask to log in, ignore this mail.\n',
      });
    }
  }

  /** The code for a session of the organization the address owns: permissions `*`, no API key. Every try counts. */
  async verifyEmailLogin(body: Valid<typeof EmailVerifyBody>): Promise<SessionTokens> {
    const email = normalizeEmail(body.email);
    const digest = this.tokens.mac('email-login', `${email}\n${body.code}`);
    const organizationId = await useLoginCode(this.c.store, email, digest, new Date(this.c.clock.now()), CODE_ATTEMPTS);
    if (organizationId === null) throw new AppError('UNAUTHORIZED', 'The code is wrong, expired or used up; ask for a new one');
    return this.open({ organizationId, apiKeyId: null, permissions: ['*'], via: 'email' });
  }

  private async open(session: Session): Promise<SessionTokens> {
    const refresh = await this.tokens.openSession(session);
    return { access: await this.tokens.access(refresh.claims), refresh };
  }
}

/** Sets `key` as the newest entry of a map of at most CACHE_MAX, dropping the oldest when it is full. */
function setNewest<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.delete(key);
  if (map.size >= CACHE_MAX) map.delete(map.keys().next().value!);
  map.set(key, value);
}
