// organizationPlans — organizations' plans and limit overrides: every organization a page at a time (keyset on
// id, for the retention sweeper), or one of them (rate limits).
import type { Store } from '../store.js';

export interface OrganizationPlan {
  id: string;
  plan: string;
  limit_overrides: Record<string, number | null>;
}

export async function organizationPlans(store: Store, afterId: string | null, limit: number): Promise<OrganizationPlan[]> {
  return store.query(
    afterId === null
      ? 'SELECT id, plan, limit_overrides FROM organizations ORDER BY id LIMIT $1'
      : 'SELECT id, plan, limit_overrides FROM organizations WHERE id > $2 ORDER BY id LIMIT $1',
    afterId === null ? [limit] : [limit, afterId],
  );
}

export async function organizationPlan(store: Store, id: string): Promise<OrganizationPlan | null> {
  const rows = await store.query<OrganizationPlan>('SELECT id, plan, limit_overrides FROM organizations WHERE id = $1', [id]);
  return rows[0] ?? null;
}
