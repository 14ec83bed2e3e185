// Outgoing webhook routes (REST adapter): create, list, get, update, delete, test, delivery history; all need
// `*`. The operations (the quota, the secret's states, the deliveries told of every change) are
// src/app/webhooks.ts; here: the OpenAPI doc and presentation (the secret is never shown: `has_secret`).
import Type from 'typebox';
import type { App } from '../../../app/app.js';
import { WEBHOOK_EVENTS } from '../../../app/deliveries.js';
import { CreateWebhookBody, UpdateWebhookBody } from '../../../app/webhooks.js';
import type { DeliveryRow } from '../../db/sql/listDeliveries.js';
import type { OutgoingWebhookRow } from '../../db/sql/getOutgoingWebhook.js';
import { cursorCodec, MAX_LIMIT, pageResponse, parseLimit, readCursor, pagedDoc } from '../cursor.js';
import { isoOf } from '../../present.js';
import { Deleted } from '../schemas.js';
import type { Request, Response, Route } from '../router.js';

const BASE = '/api/v1/outgoing-webhooks';

/** Keyset over (created_at, id), newest first. */
const WEBHOOKS_CURSOR = cursorCodec('outgoing-webhooks', ['time', 'uuid']);

const Time = Type.String({ format: 'date-time' });
const OutgoingWebhook = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  has_secret: Type.Boolean({ description: 'whether deliveries are signed (the secret itself is never shown)' }),
  enabled: Type.Boolean(),
  failure_count: Type.Integer({ description: 'consecutive failed deliveries' }),
  last_status: Type.Union([Type.Literal('success'), Type.Literal('failed'), Type.Literal('auto_disabled'), Type.Null()]),
  created_at: Time,
  updated_at: Time,
}, { $id: 'OutgoingWebhook' });
const Delivery = Type.Object({
  id: Type.String({ format: 'uuid' }),
  event_id: Type.String(),
  event: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('success'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  response_status: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  created_at: Time,
  completed_at: Type.Union([Time, Type.Null()]),
}, { $id: 'Delivery' });
/** The answer of a test send: the delivery as it went, without the fields of the history. */
const TestDelivery = Type.Object({
    id: Type.String({ format: 'uuid' }),
    event: Type.Literal('webhook.test'),
    status: Type.Union([Type.Literal('success'), Type.Literal('failed'), Type.Literal('pending')], {
      description: 'pending only when the node began shutting down during the attempt',
    }),
    attempts: Type.Integer(),
    response_status: Type.Union([Type.Integer(), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()]),
}, { $id: 'TestDelivery' });

export function presentWebhook(w: OutgoingWebhookRow): Record<string, unknown> {
  return {
    id: w.id,
    name: w.name,
    url: w.url,
    events: w.events,
    has_secret: w.secret !== null,
    enabled: w.enabled,
    failure_count: w.failure_count,
    last_status: w.last_status,
    created_at: isoOf(w.created_at),
    updated_at: isoOf(w.updated_at),
  };
}

function presentDelivery(d: DeliveryRow): Record<string, unknown> {
  return {
    id: d.id,
    event_id: d.event_id,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    response_status: d.response_status,
    error: d.error,
    created_at: isoOf(d.created_at),
    completed_at: isoOf(d.completed_at),
  };
}

export function outgoingWebhookRoutes(app: App): Route[] {
  const { webhooks } = app;
  const org = (req: Request) => req.principal.organizationId;
  const view = (status: number) => (w: OutgoingWebhookRow): Response => ({ status, body: presentWebhook(w) });

  const create = async (req: Request) => view(201)(await webhooks.create(org(req), CreateWebhookBody(req.body)));

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, WEBHOOKS_CURSOR);
    const rows = await webhooks.list(org(req), after, limit);
    return pageResponse(req, rows, limit, WEBHOOKS_CURSOR, (r) => [r.cursor_at, r.id], presentWebhook);
  };

  const get = async (req: Request) => view(200)(await webhooks.get(org(req), req.params.id!));
  const update = async (req: Request) => view(200)(await webhooks.update(org(req), req.params.id!, UpdateWebhookBody(req.body)));
  const remove = async (req: Request): Promise<Response> => ({ status: 200, body: await webhooks.delete(org(req), req.params.id!) });
  const test = async (req: Request): Promise<Response> => ({ status: 200, body: await webhooks.test(org(req), req.params.id!) });

  const deliveries = async (req: Request): Promise<Response> => {
    const limit = req.query.has('limit') ? parseLimit(req.query) : MAX_LIMIT;
    const rows = await webhooks.deliveries(org(req), req.params.id!, limit);
    return { status: 200, body: rows.map(presentDelivery) };
  };

  const one = { 200: { description: 'The endpoint', schema: OutgoingWebhook } };
  return [
    {
      method: 'POST',
      path: BASE,
      permission: '*',
      handler: create,
      doc: {
        operationId: 'createOutgoingWebhook',
        summary: 'Create an outgoing webhook endpoint (quota: webhooks, when enabled)',
        description: `events: any of ${WEBHOOK_EVENTS.join(', ')}. With a secret, deliveries carry X-Queue-Signature.`,
        body: CreateWebhookBody.schema,
        responses: { 201: { description: 'The new endpoint', schema: OutgoingWebhook } },
        errors: ['QUOTA_EXCEEDED'],
      },
    },
    {
      method: 'GET',
      path: BASE,
      permission: '*',
      handler: list,
      doc: {
        operationId: 'listOutgoingWebhooks',
        summary: "List the organization's outgoing webhooks, newest first, a page at a time",
        ...pagedDoc('A page of endpoints', OutgoingWebhook),
      },
    },
    { method: 'GET', path: `${BASE}/:id`, permission: '*', handler: get, doc: { operationId: 'getOutgoingWebhook', summary: 'Get an outgoing webhook', responses: one } },
    {
      method: 'PUT',
      path: `${BASE}/:id`,
      permission: '*',
      handler: update,
      doc: {
        operationId: 'updateOutgoingWebhook',
        summary: 'Update an outgoing webhook (fields omitted are kept)',
        description: 'secret: omitted keeps it, null clears it (deliveries are then unsigned), a string replaces it. ' +
          'enabled: true on a disabled endpoint is charged against the webhooks quota like a creation.',
        body: UpdateWebhookBody.schema,
        responses: one,
        errors: ['QUOTA_EXCEEDED'],
      },
    },
    {
      method: 'DELETE',
      path: `${BASE}/:id`,
      permission: '*',
      handler: remove,
      doc: {
        operationId: 'deleteOutgoingWebhook',
        summary: 'Delete an outgoing webhook and its delivery history',
        responses: { 200: { description: 'Deleted', schema: Deleted } },
      },
    },
    {
      method: 'POST',
      path: `${BASE}/:id/test`,
      permission: '*',
      handler: test,
      doc: {
        operationId: 'testOutgoingWebhook',
        summary: 'Send a webhook.test delivery now (one attempt) and answer its outcome',
        responses: { 200: { description: 'The delivery, status success or failed', schema: TestDelivery } },
      },
    },
    {
      method: 'GET',
      path: `${BASE}/:id/deliveries`,
      permission: '*',
      handler: deliveries,
      doc: {
        operationId: 'listDeliveries',
        summary: "An endpoint's newest deliveries (at most 100 are readable)",
        query: { limit: { schema: Type.Integer({ minimum: 1, maximum: 100, default: 100 }), description: 'how many, newest first' } },
        responses: { 200: { description: 'Deliveries, newest first', schema: Type.Array(Delivery) } },
      },
    },
  ];
}
