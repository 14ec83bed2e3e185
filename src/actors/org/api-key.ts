// API keys: `svc_live_…` in production, `svc_test_…` elsewhere, 32 random bytes in base64url. Only the
// SHA-256 digest is stored; the key is shown once.
import { createHash, randomBytes } from 'node:crypto';

export function newApiKey(production: boolean): { key: string; digest: string; prefix: string } {
  const key = `svc_${production ? 'live' : 'test'}_${randomBytes(32).toString('base64url')}`;
  return { key, digest: digestKey(key), prefix: key.slice(0, 16) };
}

export const digestKey = (key: string): string => createHash('sha256').update(key).digest('hex');
