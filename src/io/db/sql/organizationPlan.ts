// organizationPlan — one organization's plan and limit overrides (rate limits, the admin plan routes).
import type { Store } from '../store.js';

export interface OrganizationPlan {
  id: string;
  plan: string;
  limit_overrides: Record<string, number | null>;
}

export async function organizationPlan(store: Store, id: string): Promise<OrganizationPlan | null> {
  const rows = await store.query<OrganizationPlan>('SELECT id, plan, limit_overrides FROM organizations WHERE id = $1', [id]);
  return rows[0] ?? null;
}
