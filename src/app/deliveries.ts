// Outgoing webhook deliveries: which committed events become deliveries, their rows, and what an outcome
// changes. The sending (signing, the SSRF guard, the HTTP attempts and the waits between them) is
// src/io/webhooks/deliverer.ts, which reports here each failed attempt and how the delivery ended.
//
//   event → the organization's enabled endpoints subscribed to its name (cached per organization; the endpoint
//   use cases invalidate, src/app/webhooks.ts) → one 'pending' delivery row each → attempts 1…5 → the row
//   closed, the endpoint's counters moved (finishDelivery); the 20th consecutive failure auto-disables the
//   endpoint, which frees its quota slot and drops every node's cache of the organization's endpoints.
//   job.completed, and job.failed with status deadletter, of a job that has a completion callback (the actor
//   marks them `callback: true`) → one 'callback' delivery to the job's completion_webhook, signed with its
//   completion_webhook_secret when it has one, same attempts.
//   job.progress goes out at most once a second per job, the last report of an interval at its end.
//
// Every delivery row names the node sending it. Deliveries whose node is gone (stopped between attempts,
// killed) are adopted by the node that runs the cluster-wide tasks (`adopt`, at once when it takes the lead,
// then every lease period) and resumed from the attempt after the last recorded: each is sent by one node at a
// time. At stop, waits and requests in flight are cut short and their deliveries stay pending for another node.
// Timestamps come from the node's clock.
import { randomUUID } from 'node:crypto';
import { adoptDeliveries, type PendingDelivery } from '../io/db/sql/adoptDeliveries.js';
import { enabledWebhooks } from '../io/db/sql/enabledWebhooks.js';
import { finishDelivery } from '../io/db/sql/finishDelivery.js';
import { getJob } from '../io/db/sql/getJob.js';
import { getOutgoingWebhook, type OutgoingWebhookRow } from '../io/db/sql/getOutgoingWebhook.js';
import { insertDelivery, type NewDelivery } from '../io/db/sql/insertDelivery.js';
import { recordDeliveryAttempt } from '../io/db/sql/recordDeliveryAttempt.js';
import type { Delivered, Target } from '../io/webhooks/deliverer.js';
import type { AppContext } from './context.js';
import type { SluiceEvent } from './events.js';

/** SPEC Limits rule 8. */
export const MAX_ATTEMPTS = 5;
export const DISABLE_AFTER = 20;
export const TEST_EVENT = 'webhook.test';

/** The names an endpoint may subscribe to (SPEC "Outgoing webhook events"). */
export const WEBHOOK_EVENTS = [
  'job.created',
  'job.started',
  'job.progress',
  'job.completed',
  'job.failed',
  'job.cancelled',
  'queue.paused',
  'queue.resumed',
  'worker.registered',
  'worker.deregistered',
  'schedule.triggered',
] as const;

/** job.progress goes out at most once per this interval per job; the last report of an interval follows at its end. */
export const PROGRESS_INTERVAL_MS = 1_000;
/** Changes are announced to every node (see invalidate); this bounds the staleness of a missed announcement. */
const CACHE_TTL_MS = 30_000;

/** Closed deliveries and auto-disabled endpoints, for metrics. */
export interface DeliveryObserver {
  onDelivery(kind: NewDelivery['kind'], ok: boolean): void;
  onEndpointDisabled(): void;
}

/** What a delivery ended as (the test route answers it). */
export interface DeliveryResult {
  id: string;
  event: string;
  status: 'success' | 'failed' | 'pending';
  attempts: number;
  response_status: number | null;
  error: string | null;
}

type Delivery = Pick<NewDelivery, 'id' | 'organizationId' | 'kind' | 'event' | 'body'>;

export class Deliveries {
  /** `names`: the event names the organization's endpoints subscribe to, once the read has answered. */
  private readonly cache = new Map<string, { at: number; hooks: Promise<OutgoingWebhookRow[]>; names?: Set<string> }>();
  private readonly tasks = new Set<Promise<unknown>>();
  private unsubscribe: (() => void) | null = null;
  /** Per job: when its last job.progress went out, and the report held back since (sent when the interval ends). */
  private readonly progress = new Map<string, { at: number; held: SluiceEvent | null; timer: NodeJS.Timeout | null }>();
  private observer: DeliveryObserver | null = null;
  private stopping = false;

  constructor(private readonly c: AppContext) {}

  /** From now on, committed events become deliveries. */
  start(): void {
    this.unsubscribe = this.c.events.subscribe(null, (e) => this.track(this.onEvent(e)), (org, event, data) => this.wants(org, event, data));
  }

  observe(observer: DeliveryObserver): void {
    this.observer = observer;
  }

  /** Takes over the deliveries of nodes that are gone and resumes them; how many it took. */
  async adopt(): Promise<number> {
    if (this.stopping) return 0;
    const pending = await adoptDeliveries(this.c.store, this.c.nodeId, this.c.config.clusterLeaseMs, 10_000);
    if (pending.length > 0) this.c.log.info(`webhooks: resuming ${pending.length} deliveries left pending by nodes that are gone`);
    for (const p of pending) this.track(this.resumeOne(p));
    return pending.length;
  }

  /** Cuts waits and requests short (their deliveries stay pending) and waits for every task to end. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    for (const p of this.progress.values()) if (p.timer) clearTimeout(p.timer);
    this.progress.clear();
    await this.c.deliverer.stop();
    while (this.tasks.size > 0) await Promise.allSettled([...this.tasks]);
  }

  /** The organization's endpoints changed (committed): every node reads them again at its next event. */
  invalidate(organizationId: string): void {
    this.forget(organizationId);
    this.c.invalidations
      .publish({ kind: 'webhooks', id: organizationId })
      .catch((err) => this.c.log.error('could not announce a webhook change to other nodes', err));
  }

  /** Drops this node's cached endpoints of the organization (an announcement, or a lost channel: null = all). */
  forget(organizationId: string | null): void {
    if (organizationId === null) this.cache.clear();
    else this.cache.delete(organizationId);
  }

  /** One `webhook.test` delivery to this endpoint now, a single attempt; its outcome. */
  async test(webhook: OutgoingWebhookRow): Promise<DeliveryResult> {
    const at = this.c.clock.now();
    const eventId = randomUUID();
    const body = JSON.stringify({
      id: eventId,
      event: TEST_EVENT,
      created_at: new Date(at).toISOString(),
      data: { webhook_id: webhook.id, message: 'A test delivery' },
    });
    const d = this.newDelivery(webhook.organization_id, 'test', webhook.id, null, eventId, TEST_EVENT, body, at);
    await insertDelivery(this.c.store, d);
    return this.deliver(d, 0, webhook, 1);
  }

  private track(p: Promise<unknown>): void {
    const t = p.catch((err) => this.c.log.error('webhook delivery failed', err)).finally(() => this.tasks.delete(t));
    this.tasks.add(t);
  }

  /**
   * Whether an event may need a delivery, answered without waiting: a completion callback always, otherwise
   * unless the organization's endpoints are known (cached) and none subscribes to it. Every job transition of
   * every organization passes here, so most are turned away before an envelope is even built.
   */
  private wants(organizationId: string, event: string, data: Record<string, unknown>): boolean {
    if (this.stopping) return false;
    if (data.callback === true) return true;
    const entry = this.cache.get(organizationId);
    if (!entry?.names || this.c.clock.now() - entry.at > CACHE_TTL_MS) return true;
    return entry.names.has(event);
  }

  private subscribed(organizationId: string): Promise<OutgoingWebhookRow[]> {
    const now = this.c.clock.now();
    let entry = this.cache.get(organizationId);
    if (!entry || now - entry.at > CACHE_TTL_MS) {
      const hooks = enabledWebhooks(this.c.store, organizationId);
      const fresh: { at: number; hooks: Promise<OutgoingWebhookRow[]>; names?: Set<string> } = { at: now, hooks };
      this.cache.set(organizationId, (entry = fresh));
      hooks.then(
        (rows) => (fresh.names = new Set(rows.flatMap((w) => w.events))),
        // A failed read is not cached: the next event tries again.
        () => this.cache.get(organizationId) === fresh && this.cache.delete(organizationId),
      );
    }
    return entry.hooks;
  }

  /**
   * job.progress at most once a second per job: a report within the interval is held, replaced by any later one,
   * and sent when the interval ends, so the last report always arrives. Entries leave once their interval is over.
   */
  private throttled(e: SluiceEvent): boolean {
    const job = e.data.job_id as string;
    const now = this.c.clock.now();
    const p = this.progress.get(job);
    if (!p || now - p.at >= PROGRESS_INTERVAL_MS) {
      if (p?.timer) clearTimeout(p.timer);
      this.progress.set(job, { at: now, held: null, timer: setTimeout(() => this.release(job), PROGRESS_INTERVAL_MS) });
      return false;
    }
    p.held = e;
    return true;
  }

  private release(job: string): void {
    const p = this.progress.get(job);
    if (!p) return;
    this.progress.delete(job);
    if (p.held && !this.stopping) {
      // The held report goes out now and opens the next interval.
      this.throttled(p.held);
      this.track(this.onEvent(p.held, true));
    }
  }

  private async onEvent(e: SluiceEvent, released = false): Promise<void> {
    if (this.stopping) return;
    if (e.event === 'job.progress' && !released && this.throttled(e)) return;
    const { callback, ...data } = e.data;
    const created = Date.parse(e.created_at);
    const terminal = e.event === 'job.completed' || (e.event === 'job.failed' && data.status === 'deadletter');
    if (callback === true && terminal) this.track(this.callback(e, data, created));
    const sends: Promise<unknown>[] = [];
    const hooks = (await this.subscribed(e.organization_id)).filter((w) => w.events.includes(e.event));
    if (hooks.length > 0) {
      const body = JSON.stringify({ id: e.id, event: e.event, created_at: e.created_at, data });
      for (const w of hooks) {
        const d = this.newDelivery(e.organization_id, 'webhook', w.id, null, e.id, e.event, body, created);
        sends.push(insertDelivery(this.c.store, d).then(() => this.deliver(d, 0, w)));
      }
    }
    await Promise.all(sends);
  }

  private async callback(e: SluiceEvent, data: Record<string, unknown>, created: number): Promise<void> {
    const jobId = data.job_id as string;
    const job = await getJob(this.c.store, e.organization_id, jobId);
    if (!job?.completion_webhook) return;
    const outcome = e.event === 'job.completed' ? { result: data.result ?? null } : { error: data.error ?? null };
    const body = JSON.stringify({
      id: e.id,
      event: e.event,
      created_at: e.created_at,
      job_id: jobId,
      queue_name: data.queue_name,
      status: data.status,
      ...outcome,
    });
    const d = this.newDelivery(e.organization_id, 'callback', null, jobId, e.id, e.event, body, created);
    await insertDelivery(this.c.store, d);
    await this.deliver(d, 0, { url: job.completion_webhook, secret: job.completion_webhook_secret ?? null });
  }

  /** A delivery another node left pending, read again with its current target. */
  private async resumeOne(p: PendingDelivery): Promise<void> {
    let target: Target | null = null;
    if (p.webhook_id !== null) {
      const w = await getOutgoingWebhook(this.c.store, p.organization_id, p.webhook_id);
      target = w && (w.enabled || p.kind === 'test') ? w : null;
    } else if (p.job_id !== null) {
      const job = await getJob(this.c.store, p.organization_id, p.job_id);
      target = job?.completion_webhook ? { url: job.completion_webhook, secret: job.completion_webhook_secret ?? null } : null;
    }
    const d = { id: p.id, organizationId: p.organization_id, kind: p.kind, event: p.event, body: p.body };
    if (target === null) {
      await finishDelivery(
        this.c.store,
        p.id,
        { ok: false, attempts: p.attempts, responseStatus: null, error: 'the endpoint is gone or disabled', at: new Date(this.c.clock.now()), counts: false },
        DISABLE_AFTER,
      );
      this.observer?.onDelivery(p.kind, false);
      return;
    }
    await this.deliver(d, p.attempts, target, p.kind === 'test' ? 1 : MAX_ATTEMPTS);
  }

  private newDelivery(
    organizationId: string,
    kind: NewDelivery['kind'],
    webhookId: string | null,
    jobId: string | null,
    eventId: string,
    event: string,
    body: string,
    at: number,
  ): NewDelivery {
    return { id: randomUUID(), organizationId, kind, webhookId, jobId, eventId, event, body, at: new Date(at), nodeId: this.c.nodeId };
  }

  /** Attempts `done + 1` … `maxAttempts` (each failed one but the last recorded on the row), then the outcome. */
  private async deliver(d: Delivery, done: number, target: Target, maxAttempts = MAX_ATTEMPTS): Promise<DeliveryResult> {
    const run = await this.c.deliverer.run(d, target, done, maxAttempts, (attempt, last) =>
      recordDeliveryAttempt(this.c.store, d.id, attempt, last.status, last.error),
    );
    if (!run.ended) return this.result(d, 'pending', run);
    await this.finished(d, run);
    return this.result(d, run.ok ? 'success' : 'failed', run);
  }

  /** Closes the row and moves the endpoint's counters; the 20th consecutive failure auto-disables the endpoint. */
  private async finished(d: Delivery, run: Delivered): Promise<void> {
    const disabled = await finishDelivery(
      this.c.store,
      d.id,
      { ok: run.ok, attempts: run.attempts, responseStatus: run.last.status, error: run.last.error, at: new Date(this.c.clock.now()), counts: d.kind === 'webhook' },
      DISABLE_AFTER,
    );
    this.observer?.onDelivery(d.kind, run.ok);
    if (!disabled) return;
    this.observer?.onEndpointDisabled();
    this.invalidate(d.organizationId);
    // Exactly one statement sees the transition (finishDelivery), so the slot is freed once.
    this.c.quotas.release(d.organizationId, 'webhooks');
    this.c.log.warn(`webhooks: an endpoint of organization ${d.organizationId} was disabled after ${DISABLE_AFTER} failed deliveries`);
  }

  private result(d: { id: string; event: string }, status: DeliveryResult['status'], run: Delivered): DeliveryResult {
    return { id: d.id, event: d.event, status, attempts: run.attempts, response_status: run.last.status, error: run.last.error };
  }
}
