// Incoming webhooks (SPEC "Incoming webhooks and webhook token", Authentication rule 9): the organization's
// webhook token, and the enqueue of a job posted with it.
//
// The token is created lazily, by the first read, and rotated on demand: the old one is refused as soon as the
// rotation is committed, because the ingest looks the token up in the store on every request (one primary-key
// read) and compares in constant time over digests. A missing or wrong token, an unknown organization and an
// organization that has no token yet are all the same refusal, so the ingest does not reveal which
// organizations exist. What the ingest enqueues is a job in the service's own format, through Jobs.enqueue:
// same validation, job quotas (429), payload cap (413) and idempotency as POST /api/v1/jobs.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError, notFound } from '../errors.js';
import { ensureWebhookToken } from '../io/db/sql/ensureWebhookToken.js';
import { findWebhookToken } from '../io/db/sql/findWebhookToken.js';
import { rotateWebhookToken } from '../io/db/sql/rotateWebhookToken.js';
import type { AppContext } from './context.js';
import { isUuid } from './fields.js';
import type { Enqueued, JobDefinition, Jobs } from './jobs.js';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
const newToken = (): string => `whk_${randomBytes(32).toString('base64url')}`;

export class IncomingWebhooks {
  constructor(
    private readonly c: AppContext,
    private readonly jobs: Jobs,
  ) {}

  /** The organization's token, created on the first call (concurrent first calls agree on one). */
  async token(org: string): Promise<string> {
    return this.known(await ensureWebhookToken(this.c.store, org, newToken()));
  }

  /** A new token: the old one is refused from this commit on. */
  async rotate(org: string): Promise<string> {
    return this.known(await rotateWebhookToken(this.c.store, org, newToken(), new Date(this.c.clock.now())));
  }

  /** The organization a request to `/webhooks/<orgId>/custom` carrying `token` acts for, or 401. */
  async organizationOf(orgId: string, token: string): Promise<string> {
    const refused = () => new AppError('UNAUTHORIZED', 'A valid X-Webhook-Token is required');
    if (token === '' || !isUuid(orgId)) throw refused();
    const org = orgId.toLowerCase();
    const stored = await findWebhookToken(this.c.store, org);
    if (stored === null || !timingSafeEqual(digest(token), digest(stored))) throw refused();
    return org;
  }

  /** The job posted with the token, enqueued as POST /api/v1/jobs enqueues it. */
  enqueue(org: string, def: JobDefinition): Promise<Enqueued> {
    return this.jobs.enqueue(org, def);
  }

  private known(token: string | null): string {
    if (token === null) throw notFound('Organization');
    return token;
  }
}
