// Session routes (REST adapter): login with an API key, refresh, logout, who am I; and passwordless email login
// for the owner of an organization. The operations are Sessions in src/app/auth.ts.
import Type from 'typebox';
import type { App } from '../../../app/app.js';
import {
  ANY_CREDENTIAL,
  CODE_ATTEMPTS,
  CODE_TTL_MS,
  CODES_PER_HOUR,
  EmailStartBody,
  EmailVerifyBody,
  LoginBody,
  LogoutBody,
  RefreshBody,
  type SessionTokens,
} from '../../../app/auth.js';
import type { Request, Response, Route } from '../router.js';

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

export function authRoutes(app: App): Route[] {
  const { sessions } = app;
  const clock = app.ctx.clock;

  const answer = ({ access, refresh }: SessionTokens): Response => ({
    status: 200,
    body: {
      access_token: access.token,
      refresh_token: refresh.token,
      token_type: 'Bearer',
      expires_in: Math.round((access.claims.expiresAt - access.claims.issuedAt) / 1000),
      // Rounded up: right after login it is the whole lifetime, not one second less.
      refresh_expires_in: Math.max(0, Math.ceil((refresh.claims.expiresAt - clock.now()) / 1000)),
    },
  });

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

  const handlers = {
    login: async (req: Request) => answer(await sessions.login(LoginBody(req.body))),
    refresh: async (req: Request) => answer(await sessions.refresh(RefreshBody(req.body))),
    logout: async (req: Request): Promise<Response> => ({ status: 200, body: { revoked: await sessions.logout(req.principal, LogoutBody(req.body)) } }),
    emailStart: async (req: Request): Promise<Response> => {
      await sessions.startEmailLogin(EmailStartBody(req.body));
      return { status: 202, body: { sent: true } };
    },
    emailVerify: async (req: Request) => answer(await sessions.verifyEmailLogin(EmailVerifyBody(req.body))),
  };

  const tokensOk = (description: string) => ({ 200: { description, schema: TokensBody } });
  return [
    {
      method: 'POST',
      path: '/api/v1/auth/login',
      permission: null,
      handler: handlers.login,
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
      handler: handlers.refresh,
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
      handler: handlers.logout,
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
      handler: handlers.emailStart,
      doc: {
        operationId: 'startEmailLogin',
        summary: 'Start email login: mail a 6-digit code to the owner address of an organization',
        description:
          `Always 202 {sent: true}, whether or not an organization has this owner email. The code is valid ${CODE_TTL_MS / 60_000} minutes ` +
          `for ${CODE_ATTEMPTS} attempts; a new code ends the previous ones. At most ${CODES_PER_HOUR} codes per address per hour: ` +
          'beyond that 429 rate_limited with Retry-After.',
        body: EmailStartBody.schema,
        responses: { 202: { description: 'Accepted', schema: Type.Object({ sent: Type.Literal(true) }, { $id: 'EmailLoginStarted' }) } },
        errors: ['RATE_LIMITED', 'UNAVAILABLE'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/auth/email/verify',
      permission: null,
      handler: handlers.emailVerify,
      doc: {
        operationId: 'verifyEmailLogin',
        summary: 'Finish email login: the code for tokens of the organization the address owns',
        description: 'Tokens with permissions ["*"] and no API key. 401 for a wrong, expired or spent code; every try counts.',
        body: EmailVerifyBody.schema,
        responses: tokensOk('The tokens'),
        errors: ['UNAVAILABLE'],
      },
    },
  ];
}
