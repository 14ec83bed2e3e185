// Sessions: login with an API key, refresh, logout, who am I; and passwordless email login for the owner of
// an organization. Tokens are JWTs (../tokens.ts); a session lives as long as its refresh token, its key, and
// until logout.
//
// Email login answers `start` the same way whether or not the address owns an organization (202, and the same
// throttle for every address), so neither the answer nor a 429 tells who has an account.
import { randomInt, randomUUID } from 'node:crypto';
import Type from 'typebox';
import { AppError, validationError } from '../../../errors.js';
import { issueLoginCode } from '../../db/sql/issueLoginCode.js';
import { pruneEmailLogin } from '../../db/sql/pruneEmailLogin.js';
import { throttleLoginMail } from '../../db/sql/throttleLoginMail.js';
import { useLoginCode } from '../../db/sql/useLoginCode.js';
import { ANY_CREDENTIAL } from '../auth.js';
import type { Request, Response, Route } from '../router.js';
import type { Session, TokenClaims } from '../tokens.js';
import { validator } from '../../validate.js';
import type { Services } from './services.js';

/** DESIGN §4: a code is valid 10 minutes and allows 5 attempts; at most 5 codes per address per hour. */
export const CODE_TTL_MS = 10 * 60_000;
export const CODE_ATTEMPTS = 5;
export const CODES_PER_HOUR = 5;
const PRUNE_EVERY_MS = 60_000;

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' });
const LoginBody = validator(Type.Object({ api_key: Type.String({ minLength: 1, maxLength: 512 }) }));
const RefreshBody = validator(Type.Object({ refresh_token: Type.String({ minLength: 1, maxLength: 4096 }) }));
const LogoutBody = validator(Type.Object({ refresh_token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })) }));
const StartBody = validator(Type.Object({ email: Email }));
const VerifyBody = validator(Type.Object({ email: Email, code: Type.String({ minLength: 6, maxLength: 6, pattern: '^[0-9]{6}$' }) }));

const TokensBody = Type.Object({
  access_token: Type.String(),
  refresh_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'seconds the access token lives' }),
  refresh_expires_in: Type.Integer({ description: 'seconds the refresh token has left' }),
}, { $id: 'Tokens' });
const Me = Type.Object({
  organization_id: Type.String({ format: 'uuid' }),
  api_key_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'null for email sessions' }),
  permissions: Type.Array(Type.String()),
  via: Type.Union([Type.Literal('api_key'), Type.Literal('jwt'), Type.Literal('email')]),
  issued_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'null for an API key' }),
  expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'null for an API key' }),
}, { $id: 'Me' });

/** Addresses compare case-insensitively (as owner_email is looked up). */
const normalizeEmail = (email: string): string => email.trim().toLowerCase();

export function authRoutes(s: Services): Route[] {
  const tokens = s.auth.tokens;
  let lastPrune = 0;

  const answer = (access: TokenClaims & { token: string }, refresh: { token: string; claims: TokenClaims }): Response => ({
    status: 200,
    body: {
      access_token: access.token,
      refresh_token: refresh.token,
      token_type: 'Bearer',
      expires_in: Math.round((access.expiresAt - access.issuedAt) / 1000),
      // Rounded up: right after login it is the whole lifetime, not one second less.
      refresh_expires_in: Math.max(0, Math.ceil((refresh.claims.expiresAt - s.clock.now()) / 1000)),
    },
  });

  const open = async (session: Session): Promise<Response> => {
    const refresh = await tokens.openSession(session);
    const access = await tokens.access(refresh.claims);
    return answer({ ...access.claims, token: access.token }, refresh);
  };

  const login = async (req: Request): Promise<Response> => {
    const body = LoginBody(req.body);
    const key = await s.auth.apiKey(body.api_key);
    return open({ organizationId: key.organizationId, apiKeyId: key.apiKeyId, permissions: key.permissions, via: 'api_key' });
  };

  const refresh = async (req: Request): Promise<Response> => {
    const body = RefreshBody(req.body);
    const claims = await tokens.verify(body.refresh_token, 'refresh');
    s.auth.checkSession(claims);
    if (claims.apiKeyId !== null) {
      const key = await s.auth.liveKey(claims.apiKeyId);
      if (!key || key.organizationId !== claims.organizationId) {
        throw new AppError('UNAUTHORIZED', 'The API key this session was opened with has been revoked');
      }
    }
    const access = await tokens.access(claims);
    return answer({ ...access.claims, token: access.token }, { token: body.refresh_token, claims });
  };

  const logout = async (req: Request): Promise<Response> => {
    const body = LogoutBody(req.body);
    const p = req.principal;
    const ended: Array<{ jti: string; expiresAt: number }> = [];
    if (p.tokenId !== undefined && p.sessionId !== undefined) {
      ended.push({ jti: p.tokenId, expiresAt: p.expiresAt! });
      // The session's refresh token was issued no later than this access token, so it expires by then.
      ended.push({ jti: p.sessionId, expiresAt: p.issuedAt! + tokens.refreshTtlSeconds * 1000 });
    }
    if (body.refresh_token !== undefined) {
      const claims = await tokens.check(body.refresh_token, 'refresh');
      // An expired refresh token has nothing left to revoke.
      if (claims !== 'expired') {
        if (typeof claims === 'string' || claims.organizationId !== p.organizationId) {
          throw validationError([{ field: 'refresh_token', message: "is not a refresh token of this credential's organization" }]);
        }
        ended.push({ jti: claims.sid, expiresAt: claims.expiresAt });
      }
    }
    await s.auth.revokeTokens(p.organizationId, ended);
    return { status: 200, body: { revoked: new Set(ended.map((t) => t.jti)).size } };
  };

  const me = (req: Request): Response => {
    const p = req.principal;
    const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
    return {
      status: 200,
      body: {
        organization_id: p.organizationId,
        api_key_id: p.apiKeyId,
        permissions: p.permissions,
        via: p.via,
        issued_at: iso(p.issuedAt),
        expires_at: iso(p.expiresAt),
      },
    };
  };

  const emailStart = async (req: Request): Promise<Response> => {
    const email = normalizeEmail(StartBody(req.body).email);
    const now = s.clock.now();
    if (now - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = now;
      await pruneEmailLogin(s.store, new Date(now));
    }
    const throttle = await throttleLoginMail(s.store, email, new Date(now), CODES_PER_HOUR);
    if (!throttle.admitted) {
      const seconds = Math.max(1, Math.ceil((throttle.retryAt! - now) / 1000));
      // retry_after becomes the Retry-After header (server.ts), as for the request rate limiter.
      throw new AppError('RATE_LIMITED', `At most ${CODES_PER_HOUR} login codes per address per hour; try again in ${seconds} s`, {
        retry_after: seconds,
      });
    }
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const issued = await issueLoginCode(s.store, {
      id: randomUUID(),
      email,
      digest: tokens.mac('email-login', `${email}\n${code}`),
      at: new Date(now),
      expiresAt: new Date(now + CODE_TTL_MS),
    });
    // Sent in the background: the answer takes the same time whether or not a mail goes out.
    if (issued) {
      s.mailer.send({
        to: email,
        subject: `Your Sluice login code: ${code}`,
        text:
          `Your Sluice login code is ${code}\n\n` +
          `It is valid for ${CODE_TTL_MS / 60_000} minutes and can be tried ${CODE_ATTEMPTS} times. ` +
          'If you did not ask to log in, ignore this mail.\n',
      });
    }
    return { status: 202, body: { sent: true } };
  };

  const emailVerify = async (req: Request): Promise<Response> => {
    const body = VerifyBody(req.body);
    const email = normalizeEmail(body.email);
    const digest = tokens.mac('email-login', `${email}\n${body.code}`);
    const organizationId = await useLoginCode(s.store, email, digest, new Date(s.clock.now()), CODE_ATTEMPTS);
    if (organizationId === null) throw new AppError('UNAUTHORIZED', 'The code is wrong, expired or used up; ask for a new one');
    return open({ organizationId, apiKeyId: null, permissions: ['*'], via: 'email' });
  };

  const tokensOk = (description: string) => ({ 200: { description, schema: TokensBody } });
  return [
    {
      method: 'POST',
      path: '/api/v1/auth/login',
      permission: null,
      handler: login,
      doc: {
        operationId: 'login',
        summary: 'Exchange an API key for an access token and a refresh token',
        description: 'The tokens carry the key\'s permissions and stop working when the key is revoked. 401 for an unknown or revoked key.',
        body: LoginBody.schema,
        responses: tokensOk('The tokens'),
        errors: ['UNAVAILABLE'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/auth/refresh',
      permission: null,
      handler: refresh,
      doc: {
        operationId: 'refreshToken',
        summary: 'A new access token from a refresh token (the refresh token stays the same)',
        description: '401 when the refresh token is invalid, expired, logged out, or its key revoked; an access token is refused here.',
        body: RefreshBody.schema,
        responses: tokensOk('A new access token, and the same refresh token'),
        errors: ['UNAVAILABLE'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/auth/logout',
      permission: ANY_CREDENTIAL,
      handler: logout,
      doc: {
        operationId: 'logout',
        summary: 'End the session of the access token (and of the refresh token given, if any)',
        description: 'Revokes the access token and its session: the refresh token it came from and every access token minted from it.',
        body: LogoutBody.schema,
        responses: { 200: { description: 'How many token ids were revoked', schema: Type.Object({ revoked: Type.Integer({ minimum: 0 }) }, { $id: 'LogoutResult' }) } },
      },
    },
    {
      method: 'GET',
      path: '/api/v1/auth/me',
      permission: ANY_CREDENTIAL,
      handler: me,
      doc: {
        operationId: 'getCurrentCredential',
        summary: 'The organization, key, permissions and lifetime of the current credential', responses: { 200: { description: 'Who is calling', schema: Me } },
      },
    },
    {
      method: 'POST',
      path: '/api/v1/auth/email/start',
      permission: null,
      handler: emailStart,
      doc: {
        operationId: 'startEmailLogin',
        summary: 'Start email login: mail a 6-digit code to the owner address of an organization',
        description:
          `Always 202 {sent: true}, whether or not an organization has this owner email. The code is valid ${CODE_TTL_MS / 60_000} minutes ` +
          `for ${CODE_ATTEMPTS} attempts; a new code ends the previous ones. At most ${CODES_PER_HOUR} codes per address per hour: ` +
          'beyond that 429 rate_limited with Retry-After.',
        body: StartBody.schema,
        responses: { 202: { description: 'Accepted', schema: Type.Object({ sent: Type.Literal(true) }, { $id: 'EmailLoginStarted' }) } },
        errors: ['RATE_LIMITED', 'UNAVAILABLE'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/auth/email/verify',
      permission: null,
      handler: emailVerify,
      doc: {
        operationId: 'verifyEmailLogin',
        summary: 'Finish email login: the code for tokens of the organization the address owns',
        description: 'Tokens with permissions ["*"] and no API key. 401 for a wrong, expired or spent code; every try counts.',
        body: VerifyBody.schema,
        responses: tokensOk('The tokens'),
        errors: ['UNAVAILABLE'],
      },
    },
  ];
}
