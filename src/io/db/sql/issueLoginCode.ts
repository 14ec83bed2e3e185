// issueLoginCode — stores a code for the organization whose owner has this address (the oldest if several) and
// ends the address's earlier codes; nothing is written when no organization matches.
import type { Store } from '../store.js';

export interface NewLoginCode {
  id: string;
  email: string;
  digest: string;
  at: Date;
  expiresAt: Date;
}

/** True when a code was stored (an organization has this owner address). */
export async function issueLoginCode(store: Store, c: NewLoginCode): Promise<boolean> {
  const rows = await store.query(
    `WITH o AS (
       SELECT id FROM organizations WHERE lower(owner_email) = $2 AND owner_email IS NOT NULL ORDER BY created_at, id LIMIT 1),
     ended AS (
       UPDATE email_login_codes SET used_at = $4 WHERE email = $2 AND used_at IS NULL AND EXISTS (SELECT 1 FROM o))
     INSERT INTO email_login_codes (id, email, code_digest, organization_id, attempts, created_at, expires_at)
     SELECT $1, $2, $3, o.id, 0, $4, $5 FROM o
     RETURNING id`,
    [c.id, c.email, c.digest, c.at, c.expiresAt],
  );
  return rows.length > 0;
}
