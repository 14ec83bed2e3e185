// Outgoing webhook endpoints: create, list, get, update, delete, their delivery history and a test delivery.
// Endpoints are not an actor's: their rows are written here, straight to the store; the deliveries themselves
// are src/app/deliveries.ts's, which this module tells of every change.
//
// The 'webhooks' quota counts enabled endpoints: creating an enabled one and enabling a disabled one (enabled:
// true, after an auto-disable too) are charged; disabling and deleting free the slot here, an auto-disable frees
// it where it happens (deliveries.ts). The secret is never shown (`has_secret`); an update that omits it keeps
// it, null clears it (deliveries are then unsigned), a string replaces it. Every committed change invalidates
// the caches of the organization's endpoints that deliveries keep, on every node.
import { randomUUID } from 'node:crypto';
import Type from 'typebox';
import { notFound, validationError } from '../errors.js';
import { createOutgoingWebhook } from '../io/db/sql/createOutgoingWebhook.js';
import { deleteOutgoingWebhook } from '../io/db/sql/deleteOutgoingWebhook.js';
import { getOutgoingWebhook, type OutgoingWebhookRow } from '../io/db/sql/getOutgoingWebhook.js';
import { listDeliveries, type DeliveryRow } from '../io/db/sql/listDeliveries.js';
import { listOutgoingWebhooks } from '../io/db/sql/listOutgoingWebhooks.js';
import { updateOutgoingWebhook } from '../io/db/sql/updateOutgoingWebhook.js';
import { validator, type Valid } from '../io/validate.js';
import { policyOf, urlProblem, type UrlPolicy } from '../io/webhooks/ssrf.js';
import type { AppContext } from './context.js';
import { WEBHOOK_EVENTS, type Deliveries, type DeliveryResult } from './deliveries.js';
import { idOf } from './fields.js';

const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' });
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'http(s); https and a public address in production' });
const Events = Type.Array(Type.Union(WEBHOOK_EVENTS.map((e) => Type.Literal(e))), { minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true });
const Secret = Type.String({ minLength: 1, maxLength: 256 });

export const CreateWebhookBody = validator(
  Type.Object({
    name: Name,
    url: Url,
    events: Events,
    secret: Type.Optional(Type.Union([Secret, Type.Null()])),
    enabled: Type.Optional(Type.Boolean()),
  }),
);

export const UpdateWebhookBody = validator(
  Type.Object({
    name: Type.Optional(Name),
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    secret: Type.Optional(Type.Union([Secret, Type.Null()], { description: 'omitted: kept; null: cleared; a string: replaced' })),
    enabled: Type.Optional(Type.Boolean()),
  }),
);

export type CreateWebhookRequest = Valid<typeof CreateWebhookBody>;
export type UpdateWebhookRequest = Valid<typeof UpdateWebhookBody>;

const WEBHOOK = 'Outgoing webhook';

export class Webhooks {
  private readonly policy: UrlPolicy;

  constructor(
    private readonly c: AppContext,
    private readonly outgoing: Deliveries,
  ) {
    this.policy = policyOf(c.config);
  }

  /** A new endpoint; an enabled one is charged against the quota first (429 at the cap, nothing created). */
  async create(org: string, r: CreateWebhookRequest): Promise<OutgoingWebhookRow> {
    const url = this.checkUrl(r.url);
    const enabled = r.enabled ?? true;
    if (enabled) await this.c.quotas.reserve(org, 'webhooks');
    let row: OutgoingWebhookRow;
    try {
      row = await createOutgoingWebhook(this.c.store, {
        id: randomUUID(),
        organizationId: org,
        name: r.name,
        url,
        events: r.events,
        secret: r.secret ?? null,
        enabled,
        at: new Date(this.c.clock.now()),
      });
    } catch (err) {
      if (enabled) this.c.quotas.release(org, 'webhooks');
      throw err;
    }
    this.outgoing.invalidate(org);
    return row;
  }

  /** A page of endpoints, newest first, strictly after the keyset `after`; one row more than `limit` says there is a next page. */
  list(org: string, after: [at: string, id: string] | null, limit: number): Promise<Array<OutgoingWebhookRow & { cursor_at: string }>> {
    return listOutgoingWebhooks(this.c.store, org, after, limit);
  }

  async get(org: string, id: string): Promise<OutgoingWebhookRow> {
    const row = await getOutgoingWebhook(this.c.store, org, idOf(WEBHOOK, id));
    if (!row) throw notFound(WEBHOOK);
    return row;
  }

  /** Fields omitted are kept. Enabling is charged before anything changes: at the cap the answer is 429 and the endpoint stays as it was. */
  async update(org: string, id: string, r: UpdateWebhookRequest): Promise<OutgoingWebhookRow> {
    const url = r.url === undefined ? null : this.checkUrl(r.url);
    const current = await this.get(org, id);
    const charged = r.enabled === true && !current.enabled;
    if (charged) await this.c.quotas.reserve(org, 'webhooks');
    let done;
    try {
      done = await updateOutgoingWebhook(this.c.store, org, current.id, {
        name: r.name ?? null,
        url,
        events: r.events ?? null,
        secret: r.secret,
        enabled: r.enabled ?? null,
        at: new Date(this.c.clock.now()),
      });
    } catch (err) {
      if (charged) this.c.quotas.release(org, 'webhooks');
      throw err;
    }
    // Under the row lock the endpoint may turn out enabled already (a concurrent update) or gone: the charge goes back.
    if (charged && (done === null || done.wasEnabled)) this.c.quotas.release(org, 'webhooks');
    if (done === null) throw notFound(WEBHOOK);
    if (r.enabled === false && done.wasEnabled) this.c.quotas.release(org, 'webhooks');
    this.outgoing.invalidate(org);
    return done.webhook;
  }

  /** The endpoint and its delivery history; an enabled one frees its slot. */
  async delete(org: string, id: string): Promise<{ id: string; deleted: true }> {
    const webhookId = idOf(WEBHOOK, id);
    const done = await deleteOutgoingWebhook(this.c.store, org, webhookId);
    if (!done) throw notFound(WEBHOOK);
    if (done.wasEnabled) this.c.quotas.release(org, 'webhooks');
    this.outgoing.invalidate(org);
    return { id: webhookId, deleted: true };
  }

  /** A webhook.test delivery to the endpoint now, one attempt, enabled or not: its outcome. */
  async test(org: string, id: string): Promise<DeliveryResult> {
    return this.outgoing.test(await this.get(org, id));
  }

  /** The endpoint's newest deliveries, at most `limit`. */
  async deliveries(org: string, id: string, limit: number): Promise<DeliveryRow[]> {
    const w = await this.get(org, id);
    return listDeliveries(this.c.store, org, w.id, limit);
  }

  /** An absolute http(s) URL that passes the SSRF rules (https and a public host in production), normalised. */
  private checkUrl(url: string): string {
    const problem = urlProblem(url, this.policy);
    if (problem !== null) throw validationError([{ field: 'url', message: problem }], `url ${problem}`);
    return new URL(url).toString();
  }
}
