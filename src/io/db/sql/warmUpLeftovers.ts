// warmUpLeftovers — the warm-up organizations (src/warm-up.ts) created before `before` (or the one named `id`), which a node that stopped
// during its warm-up left behind, with their queues and the jobs still live in them: each is cancelled through its
// queue's actor before the queue and the organization are deleted, so no actor keeps jobs whose rows are gone.
import { LIVE } from '../jobHalves.js';
import type { Store } from '../store.js';

/** Every warm-up organization's slug starts so; the API refuses slugs that start with an underscore. */
export const WARM_UP_SLUG_PREFIX = '_warm-up.';

export interface WarmUpLeftover {
  id: string;
  queues: string[];
  live: Array<{ id: string; queue: string }>;
}

export async function warmUpLeftovers(store: Store, before: Date | null, id: string | null = null): Promise<WarmUpLeftover[]> {
  const rows = await store.query<{ id: string; queues: string[] | null; live: Array<{ id: string; queue: string }> | null }>(
    `SELECT o.id,
            (SELECT array_agg(q.name) FROM queues q WHERE q.organization_id = o.id) AS queues,
            (SELECT json_agg(json_build_object('id', j.id, 'queue', j.queue_name)) FROM jobs j
              WHERE j.organization_id = o.id AND j.${LIVE}) AS live
       FROM organizations o
      WHERE starts_with(o.slug, $1) AND ($2::timestamptz IS NULL OR o.created_at < $2) AND ($3::uuid IS NULL OR o.id = $3)`,
    [WARM_UP_SLUG_PREFIX, before, id],
  );
  return rows.map((r) => ({ id: r.id, queues: r.queues ?? [], live: r.live ?? [] }));
}
