// organizationPlans — every organization's plan and limit overrides, a page at a time (keyset on id), for the
// retention sweeper.
import type { Store } from '../store.js';
import type { OrganizationPlan } from './organizationPlan.js';

export async function organizationPlans(store: Store, afterId: string | null, limit: number): Promise<OrganizationPlan[]> {
  return store.query(
    afterId === null
      ? 'SELECT id, plan, limit_overrides FROM organizations ORDER BY id LIMIT $1'
      : 'SELECT id, plan, limit_overrides FROM organizations WHERE id > $2 ORDER BY id LIMIT $1',
    afterId === null ? [limit] : [limit, afterId],
  );
}
