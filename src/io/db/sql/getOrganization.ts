// getOrganization — one organization as the admin API shows it. The row type and columns are shared with
// listOrganizations.
import type { Store } from '../store.js';

export interface OrganizationRow {
  id: string;
  name: string;
  slug: string;
  plan: string;
  owner_email: string | null;
  created_at: Date | string;
}

export const ORGANIZATION_COLUMNS = 'id, name, slug, plan, owner_email, created_at';

export async function getOrganization(store: Store, id: string): Promise<OrganizationRow | null> {
  const rows = await store.query<OrganizationRow>(`SELECT ${ORGANIZATION_COLUMNS} FROM organizations WHERE id = $1`, [id]);
  return rows[0] ?? null;
}
