// The three steps of email login, each one statement:
//
// throttleLoginMail  admits at most `max` codes per address per sliding hour. The address's row holds the send
//                    times of the last hour; INSERT … ON CONFLICT DO UPDATE locks that row, so concurrent starts for
//                    one address are serialised and the 6th of a burst is refused, never admitted by a race.
// issueLoginCode     stores a code for the organization whose owner has this address (the oldest if several) and
//                    ends the address's earlier codes; nothing is written when no organization matches.
// useLoginCode       spends one attempt on the address's live code and uses it up when the digest matches. The
//                    UPDATE re-checks its WHERE on the locked row, so concurrent tries never exceed the attempts
//                    and one code logs in once.
import type { Store } from '../store.js';

export const LOGIN_WINDOW_MS = 3_600_000;

export interface Throttle {
  admitted: boolean;
  /** When refused: the instant the oldest send of the window leaves it. */
  retryAt: number | null;
}

export async function throttleLoginMail(store: Store, email: string, now: Date, max: number): Promise<Throttle> {
  const recent = `ARRAY(SELECT s FROM unnest(t.sent_at) s WHERE s > $2::timestamptz - interval '${LOGIN_WINDOW_MS} milliseconds' ORDER BY s)`;
  const rows = await store.query<{ admitted: boolean; oldest: Date | string | null }>(
    `INSERT INTO email_login_throttle AS t (email, sent_at, admitted, updated_at)
     VALUES ($1, ARRAY[$2::timestamptz], true, $2::timestamptz)
     ON CONFLICT (email) DO UPDATE SET
       sent_at = CASE WHEN cardinality(${recent}) < $3 THEN ${recent} || $2::timestamptz ELSE ${recent} END,
       admitted = cardinality(${recent}) < $3,
       updated_at = $2::timestamptz
     RETURNING t.admitted, (SELECT min(s) FROM unnest(t.sent_at) s) AS oldest`,
    [email, now.toISOString(), max],
  );
  const row = rows[0]!;
  return {
    admitted: row.admitted,
    retryAt: row.admitted || row.oldest === null ? null : new Date(row.oldest).getTime() + LOGIN_WINDOW_MS,
  };
}

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

/** Rows no request can use any more: throttle rows idle for an hour, codes a day past their expiry. */
export async function pruneEmailLogin(store: Store, now: Date): Promise<void> {
  await store.query(
    `WITH t AS (DELETE FROM email_login_throttle WHERE updated_at < $1::timestamptz - interval '${LOGIN_WINDOW_MS} milliseconds')
     DELETE FROM email_login_codes WHERE expires_at < $1::timestamptz - interval '1 day'`,
    [now],
  );
}
