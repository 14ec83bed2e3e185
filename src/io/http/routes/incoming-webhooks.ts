// Incoming webhooks (SPEC "Incoming webhooks and webhook token", Authentication rule 9).
//
// POST /api/v1/webhooks/:org_id/custom takes a body in the service's own job format and enqueues it through the
// same code as POST /api/v1/jobs (enqueueJob): same validation, job quotas (429), payload cap (413) and
// idempotency. Its credential is the organization's webhook token in X-Webhook-Token instead of a Bearer
// credential: the route's `authenticate` checks it (constant time over digests), and the request is then
// rate-limited and counted in the organization's API calls like any other. A missing or wrong token, an
// unknown organization and an organization that has no token yet all answer the same 401, so the route does
// not reveal which organizations exist.
//
// The token is created lazily, by the first GET of /organizations/webhook-token, and rotated by /regenerate
// (the old one is refused as soon as the rotation is committed: the ingest route reads the token from the
// store on every request, one primary-key read). Both token routes need `*`.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import Type from 'typebox';
import { AppError, notFound } from '../../../errors.js';
import { ensureWebhookToken, findWebhookToken, rotateWebhookToken } from '../../db/sql/webhookToken.js';
import type { Principal } from '../auth.js';
import type { Request, Response, Route } from '../router.js';
import { CreatedJob } from '../schemas.js';
import { EnqueueBody } from '../../../app/jobs.js';
import { JOB_ADMISSION, presentEnqueued } from './jobs.js';
import type { Services } from './services.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** What the ingest route may do with the token's principal: enqueue, nothing else. */
const WEBHOOK_PERMISSIONS = Object.freeze(['jobs:write']);

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
const newToken = (): string => `whk_${randomBytes(32).toString('base64url')}`;

const Token = Type.Object({
  token: Type.String({ description: 'send it as X-Webhook-Token' }),
  url: Type.String({ description: 'where to POST jobs: <base>/api/v1/webhooks/<organization id>/custom' }),
}, { $id: 'WebhookToken' });

export function incomingWebhookRoutes(s: Services): Route[] {
  const refused = () => new AppError('UNAUTHORIZED', 'A valid X-Webhook-Token is required');

  const authenticate = async (req: Request): Promise<Principal> => {
    const org = req.params.org_id!;
    if (req.webhookToken === '' || !UUID.test(org)) throw refused();
    const token = await findWebhookToken(s.store, org.toLowerCase());
    if (token === null || !timingSafeEqual(digest(req.webhookToken), digest(token))) throw refused();
    return { organizationId: org.toLowerCase(), apiKeyId: null, permissions: WEBHOOK_PERMISSIONS, via: 'webhook' };
  };

  /** PUBLIC_URL, else the Host the client reached us at (plain http: set PUBLIC_URL behind TLS or a proxy). */
  const urlOf = (req: Request): string => {
    const base = s.config.publicUrl ?? `http://${req.host || `${s.config.host}:${s.config.port}`}`;
    return `${base}/api/v1/webhooks/${req.principal.organizationId}/custom`;
  };

  const answer = (req: Request, token: string | null): Response => {
    if (token === null) throw notFound('Organization');
    return { status: 200, body: { token, url: urlOf(req) } };
  };

  return [
    {
      method: 'POST',
      path: '/api/v1/webhooks/:org_id/custom',
      permission: null,
      authenticate,
      handler: async (req) => presentEnqueued(await s.app.jobs.enqueue(req.principal.organizationId, EnqueueBody(req.body))),
      doc: {
        operationId: 'enqueueJobFromWebhook',
        summary: 'Incoming webhook: enqueue a job given in the service’s own job format',
        description:
          'No Bearer credential: the header X-Webhook-Token must hold the organization’s webhook token (401 otherwise, also for an ' +
          'unknown organization). The body and the answers are those of POST /api/v1/jobs, job quotas and rate limits included; ' +
          'use the provider’s event id as idempotency_key.',
        body: EnqueueBody.schema,
        responses: { 201: { description: 'Created', schema: CreatedJob }, 200: { description: 'The job holding this idempotency key', schema: CreatedJob } },
        errors: JOB_ADMISSION,
        security: ['webhookToken'],
      },
    },
    {
      method: 'GET',
      path: '/api/v1/organizations/webhook-token',
      permission: '*',
      handler: async (req) => answer(req, await ensureWebhookToken(s.store, req.principal.organizationId, newToken())),
      doc: {
        operationId: 'getWebhookToken',
        summary: 'The organization’s incoming-webhook token and URL (the token is created on the first call)',
        responses: { 200: { description: 'The token and the URL', schema: Token } },
        errors: ['NOT_FOUND'],
      },
    },
    {
      method: 'POST',
      path: '/api/v1/organizations/webhook-token/regenerate',
      permission: '*',
      handler: async (req) =>
        answer(req, await rotateWebhookToken(s.store, req.principal.organizationId, newToken(), new Date(s.clock.now()))),
      doc: {
        operationId: 'regenerateWebhookToken',
        summary: 'Rotate the incoming-webhook token: the old one is refused at once',
        responses: { 200: { description: 'The new token and the URL', schema: Token } },
        errors: ['NOT_FOUND'],
      },
    },
  ];
}
