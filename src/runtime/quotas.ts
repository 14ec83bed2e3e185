// The main thread's door to the organizations' quota actors. Admissions are asks (answered without waiting for
// a commit); releases and the counters fed by committed events are tells, batched per turn.
import type { CountedResource, Usage } from '../actors/org/org-actor.js';
import type { LimitOverrides, PlanTier } from '../actors/org/plans.js';
import type { DomainEvent } from '../actors/records.js';
import type { ActorPool } from './actor-pool.js';
import { ORG_ACTOR } from './protocol.js';

/** Jobs admitted on a UTC day: what a release hands back. */
export interface Admission {
  n: number;
  day: string;
}

export class Quotas {
  constructor(private readonly pool: ActorPool) {
    pool.onEvents((events) => this.onEvents(events));
  }

  /** Payload cap (413), then jobs per day and active jobs (429), for n jobs at once. */
  async admitJobs(organizationId: string, payloadBytes: number[]): Promise<Admission> {
    const { day } = await this.pool.ask<{ day: string }>(organizationId, ORG_ACTOR, 'admit', { n: payloadBytes.length, payloadBytes });
    return { n: payloadBytes.length, day };
  }

  /** n of the admitted jobs were not created (duplicates, failures). */
  releaseJobs(organizationId: string, admission: Admission, n: number): void {
    if (n > 0) this.pool.tell(organizationId, ORG_ACTOR, 'releaseJobs', { n, day: admission.day });
  }

  async reserve(organizationId: string, resource: CountedResource): Promise<void> {
    await this.pool.ask(organizationId, ORG_ACTOR, 'reserve', { resource });
  }

  release(organizationId: string, resource: CountedResource): void {
    this.pool.tell(organizationId, ORG_ACTOR, 'counted', { resource, delta: -1 });
  }

  usage(organizationId: string): Promise<Usage> {
    return this.pool.ask<Usage>(organizationId, ORG_ACTOR, 'usage', {});
  }

  async setPlan(organizationId: string, plan: PlanTier, overrides: LimitOverrides): Promise<void> {
    await this.pool.ask(organizationId, ORG_ACTOR, 'setPlan', { plan, overrides });
  }

  async resetUsage(organizationId: string): Promise<void> {
    await this.pool.ask(organizationId, ORG_ACTOR, 'resetUsage', {});
  }

  private onEvents(events: DomainEvent[]): void {
    const finished = new Map<string, number>();
    for (const e of events) {
      if (e.type === 'job.finished') finished.set(e.organization_id, (finished.get(e.organization_id) ?? 0) + 1);
      else this.pool.tell(e.organization_id, ORG_ACTOR, 'counted', { resource: 'queues', delta: e.type === 'queue.created' ? 1 : -1 });
    }
    for (const [org, n] of finished) this.pool.tell(org, ORG_ACTOR, 'jobsFinished', { n });
  }
}
