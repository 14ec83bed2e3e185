// ping — the cheapest statement the store answers: the readiness probe's proof that it is reachable.
import type { Store } from '../store.js';

export async function ping(store: Store): Promise<void> {
  await store.query('SELECT 1');
}
