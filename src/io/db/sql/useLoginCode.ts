// useLoginCode — spends one attempt on the address's live code and uses it up when the digest matches. The
// UPDATE re-checks its WHERE on the locked row, so concurrent tries never exceed the attempts and one code logs
// in once.
import type { Store } from '../store.js';

/** The organization the code logs into, or null (no live code, or a wrong one: an attempt is spent). */
export async function useLoginCode(store: Store, email: string, digest: string, now: Date, maxAttempts: number): Promise<string | null> {
  const rows = await store.query<{ organization_id: string; ok: boolean }>(
    `UPDATE email_login_codes SET attempts = attempts + 1, used_at = CASE WHEN code_digest = $2 THEN $3 ELSE NULL END
      WHERE id = (SELECT id FROM email_login_codes
                   WHERE email = $1 AND used_at IS NULL AND expires_at > $3 AND attempts < $4
                   ORDER BY created_at DESC LIMIT 1)
        AND used_at IS NULL AND expires_at > $3 AND attempts < $4
      RETURNING organization_id, code_digest = $2 AS ok`,
    [email, digest, now, maxAttempts],
  );
  const row = rows[0];
  return row && row.ok ? row.organization_id : null;
}
