// Incoming webhook routes (REST adapter): POST /api/v1/webhooks/:org_id/custom, and the token's two routes (both
// need `*`). The operations are src/app/incoming-webhooks.ts; here: the credential hook, the URL, the doc.
//
// The ingest route's credential is the organization's webhook token in X-Webhook-Token instead of a Bearer
// credential: the route's `authenticate` has it checked, and the request is then rate-limited and counted in
// the organization's API calls like any other.
import Type from 'typebox';
import type { App } from '../../../app/app.js';
import { EnqueueBody } from '../../../app/jobs.js';
import type { Principal } from '../../../app/auth.js';
import type { Request, Response, Route } from '../router.js';
import { CreatedJob } from '../schemas.js';
import { JOB_ADMISSION, presentEnqueued } from './jobs.js';

/** What the ingest route may do with the token's principal: enqueue, nothing else. */
const WEBHOOK_PERMISSIONS = Object.freeze(['jobs:write']);

const Token = Type.Object({
  token: Type.String({ description: 'send it as X-Webhook-Token' }),
  url: Type.String({ description: 'where to POST jobs: <base>/api/v1/webhooks/<organization id>/custom' }),
}, { $id: 'WebhookToken' });

export function incomingWebhookRoutes(app: App): Route[] {
  const { incomingWebhooks: incoming } = app;
  const { config } = app.ctx;

  const authenticate = async (req: Request): Promise<Principal> => ({
    organizationId: await incoming.organizationOf(req.params.org_id!, req.webhookToken),
    apiKeyId: null,
    permissions: WEBHOOK_PERMISSIONS,
    via: 'webhook',
  });

  /** PUBLIC_URL, else the Host the client reached us at (plain http: set PUBLIC_URL behind TLS or a proxy). */
  const urlOf = (req: Request): string => {
    const base = config.publicUrl ?? `http://${req.host || `${config.host}:${config.port}`}`;
    return `${base}/api/v1/webhooks/${req.principal.organizationId}/custom`;
  };

  const answer = (req: Request, token: string): Response => ({ status: 200, body: { token, url: urlOf(req) } });

  return [
    {
      method: 'POST',
      path: '/api/v1/webhooks/:org_id/custom',
      permission: null,
      authenticate,
      handler: async (req) => presentEnqueued(await incoming.enqueue(req.principal.organizationId, EnqueueBody(req.body))),
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
      handler: async (req) => answer(req, await incoming.token(req.principal.organizationId)),
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
      handler: async (req) => answer(req, await incoming.rotate(req.principal.organizationId)),
      doc: {
        operationId: 'regenerateWebhookToken',
        summary: 'Rotate the incoming-webhook token: the old one is refused at once',
        responses: { 200: { description: 'The new token and the URL', schema: Token } },
        errors: ['NOT_FOUND'],
      },
    },
  ];
}
