// touchApiKey — records that a key was used. The authenticator calls it at most once per key every 5 minutes
// (SPEC: last-used time is coarse) and does not wait for it; the condition keeps the time from going back when
// nodes' writes cross.
import type { Store } from '../store.js';

export async function touchApiKey(store: Store, id: string, at: Date): Promise<void> {
  await store.query(
    'UPDATE api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)',
    [id, at],
    'touchApiKey',
  );
}
