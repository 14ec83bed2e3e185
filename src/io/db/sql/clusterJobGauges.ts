// clusterJobGauges — the state of every job that still needs something (waiting, running or dead-lettered), for the
// metrics: counts per state and the oldest due time of the claimable pending jobs, over all
// organizations (the cluster gauges of /metrics, no organization or queue in the answer); queueJobGauges.ts
// gives the same per queue of one organization (GET /api/v1/metrics), with the definitions exported here. Completed and cancelled rows are left out: they say nothing about health
// and are the bulk of the table. Live states are served by the partial index jobs_live_list, dead letters by
// jobs_done_status (one part per half of the table, ../jobHalves.ts).
//
// A pending job's due time is not stored: it is scheduled_at for a job that was scheduled or retried after a
// backoff, its creation otherwise (a job retried after a lease expiry counts from its creation or last
// schedule: an upper bound of its wait).
import type { Store } from '../store.js';
import { LIVE } from '../jobHalves.js';

/** Pending jobs still waiting on workflow parents count as 'blocked', not 'pending': no worker can take them. */
export const GAUGE_STATES = ['pending', 'blocked', 'scheduled', 'processing', 'deadletter'] as const;
export type GaugeState = (typeof GAUGE_STATES)[number];

export interface StateCounts {
  counts: Record<GaugeState, number>;
  /** Epoch milliseconds of the oldest claimable pending job's due time; null when none is pending. */
  oldestDue: number | null;
}

export const emptyCounts = (): StateCounts => ({ counts: { pending: 0, blocked: 0, scheduled: 0, processing: 0, deadletter: 0 }, oldestDue: null });

const STATE = `CASE WHEN status = 'pending' AND NOT dependencies_met THEN 'blocked' ELSE status::text END`;
const OLDEST = `min(COALESCE(scheduled_at, created_at)) FILTER (WHERE status = 'pending' AND dependencies_met)`;

/** Rows (state, n, oldest) of the jobs matching `where`: live ones per state, then the dead letters. */
export const gaugeRows = (where: string): string =>
  `SELECT ${STATE} AS state, count(*)::int AS n, ${OLDEST} AS oldest FROM jobs WHERE ${where} AND ${LIVE} GROUP BY 1
   UNION ALL
   SELECT 'deadletter', count(*)::int, NULL FROM jobs WHERE ${where} AND status = 'deadletter'`;

const ms = (d: Date | string | null): number | null => (d === null ? null : new Date(d).getTime());

export function add(into: StateCounts, state: GaugeState, n: number, oldest: Date | string | null): void {
  into.counts[state] += n;
  const due = ms(oldest);
  if (due !== null && (into.oldestDue === null || due < into.oldestDue)) into.oldestDue = due;
}

/** All organizations summed. */
export async function clusterJobGauges(store: Store): Promise<StateCounts> {
  const rows = await store.query<{ state: GaugeState; n: number; oldest: Date | null }>(
    gaugeRows('true'),
  );
  const out = emptyCounts();
  for (const r of rows) add(out, r.state, r.n, r.oldest);
  return out;
}

