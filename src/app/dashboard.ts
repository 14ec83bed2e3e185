// The dashboard overview (GET /api/v1/dashboard): one read of everything a status page of the caller's
// organization shows, for clients written for the hosted service and for operators' scripts. Straight from the
// store, like every read (what the actors reported is committed), in a handful of indexed statements run together:
//   store       a ping, timed (a store that does not answer makes the whole answer 503, as on every route)
//   jobs        counts by status (jobStats); completed, dead-lettered and failed attempts in the last 24 h, and the
//               average wait (due → claimed) and processing (claimed → completed) times over it (jobThroughput)
//   queues      the first 20 by name with their counts (listQueues, queueCounts), and whether there are more
//   workers     healthy (a heartbeat within two intervals, Workers.timing) or not yet reaped but silent (workerHealth)
// Times are the node's clock's, as everywhere (a manual clock in tests).
import { jobStats, type StatusCounts } from '../io/db/sql/jobStats.js';
import { jobThroughput } from '../io/db/sql/jobThroughput.js';
import { listQueues } from '../io/db/sql/listQueues.js';
import { ping } from '../io/db/sql/ping.js';
import { queueCounts } from '../io/db/sql/queueCounts.js';
import { workerHealth } from '../io/db/sql/workerHealth.js';
import type { AppContext } from './context.js';
import type { Workers } from './workers.js';

export const DASHBOARD_QUEUES = 20;
const DAY_MS = 86_400_000;

export interface Overview {
  version: string;
  started_at: number;
  uptime_seconds: number;
  at: number;
  store: { kind: 'postgresql' | 'embedded'; status: 'ok'; latency_ms: number };
  jobs: {
    by_status: StatusCounts;
    total: number;
    completed_24h: number;
    failed_24h: number;
    failed_attempts_24h: number;
    avg_wait_seconds_24h: number | null;
    avg_processing_seconds_24h: number | null;
  };
  queues: Array<{ name: string; paused: boolean; counts: StatusCounts }>;
  more_queues: boolean;
  workers: { total: number; healthy: number; unhealthy: number };
}

export class Dashboard {
  private readonly startedAt: number;

  constructor(
    private readonly c: AppContext,
    private readonly workers: Workers,
    private readonly version: string,
  ) {
    this.startedAt = c.clock.now();
  }

  async overview(org: string): Promise<Overview> {
    const { store, clock } = this.c;
    const now = clock.now();
    const t0 = performance.now();
    await ping(store);
    const latency = performance.now() - t0;
    const healthySince = new Date(now - this.workers.timing.healthy_within_secs * 1000);
    const [byStatus, throughput, queues, workers] = await Promise.all([
      jobStats(store, org, null),
      jobThroughput(store, org, new Date(now - DAY_MS), new Date(now)),
      listQueues(store, org, null, DASHBOARD_QUEUES),
      workerHealth(store, org, healthySince),
    ]);
    const shown = queues.slice(0, DASHBOARD_QUEUES);
    const counts = await queueCounts(store, org, shown.map((q) => q.name));
    // Never negative: clocks of two nodes may disagree by a little.
    const round = (s: number | null) => (s === null ? null : Math.max(0, Math.round(s * 1000) / 1000));
    return {
      version: this.version,
      started_at: this.startedAt,
      uptime_seconds: Math.max(0, Math.floor((now - this.startedAt) / 1000)),
      at: now,
      store: { kind: this.c.config.databaseUrl ? 'postgresql' : 'embedded', status: 'ok', latency_ms: Math.round(latency * 100) / 100 },
      jobs: {
        by_status: byStatus,
        total: Object.values(byStatus).reduce((a, b) => a + b, 0),
        completed_24h: throughput.completed,
        failed_24h: throughput.deadlettered,
        failed_attempts_24h: throughput.failed_attempts,
        avg_wait_seconds_24h: round(throughput.avg_wait),
        avg_processing_seconds_24h: round(throughput.avg_processing),
      },
      queues: shown.map((q) => ({ name: q.name, paused: q.paused, counts: counts.get(q.name)! })),
      more_queues: queues.length > DASHBOARD_QUEUES,
      workers: { total: workers.healthy + workers.unhealthy, ...workers },
    };
  }
}
