// The signed-in session, in memory only: an API key is exchanged for a JWT pair (POST /auth/login), the access
// token is refreshed before it expires (POST /auth/refresh), and nothing is written to localStorage,
// sessionStorage or a cookie, so a reload or a closed tab signs out. The API key itself is forgotten as soon
// as the login answers.
import { useEffect, useState } from 'preact/hooks';
import { call } from './api';

export interface Me {
  organization_id: string;
  api_key_id: string | null;
  permissions: string[];
  via: 'api_key' | 'jwt' | 'email';
  issued_at: string | null;
  expires_at: string | null;
}

interface Tokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  refresh_expires_in: number;
}

export interface Session {
  access: string;
  refresh: string;
  /** Epoch ms at which the access token expires. */
  expiresAt: number;
  me: Me;
}

let current: Session | null = null;
/** Why the last session ended when the user did not ask (shown on the sign-in form). */
let endedBecause: string | null = null;
let refreshTimer: ReturnType<typeof setTimeout> | null = null;
let refreshing: Promise<boolean> | null = null;
const listeners = new Set<() => void>();

const changed = () => {
  for (const fn of listeners) fn();
};

export const currentAccessToken = (): string | null => current?.access ?? null;
export const sessionEndedBecause = (): string | null => endedBecause;

/** Re-renders the caller when the session starts, refreshes or ends. */
export function useSession(): Session | null {
  const [, setTick] = useState(0);
  useEffect(() => {
    const fn = () => setTick((t) => t + 1);
    listeners.add(fn);
    return () => void listeners.delete(fn);
  }, []);
  return current;
}

/** '*' grants everything; otherwise the exact permission (jobs:read, dlq:write…). */
export function can(permission: string): boolean {
  const p = current?.me.permissions ?? [];
  return p.includes('*') || p.includes(permission);
}

function schedule(expiresInS: number): void {
  if (refreshTimer) clearTimeout(refreshTimer);
  // A minute before expiry, or at 80% of a short lifetime.
  const lead = Math.min(60, expiresInS * 0.2);
  refreshTimer = setTimeout(() => void refreshOrSignOut(), Math.max(5, expiresInS - lead) * 1000);
}

export async function signIn(apiKey: string): Promise<void> {
  const { body: t } = await call<Tokens>('POST', '/api/v1/auth/login', { api_key: apiKey }, { auth: false });
  const pending: Session = { access: t.access_token, refresh: t.refresh_token, expiresAt: Date.now() + t.expires_in * 1000, me: { organization_id: '', api_key_id: null, permissions: [], via: 'jwt', issued_at: null, expires_at: null } };
  current = pending;
  try {
    pending.me = (await call<Me>('GET', '/api/v1/auth/me')).body;
  } catch (err) {
    current = null;
    throw err;
  }
  endedBecause = null;
  schedule(t.expires_in);
  changed();
}

/** Refreshes the access token (one request however many callers ask at once); false when the session is over. */
export function refreshOrSignOut(): Promise<boolean> {
  const s = current;
  if (!s) return Promise.resolve(false);
  refreshing ??= (async () => {
    try {
      const { body: t } = await call<Tokens>('POST', '/api/v1/auth/refresh', { refresh_token: s.refresh }, { auth: false });
      if (current !== s) return false;
      s.access = t.access_token;
      s.expiresAt = Date.now() + t.expires_in * 1000;
      schedule(t.expires_in);
      changed();
      return true;
    } catch {
      if (current === s) end('Your session ended (the key was revoked or the session expired). Sign in again.');
      return false;
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

function end(reason: string | null): void {
  if (refreshTimer) clearTimeout(refreshTimer);
  refreshTimer = null;
  current = null;
  endedBecause = reason;
  changed();
}

/** Ends the session on the server too (its tokens stop working at once), then forgets it. */
export async function signOut(): Promise<void> {
  const s = current;
  if (!s) return;
  try {
    await call('POST', '/api/v1/auth/logout', { refresh_token: s.refresh });
  } catch {
    /* the tokens are forgotten anyway */
  }
  end(null);
}
