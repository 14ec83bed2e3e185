// First boot: with no organization in the store, create `default` and its first API key. The key is printed
// once and written (mode 0600) into the data directory, the only two places it ever appears.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { newApiKey } from '../actors/org/api-key.js';
import type { Store } from '../io/db/store.js';
import { createOrganization } from '../io/db/sql/createOrganization.js';

export const KEY_FILE = 'default-api-key';

export async function bootstrap(store: Store, config: Config, now: number, log: (msg: string) => void): Promise<string | null> {
  const { key, digest, prefix } = newApiKey(config.production);
  const created = await createOrganization(
    store,
    {
      id: randomUUID(),
      name: 'Default',
      slug: 'default',
      // The instance operator's own organization: no quotas and no rate limit (its limits can be changed later
      // through the admin API like any other organization's).
      plan: 'enterprise',
      limitOverrides: { rate_per_second: null, burst: null },
      keyId: randomUUID(),
      keyName: 'bootstrap',
      keyDigest: digest,
      keyPrefix: prefix,
      at: new Date(now),
    },
    true,
  );
  if (!created) return null;
  fs.mkdirSync(config.dataDir, { recursive: true });
  const file = path.join(config.dataDir, KEY_FILE);
  fs.writeFileSync(file, `${key}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  log(`created organization "default"; its API key (shown once, also in ${file}):\n\n    ${key}\n`);
  return key;
}
