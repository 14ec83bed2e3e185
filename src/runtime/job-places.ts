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
  // and claim of a node that had seen that many jobs (docs/BENCHMARKS.md).
  private young = new Map<string, string>();
  private old = new Map<string, string>();

  constructor(private readonly store: Store) {}

  remember(organizationId: string, jobId: string, queueName: string): void {
    if (this.young.size >= PLACES_MAX / 2) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(`${organizationId}:${jobId}`, queueName);
  }

  /** The queue this node remembers for the job, without asking the store (undefined when it does not). */
  cached(organizationId: string, jobId: string): string | undefined {
    const key = `${organizationId}:${jobId}`;
    return this.young.get(key) ?? this.old.get(key);
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
