// Every call the dashboard makes goes through here: the public REST API with the signed-in session's access
// token, exactly as any client would use it. The server decides what the key may do; the page only hides
// buttons it knows would be refused.
import { currentAccessToken, refreshOrSignOut } from './session';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface Page<T> {
  items: T[];
  /** X-Next-Cursor of the answer; null on the last page. */
  next: string | null;
}

/** The X-Sluice-Version the server last answered with (shown in the footer). */
export let serverVersion = '';

const MAX_RATE_LIMIT_WAIT_S = 10;

export async function call<T>(method: string, path: string, body?: unknown, opts: { auth?: boolean } = {}): Promise<{ body: T; headers: Headers }> {
  const auth = opts.auth ?? true;
  for (let attempt = 0; ; attempt++) {
    const token = auth ? currentAccessToken() : null;
    if (auth && !token) throw new ApiError(401, 'UNAUTHORIZED', 'Not signed in');
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
    serverVersion = res.headers.get('x-sluice-version') ?? serverVersion;
    if (res.ok) {
      const text = await res.text();
      return { body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
    }
    // An access token that expired between refreshes (a laptop asleep): refresh once and try again.
    if (res.status === 401 && auth && attempt === 0 && (await refreshOrSignOut())) continue;
    // Plans rate-limit per organization; a short wait is better than an error on a busy page.
    const retryAfter = Number(res.headers.get('retry-after'));
    if (res.status === 429 && attempt < 3 && retryAfter > 0 && retryAfter <= MAX_RATE_LIMIT_WAIT_S) {
      await new Promise((r) => setTimeout(r, retryAfter * 1000));
      continue;
    }
    let code = 'HTTP_' + res.status;
    let message = res.statusText || `HTTP ${res.status}`;
    try {
      const err = (await res.json()) as { code?: string; message?: string };
      code = err.code ?? code;
      message = err.message ?? message;
    } catch {
      /* not a JSON error body */
    }
    throw new ApiError(res.status, code, message);
  }
}

export const get = async <T>(path: string): Promise<T> => (await call<T>('GET', path)).body;
export const post = async <T>(path: string, body?: unknown): Promise<T> => (await call<T>('POST', path, body ?? {})).body;
export const del = async <T>(path: string): Promise<T> => (await call<T>('DELETE', path)).body;

/** One page of a list route (body: array; next cursor in X-Next-Cursor). */
export async function page<T>(path: string, query: URLSearchParams): Promise<Page<T>> {
  const qs = query.toString();
  const r = await call<T[]>('GET', qs ? `${path}?${qs}` : path);
  return { items: r.body, next: r.headers.get('x-next-cursor') };
}

/** Every page of a list, up to `max` items (the dashboard shows at most that many of anything at once). */
export async function all<T>(path: string, max = 500, query = new URLSearchParams()): Promise<{ items: T[]; truncated: boolean }> {
  const items: T[] = [];
  const q = new URLSearchParams(query);
  q.set('limit', '100');
  for (;;) {
    const p = await page<T>(path, q);
    items.push(...p.items);
    if (!p.next) return { items, truncated: false };
    if (items.length >= max) return { items, truncated: true };
    q.set('cursor', p.next);
  }
}

export const enc = encodeURIComponent;
