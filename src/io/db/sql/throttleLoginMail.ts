// throttleLoginMail — the first step of email login: admits at most `max` codes per address per sliding hour. The
// address's row holds the send times of the last hour; INSERT … ON CONFLICT DO UPDATE locks that row, so
// concurrent starts for one address are serialised and the 6th of a burst is refused, never admitted by a race.
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
