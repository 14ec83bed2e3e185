// The PGlite storage thread: the one owner of the embedded database. Every other thread (main and actor
// threads) reaches it through its own MessagePort, so no two PGlite instances ever open the directory.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { migrate } from '../io/db/migrate.js';
import { PgliteStore } from '../io/db/pglite.js';
import { serveStore } from '../io/db/remote.js';

const { dir } = workerData as { dir: string | null };
const port = parentPort!;

try {
  const store = await PgliteStore.open(dir);
  await migrate(store);
  port.on('message', async (m: { t: 'serve'; port: MessagePort } | { t: 'close' }) => {
    if (m.t === 'serve') serveStore(store, m.port);
    else {
      await store.close();
      port.postMessage({ t: 'closed' });
    }
  });
  port.postMessage({ t: 'ready' });
} catch (err) {
  port.postMessage({ t: 'failed', message: (err as Error).message });
}
