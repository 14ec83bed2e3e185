// purgeDeadLetters — removes dead-lettered jobs of one organization matching every given filter. Only
// `deadletter` rows: a job revived meanwhile is pending again and survives the purge.
import type { Store } from '../store.js';

export async function purgeDeadLetters(
  store: Store,
  organizationId: string,
  filter: { ids: string[] | null; queue: string | null; olderThan: Date | null },
): Promise<number> {
  const rows = await store.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM jobs
        WHERE organization_id = $1 AND status = 'deadletter'
          AND ($2::uuid[] IS NULL OR id = ANY ($2::uuid[]))
          AND ($3::text IS NULL OR queue_name = $3)
          AND ($4::timestamptz IS NULL OR updated_at < $4)
       RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [organizationId, filter.ids, filter.queue, filter.olderThan],
  );
  return rows[0]?.n ?? 0;
}
