// How REST carries a credential: only `Authorization: Bearer <token>` (the token is checked by the
// Authenticator, src/app/auth.ts). A credential in the query string is refused (401) so keys do not end up in
// access logs; the four real-time routes (SSE, WebSocket) are the exception, since browsers cannot set headers
// there (`queryCredential`). X-API-Key is not read at all.
import { AppError } from '../../errors.js';

/** The token of an `Authorization: Bearer <token>` header, or 401. */
export function bearerToken(authorization: string): string {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!m) throw new AppError('UNAUTHORIZED', 'Missing Authorization: Bearer <API key or access token>');
  return m[1]!;
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
