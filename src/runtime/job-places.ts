// Which queue (hence which actor) holds a job. Lease operations name only the job id; the answer comes from
// the enqueue and claim replies this node relayed (bounded cache) or, failing that, from the store.
import type { Store } from '../io/db/store.js';
import { getJobPlace } from '../io/db/sql/getJobPlace.js';

const MAX = 200_000;

export class JobPlaces {
  private readonly cache = new Map<string, string>();

  constructor(private readonly store: Store) {}

  remember(organizationId: string, jobId: string, queueName: string): void {
    const key = `${organizationId}:${jobId}`;
    if (this.cache.size >= MAX) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, queueName);
  }

  async find(organizationId: string, jobId: string): Promise<string | null> {
    const hit = this.cache.get(`${organizationId}:${jobId}`);
    if (hit !== undefined) return hit;
    const place = await getJobPlace(this.store, organizationId, jobId);
    if (!place) return null;
    this.remember(organizationId, jobId, place.queue_name);
    return place.queue_name;
  }
}
