// createOrganization — an organization with its first API key, in one statement. `onlyIfNone` makes it the
// first-boot bootstrap: nothing is written when any organization exists, so racing replicas create one.
import type { Store } from '../store.js';

export interface NewOrganization {
  id: string;
  name: string;
  slug: string;
  plan: string;
  keyId: string;
  keyName: string;
  keyDigest: string;
  keyPrefix: string;
  at: Date;
}

export async function createOrganization(store: Store, org: NewOrganization, onlyIfNone = false): Promise<boolean> {
  const rows = await store.query(
    `WITH o AS (
       INSERT INTO organizations (id, name, slug, plan, created_at, updated_at)
       SELECT $1, $2, $3, $4, $9, $9 ${onlyIfNone ? 'WHERE NOT EXISTS (SELECT 1 FROM organizations)' : ''}
       ON CONFLICT DO NOTHING
       RETURNING id)
     INSERT INTO api_keys (id, organization_id, name, key_digest, key_prefix, permissions, created_at)
     SELECT $5, o.id, $6, $7, $8, '{*}', $9 FROM o
     RETURNING id`,
    [org.id, org.name, org.slug, org.plan, org.keyId, org.keyName, org.keyDigest, org.keyPrefix, org.at],
  );
  return rows.length > 0;
}
