// liveRevokedTokens — the JWT ids revoked by logout that can still matter, read by every node at boot. Rows of
// tokens that have expired anyway are deleted at the same time, since no token they name can pass verification
// any more.
import type { Store } from '../store.js';
import type { RevokedToken } from './revokeTokens.js';

export async function liveRevokedTokens(store: Store, now: Date): Promise<RevokedToken[]> {
  await store.query('DELETE FROM revoked_tokens WHERE expires_at <= $1', [now]);
  const rows = await store.query<{ jti: string; expires_at: Date | string }>('SELECT jti, expires_at FROM revoked_tokens', []);
  return rows.map((r) => ({ jti: r.jti, expiresAt: new Date(r.expires_at).getTime() }));
}
