// Outgoing webhook routes: create, list, get, update, delete, test, delivery history. All need `*`. The secret
// is never shown (`has_secret`). The 'webhooks' quota counts enabled endpoints: creating an enabled one and
// enabling a disabled one (PUT enabled: true, after an auto-disable too) are charged, disabling, auto-disabling
// and deleting free the slot. Every change invalidates the dispatcher's cache of the organization's endpoints.
import { randomUUID } from 'node:crypto';
import Type from 'typebox';
import { notFound, validationError } from '../../../errors.js';
import { createOutgoingWebhook } from '../../db/sql/createOutgoingWebhook.js';
import { deleteOutgoingWebhook } from '../../db/sql/deleteOutgoingWebhook.js';
import { listDeliveries, type DeliveryRow } from '../../db/sql/listDeliveries.js';
import { getOutgoingWebhook, listOutgoingWebhooks, type OutgoingWebhookRow } from '../../db/sql/listOutgoingWebhooks.js';
import { updateOutgoingWebhook } from '../../db/sql/updateOutgoingWebhook.js';
import { WEBHOOK_EVENTS, type WebhookDispatcher } from '../../webhooks/dispatcher.js';
import { policyOf, urlProblem } from '../../webhooks/ssrf.js';
import { cursorCodec, MAX_LIMIT, pageResponse, parseLimit, readCursor } from '../cursor.js';
import { isoOf } from '../../present.js';
import { Deleted } from '../schemas.js';
import type { Request, Response, Route } from '../router.js';
import { validator } from '../../validate.js';
import type { Services } from './services.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BASE = '/api/v1/outgoing-webhooks';

const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' });
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'http(s); https and a public address in production' });
const Events = Type.Array(Type.Union(WEBHOOK_EVENTS.map((e) => Type.Literal(e))), { minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true });
const Secret = Type.String({ minLength: 1, maxLength: 256 });

const CreateBody = validator(
  Type.Object({
    name: Name,
    url: Url,
    events: Events,
    secret: Type.Optional(Type.Union([Secret, Type.Null()])),
    enabled: Type.Optional(Type.Boolean()),
  }),
);

const UpdateBody = validator(
  Type.Object({
    name: Type.Optional(Name),
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    secret: Type.Optional(Type.Union([Secret, Type.Null()], { description: 'omitted: kept; null: cleared; a string: replaced' })),
    enabled: Type.Optional(Type.Boolean()),
  }),
);

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

export function outgoingWebhookRoutes(s: Services, dispatcher: WebhookDispatcher): Route[] {
  const policy = policyOf(s.config);
  const checkUrl = (url: string): string => {
    const problem = urlProblem(url, policy);
    if (problem !== null) throw validationError([{ field: 'url', message: problem }], `url ${problem}`);
    return new URL(url).toString();
  };
  const webhookOf = async (req: Request): Promise<OutgoingWebhookRow> => {
    const id = req.params.id!;
    const row = UUID.test(id) ? await getOutgoingWebhook(s.store, req.principal.organizationId, id.toLowerCase()) : null;
    if (!row) throw notFound('Outgoing webhook');
    return row;
  };

  const create = async (req: Request): Promise<Response> => {
    const body = CreateBody(req.body);
    const url = checkUrl(body.url);
    const org = req.principal.organizationId;
    const enabled = body.enabled ?? true;
    if (enabled) await s.quotas.reserve(org, 'webhooks');
    const row = await createOutgoingWebhook(s.store, {
      id: randomUUID(),
      organizationId: org,
      name: body.name,
      url,
      events: body.events,
      secret: body.secret ?? null,
      enabled,
      at: new Date(s.clock.now()),
    }).catch((err) => {
      if (enabled) s.quotas.release(org, 'webhooks');
      throw err;
    });
    dispatcher.invalidate(org);
    return { status: 201, body: presentWebhook(row) };
  };

  const list = async (req: Request): Promise<Response> => {
    const limit = parseLimit(req.query);
    const after = readCursor(req.query, WEBHOOKS_CURSOR);
    const rows = await listOutgoingWebhooks(s.store, req.principal.organizationId, after, limit);
    return pageResponse(req, rows, limit, WEBHOOKS_CURSOR, (r) => [r.cursor_at, r.id], presentWebhook);
  };

  const get = async (req: Request): Promise<Response> => ({ status: 200, body: presentWebhook(await webhookOf(req)) });

  const update = async (req: Request): Promise<Response> => {
    const body = UpdateBody(req.body);
    const url = body.url === undefined ? null : checkUrl(body.url);
    const current = await webhookOf(req);
    const org = req.principal.organizationId;
    // Enabling is charged before anything changes: at the cap the answer is 429 and the endpoint stays as it was.
    const charged = body.enabled === true && !current.enabled;
    if (charged) await s.quotas.reserve(org, 'webhooks');
    let done;
    try {
      done = await updateOutgoingWebhook(s.store, org, current.id, {
        name: body.name ?? null,
        url,
        events: body.events ?? null,
        secret: body.secret,
        enabled: body.enabled ?? null,
        at: new Date(s.clock.now()),
      });
    } catch (err) {
      if (charged) s.quotas.release(org, 'webhooks');
      throw err;
    }
    // Under the row lock the endpoint may turn out enabled already (a concurrent PUT) or gone: the charge goes back.
    if (charged && (done === null || done.wasEnabled)) s.quotas.release(org, 'webhooks');
    if (done === null) throw notFound('Outgoing webhook');
    if (body.enabled === false && done.wasEnabled) s.quotas.release(org, 'webhooks');
    dispatcher.invalidate(org);
    return { status: 200, body: presentWebhook(done.webhook) };
  };

  const remove = async (req: Request): Promise<Response> => {
    const id = req.params.id!;
    const org = req.principal.organizationId;
    const done = UUID.test(id) ? await deleteOutgoingWebhook(s.store, org, id.toLowerCase()) : null;
    if (!done) throw notFound('Outgoing webhook');
    if (done.wasEnabled) s.quotas.release(org, 'webhooks');
    dispatcher.invalidate(org);
    return { status: 200, body: { id: id.toLowerCase(), deleted: true } };
  };

  const test = async (req: Request): Promise<Response> => ({ status: 200, body: await dispatcher.test(await webhookOf(req)) });

  const deliveries = async (req: Request): Promise<Response> => {
    const limit = req.query.has('limit') ? parseLimit(req.query) : MAX_LIMIT;
    const w = await webhookOf(req);
    const rows = await listDeliveries(s.store, req.principal.organizationId, w.id, limit);
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
        body: CreateBody.schema,
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
        query: {
          limit: { schema: Type.Integer({ minimum: 1, maximum: 100, default: 20 }), description: 'page size' },
          cursor: { schema: Type.String(), description: 'X-Next-Cursor of the previous page (opaque)' },
        },
        responses: {
          200: {
            description: 'A page of endpoints',
            schema: Type.Array(OutgoingWebhook),
            headers: { 'X-Next-Cursor': 'absent on the last page', Link: '<…&cursor={next}>; rel="next"; absent on the last page' },
          },
        },
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
        body: UpdateBody.schema,
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
