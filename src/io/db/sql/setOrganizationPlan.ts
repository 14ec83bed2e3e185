// setOrganizationPlan — an organization's plan tier and limit overrides (admin).
import type { Store } from '../store.js';

export async function setOrganizationPlan(
  store: Store,
  id: string,
  plan: string,
  overrides: Record<string, number | null>,
  at: Date,
): Promise<void> {
  await store.query('UPDATE organizations SET plan = $2, limit_overrides = $3::jsonb, updated_at = $4 WHERE id = $1', [
    id,
    plan,
    JSON.stringify(overrides),
    at,
  ]);
}
