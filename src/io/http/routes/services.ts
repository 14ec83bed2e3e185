// What the route handlers not yet moved to src/app are given: the use cases' context, plus credentials, mail and
// the use cases themselves.
import type { App } from '../../../app/app.js';
import type { AppContext } from '../../../app/context.js';
import type { Mailer } from '../../mail/mailer.js';
import type { Authenticator } from '../auth.js';

export interface Services extends AppContext {
  /** Credentials: key lookups, JWTs, revocation (the key and token routes change what it caches). */
  auth: Authenticator;
  mailer: Mailer;
  app: App;
}
