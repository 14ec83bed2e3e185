// revokeTokens — JWT ids revoked by logout, written before logout answers (read back by liveRevokedTokens at
// every node's boot).
import type { Store } from '../store.js';

export interface RevokedToken {
  jti: string;
  expiresAt: number;
}

export async function revokeTokens(store: Store, organizationId: string, tokens: RevokedToken[], at: Date): Promise<void> {
  if (tokens.length === 0) return;
  // One row per token; at most two per logout, so a VALUES list is simpler than unnest over arrays (which pg
  // and PGlite take differently as parameters).
  const params: unknown[] = [organizationId, at];
  const values = tokens.map((t) => {
    params.push(t.jti, new Date(t.expiresAt));
    return `($${params.length - 1}, $1::uuid, $${params.length}::timestamptz, $2::timestamptz)`;
  });
  await store.query(
    `INSERT INTO revoked_tokens (jti, organization_id, expires_at, revoked_at) VALUES ${values.join(', ')}
     ON CONFLICT (jti) DO UPDATE SET expires_at = GREATEST(revoked_tokens.expires_at, EXCLUDED.expires_at)`,
    params,
  );
}
