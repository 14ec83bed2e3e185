// createOrganization — an organization with its first API key, in one statement. `onlyIfNone` makes it the
// first-boot bootstrap: nothing is written when any organization exists, so racing replicas create one.
import type { Store } from '../store.js';

export interface NewOrganization {
  id: string;
  name: string;
  slug: string;
  plan: string;
  limitOverrides?: Record<string, number | null>;
  ownerEmail?: string | null;
  keyId: string;
  keyName: string;
  keyDigest: string;
  keyPrefix: string;
  at: Date;
}

export async function createOrganization(store: Store, org: NewOrganization, onlyIfNone = false): Promise<boolean> {
  const rows = await store.query(
    `WITH o AS (
       INSERT INTO organizations (id, name, slug, plan, limit_overrides, owner_email, created_at, updated_at)
       SELECT $1, $2, $3, $4, $10::jsonb, $11, $9, $9 ${onlyIfNone ? 'WHERE NOT EXISTS (SELECT 1 FROM organizations)' : ''}
       ON CONFLICT DO NOTHING
       RETURNING id)
     INSERT INTO api_keys (id, organization_id, name, key_digest, key_prefix, permissions, created_at)
     SELECT $5, o.id, $6, $7, $8, '{*}', $9 FROM o
     RETURNING id`,
    [
      org.id,
      org.name,
      org.slug,
      org.plan,
      org.keyId,
      org.keyName,
      org.keyDigest,
      org.keyPrefix,
      org.at,
      JSON.stringify(org.limitOverrides ?? {}),
      org.ownerEmail ?? null,
    ],
  );
  return rows.length > 0;
}
