// workerHealth — how many of an organization's registered workers heartbeated since `since` (healthy) and how
// many did not (unhealthy: not reaped yet, but silent for longer than two heartbeat intervals). Over the
// organization's prefix of workers_org_id (0005).
import type { Store } from '../store.js';

export async function workerHealth(store: Store, organizationId: string, since: Date): Promise<{ healthy: number; unhealthy: number }> {
  const rows = await store.query<{ healthy: number; unhealthy: number }>(
    `SELECT count(*) FILTER (WHERE last_heartbeat_at >= $2)::int AS healthy,
            count(*) FILTER (WHERE last_heartbeat_at < $2)::int AS unhealthy
       FROM workers WHERE organization_id = $1`,
    [organizationId, since],
  );
  return rows[0]!;
}
