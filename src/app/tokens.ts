// JWT sessions (jose, HS256). A login opens a session: a refresh token whose jti is the session id, and access
// tokens that carry it as `sid`, so that revoking the session (logout) kills every access token minted from it.
// `typ` tells the two apart: a refresh token is never an access token, nor the reverse.
//
// Claims: sub (organization id), key (the API key id; absent for email sessions), perms, via (how the session
// began: api_key | email), typ (access | refresh), sid, jti, iat, exp, iss. Times come from the node's Clock,
// for issuing and for verifying, so a ManualClock expires tokens.
//
// The HS256 secret is JWT_SECRET when set (required in production: every node of a cluster must sign with the
// same one). Otherwise 48 random bytes generated on first boot and kept in DATA_DIR/jwt-secret (mode 0600), so
// tokens survive a restart of a local or single-node instance.
import { createHmac, createSecretKey, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { errors, jwtVerify, SignJWT } from 'jose';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';

export type TokenType = 'access' | 'refresh';
export type SessionVia = 'api_key' | 'email';

export interface Session {
  organizationId: string;
  /** The key the session was opened with; null for email sessions. */
  apiKeyId: string | null;
  permissions: readonly string[];
  via: SessionVia;
}

export interface TokenClaims extends Session {
  typ: TokenType;
  jti: string;
  /** The session: the refresh token's own jti, carried by the access tokens minted from it. */
  sid: string;
  /** Epoch ms. */
  issuedAt: number;
  expiresAt: number;
}

const ISSUER = 'sluice';

export class Tokens {
  private readonly key: KeyObject;

  constructor(
    secret: Uint8Array,
    private readonly clock: Clock,
    readonly accessTtlSeconds: number,
    readonly refreshTtlSeconds: number,
  ) {
    // A KeyObject made once: jose would otherwise import the raw secret on every call.
    this.key = createSecretKey(secret);
  }

  /** HMAC-SHA256 (hex) under the signing secret, for values that must not be stored in the clear (login codes). */
  mac(purpose: string, data: string): string {
    return createHmac('sha256', this.key).update(`${purpose}\n${data}`).digest('hex');
  }

  /** A new session's refresh token. */
  openSession(session: Session): Promise<{ token: string; claims: TokenClaims }> {
    const jti = randomUUID();
    return this.sign('refresh', session, jti, jti, this.refreshTtlSeconds);
  }

  /** An access token of the session a refresh token opened. */
  access(refresh: TokenClaims): Promise<{ token: string; claims: TokenClaims }> {
    return this.sign('access', refresh, randomUUID(), refresh.sid, this.accessTtlSeconds);
  }

  private async sign(typ: TokenType, s: Session, jti: string, sid: string, ttl: number): Promise<{ token: string; claims: TokenClaims }> {
    const iat = Math.floor(this.clock.now() / 1000);
    const claims: Record<string, unknown> = { typ, perms: [...s.permissions], via: s.via, sid };
    if (s.apiKeyId !== null) claims.key = s.apiKeyId;
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setSubject(s.organizationId)
      .setJti(jti)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ttl)
      .sign(this.key);
    const session: Session = { organizationId: s.organizationId, apiKeyId: s.apiKeyId, permissions: [...s.permissions], via: s.via };
    return { token, claims: { ...session, typ, jti, sid, issuedAt: iat * 1000, expiresAt: (iat + ttl) * 1000 } };
  }

  /** The claims of a valid, unexpired token of type `typ`; 401 otherwise. Revocation is the caller's check. */
  async verify(token: string, typ: TokenType): Promise<TokenClaims> {
    const v = await this.check(token, typ);
    if (v === 'expired') throw new AppError('UNAUTHORIZED', 'The token has expired');
    if (v === 'wrong_type') {
      throw new AppError('UNAUTHORIZED', typ === 'access' ? 'A refresh token is not an access token' : 'Not a refresh token');
    }
    if (v === 'invalid') throw new AppError('UNAUTHORIZED', 'Invalid token');
    return v;
  }

  /** verify() without the throwing: logout tells an expired token (nothing left to revoke) from a forged one. */
  async check(token: string, typ: TokenType): Promise<TokenClaims | 'expired' | 'wrong_type' | 'invalid'> {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        currentDate: new Date(this.clock.now()),
        requiredClaims: ['sub', 'jti', 'iat', 'exp'],
      }));
    } catch (err) {
      return err instanceof errors.JWTExpired ? 'expired' : 'invalid';
    }
    const { sub, jti, iat, exp, perms, via, sid, key } = payload;
    if (payload.typ !== typ) return 'wrong_type';
    const valid =
      typeof sub === 'string' &&
      typeof jti === 'string' &&
      typeof sid === 'string' &&
      typeof iat === 'number' &&
      typeof exp === 'number' &&
      Array.isArray(perms) &&
      perms.every((p) => typeof p === 'string') &&
      (via === 'api_key' || via === 'email') &&
      (via === 'email' ? key === undefined : typeof key === 'string');
    if (!valid) return 'invalid';
    return {
      typ,
      organizationId: sub,
      apiKeyId: via === 'email' ? null : (key as string),
      permissions: perms as string[],
      via,
      jti,
      sid,
      issuedAt: iat * 1000,
      expiresAt: exp * 1000,
    };
  }
}

export const SECRET_FILE = 'jwt-secret';
const SECRET_BYTES = 48;

export function loadJwtSecret(config: Config, log: (msg: string) => void): Uint8Array {
  if (config.jwtSecret !== null) return new TextEncoder().encode(config.jwtSecret);
  const file = path.join(config.dataDir, SECRET_FILE);
  fs.mkdirSync(config.dataDir, { recursive: true });
  try {
    // 'wx': two processes booting on one directory keep the first one's secret, never overwrite it.
    fs.writeFileSync(file, `${randomBytes(SECRET_BYTES).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    fs.chmodSync(file, 0o600);
    log(`generated the JWT signing secret in ${file} (set JWT_SECRET to choose one)`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const secret = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64url');
  if (secret.length < 32) throw new Error(`${file} holds a secret shorter than 32 bytes; delete it to generate a new one`);
  return new Uint8Array(secret);
}
