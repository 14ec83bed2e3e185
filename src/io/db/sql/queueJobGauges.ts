// queueJobGauges — the state of every job that still needs something, per queue of one organization (GET
// /api/v1/metrics): the definitions of clusterJobGauges.ts, restricted to one organization's queues.
import type { Store } from '../store.js';
import { add, emptyCounts, gaugeRows, type GaugeState, type StateCounts } from './clusterJobGauges.js';

/** One organization's queues (those with a queue row, jobs or not), by queue name. */
export async function queueJobGauges(store: Store, organizationId: string): Promise<Map<string, StateCounts & { paused: boolean }>> {
  const rows = await store.query<{ name: string; paused: boolean; state: GaugeState | null; n: number | null; oldest: Date | null }>(
    `SELECT q.name, q.paused, j.state, j.n, j.oldest
       FROM queues q
       LEFT JOIN LATERAL (${gaugeRows('organization_id = q.organization_id AND queue_name = q.name')}) j ON true
      WHERE q.organization_id = $1`,
    [organizationId],
  );
  const out = new Map<string, StateCounts & { paused: boolean }>();
  for (const r of rows) {
    let q = out.get(r.name);
    if (!q) out.set(r.name, (q = { ...emptyCounts(), paused: r.paused }));
    if (r.state !== null) add(q, r.state, r.n ?? 0, r.oldest);
  }
  return out;
}
