// listOrganizations / getOrganization — organizations as the admin API shows them. The list is ordered by slug
// in byte order (COLLATE "C", the same on PostgreSQL and PGlite), so the keyset `slug > last` pages it; slugs
// are unique, so the slug alone is the key.
import type { Store } from '../store.js';

export interface OrganizationRow {
  id: string;
  name: string;
  slug: string;
  plan: string;
  owner_email: string | null;
  created_at: Date | string;
}

const COLUMNS = 'id, name, slug, plan, owner_email, created_at';

export async function listOrganizations(store: Store, afterSlug: string | null, limit: number): Promise<OrganizationRow[]> {
  return store.query<OrganizationRow>(
    afterSlug === null
      ? `SELECT ${COLUMNS} FROM organizations ORDER BY slug COLLATE "C" LIMIT $1`
      : `SELECT ${COLUMNS} FROM organizations WHERE slug COLLATE "C" > $2 ORDER BY slug COLLATE "C" LIMIT $1`,
    afterSlug === null ? [limit + 1] : [limit + 1, afterSlug],
  );
}

export async function getOrganization(store: Store, id: string): Promise<OrganizationRow | null> {
  const rows = await store.query<OrganizationRow>(`SELECT ${COLUMNS} FROM organizations WHERE id = $1`, [id]);
  return rows[0] ?? null;
}
