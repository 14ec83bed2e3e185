// organizationPlans — every organization's id and plan, a page at a time (keyset on id): what the retention
// sweeper needs to pick each organization's window, read without holding the whole table in memory.
import type { Store } from '../store.js';

export async function organizationPlans(store: Store, afterId: string | null, limit: number): Promise<Array<{ id: string; plan: string }>> {
  return store.query(
    afterId === null
      ? 'SELECT id, plan FROM organizations ORDER BY id LIMIT $1'
      : 'SELECT id, plan FROM organizations WHERE id > $2 ORDER BY id LIMIT $1',
    afterId === null ? [limit] : [limit, afterId],
  );
}
