// listOrganizations — organizations as the admin API shows them, ordered by slug in byte order (COLLATE "C", the
// same on PostgreSQL and PGlite), so the keyset `slug > last` pages it; slugs are unique, so the slug alone is
// the key.
import type { Store } from '../store.js';
import { ORGANIZATION_COLUMNS, type OrganizationRow } from './getOrganization.js';

export async function listOrganizations(store: Store, afterSlug: string | null, limit: number): Promise<OrganizationRow[]> {
  return store.query<OrganizationRow>(
    afterSlug === null
      ? `SELECT ${ORGANIZATION_COLUMNS} FROM organizations ORDER BY slug COLLATE "C" LIMIT $1`
      : `SELECT ${ORGANIZATION_COLUMNS} FROM organizations WHERE slug COLLATE "C" > $2 ORDER BY slug COLLATE "C" LIMIT $1`,
    afterSlug === null ? [limit + 1] : [limit + 1, afterSlug],
  );
}
