// pruneEmailLogin — deletes the email login rows no request can use any more.
import type { Store } from '../store.js';
import { LOGIN_WINDOW_MS } from './throttleLoginMail.js';

/** Rows no request can use any more: throttle rows idle for an hour, codes a day past their expiry. */
export async function pruneEmailLogin(store: Store, now: Date): Promise<void> {
  await store.query(
    `WITH t AS (DELETE FROM email_login_throttle WHERE updated_at < $1::timestamptz - interval '${LOGIN_WINDOW_MS} milliseconds')
     DELETE FROM email_login_codes WHERE expires_at < $1::timestamptz - interval '1 day'`,
    [now],
  );
}
