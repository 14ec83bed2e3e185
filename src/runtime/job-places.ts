// Which queue (hence which actor) holds a job. Lease operations name only the job id; the answer comes from
// the enqueue and claim replies this node relayed (bounded cache) or, failing that, from the store.
import type { Store } from '../io/db/store.js';
import { getJobPlace } from '../io/db/sql/getJobPlace.js';

/** Jobs remembered at most; at least half as many of the latest are always held. */
export const PLACES_MAX = 200_000;

export class JobPlaces {
  // Two generations: `young` takes every new entry and, once it holds half the bound, becomes `old` and the
  // previous old is dropped whole. Evicting one entry at a time from a full Map (delete its first key) made each
  // remember scan the deleted slots ahead of the live ones: 78 µs per call at 200,000 entries, on every enqueue
  // and claim of a node that had seen that many jobs (docs/BENCHMARKS.md). Each generation is keyed by
  // organization, then by job id: no key is built per call (a concatenated key was 3.5 % of a bulk enqueue).
  private young = new Generation();
  private old = new Generation();

  constructor(private readonly store: Store) {}

  remember(organizationId: string, jobId: string, queueName: string): void {
    if (this.young.size >= PLACES_MAX / 2) {
      this.old = this.young;
      this.young = new Generation();
    }
    this.young.set(organizationId, jobId, queueName);
  }

  /** The queue this node remembers for the job, without asking the store (undefined when it does not). */
  cached(organizationId: string, jobId: string): string | undefined {
    return this.young.get(organizationId, jobId) ?? this.old.get(organizationId, jobId);
  }

  async find(organizationId: string, jobId: string): Promise<string | null> {
    const hit = this.cached(organizationId, jobId);
    if (hit !== undefined) return hit;
    const place = await getJobPlace(this.store, organizationId, jobId);
    if (!place) return null;
    this.remember(organizationId, jobId, place.queue_name);
    return place.queue_name;
  }

  /** Entries held now (for tests). */
  get size(): number {
    return this.young.size + this.old.size;
  }
}

/** Job id → queue name, per organization. */
class Generation {
  private readonly byOrg = new Map<string, Map<string, string>>();
  size = 0;

  set(organizationId: string, jobId: string, queueName: string): void {
    let jobs = this.byOrg.get(organizationId);
    if (!jobs) this.byOrg.set(organizationId, (jobs = new Map()));
    const before = jobs.size;
    jobs.set(jobId, queueName);
    this.size += jobs.size - before;
  }

  get(organizationId: string, jobId: string): string | undefined {
    return this.byOrg.get(organizationId)?.get(jobId);
  }
}
