// deleteOrganization — an organization, its jobs (the jobs table has no foreign key, to keep its writes cheap) and,
// by the schema's cascades, everything else it owns. Only the node's own warm-up organizations are deleted
// (src/warm-up.ts), after their queues are; the API has no such operation. The jobs go in two halves, each with
// its partial index's predicate (jobHalves.ts): no index serves an organization's jobs whatever their status.
import { DONE, LIVE } from '../jobHalves.js';
import type { Store } from '../store.js';

export async function deleteOrganization(store: Store, id: string): Promise<void> {
  await store.query(
    `WITH live AS (DELETE FROM jobs WHERE organization_id = $1 AND ${LIVE}),
          done AS (DELETE FROM jobs WHERE organization_id = $1 AND ${DONE})
     DELETE FROM organizations WHERE id = $1`,
    [id],
  );
}
