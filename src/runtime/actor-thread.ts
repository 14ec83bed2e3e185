// The entry of an actor thread: connects an ActorHost (actor-host.ts) to the main thread's port. Messages and
// replies cross in arrays, one post per event-loop turn (batching measured ~3x the throughput of one message
// per post).
import { parentPort, workerData } from 'node:worker_threads';
import { ManualClock, systemClock } from '../clock.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { PgStore } from '../io/db/pg.js';
import { RemoteStore } from '../io/db/remote.js';
import type { StoreLink } from '../io/db/store.js';
import { ActorHost } from './actor-host.js';
import type { ThreadIn, ThreadOut } from './protocol.js';

export interface ThreadInit {
  index: number;
  threads: number;
  nodeId: string | null;
  config: Config;
  store: StoreLink;
  clock: SharedArrayBuffer | null;
}

const init = workerData as ThreadInit;
const port = parentPort!;

/**
 * Posts a batch. Structured clone throws on what it cannot copy (a row stored before the edge refused deep
 * values): then the batch goes message by message, and a reply that cannot be copied fails its own request.
 */
function post(batch: ThreadOut[]): void {
  try {
    port.postMessage(batch);
    return;
  } catch {
    // fall through: find the message that cannot be copied
  }
  for (const m of batch) {
    try {
      port.postMessage([m]);
    } catch (err) {
      console.error(`[actor-thread ${init.index}] a message could not be posted:`, (err as Error).message);
      if (m.id > 0) port.postMessage([{ id: m.id, ok: false, error: new AppError('INTERNAL', 'The reply could not be encoded').toWire() }]);
    }
  }
}

const host = new ActorHost({
  index: init.index,
  threads: init.threads,
  nodeId: init.nodeId,
  config: init.config,
  store: init.store.kind === 'pg' ? new PgStore(init.store.url, init.config.pgPoolSize) : new RemoteStore(init.store.port),
  // A connection for each group commit in flight; the embedded store has one session for everything anyway.
  commits: init.store.kind === 'pg' ? new PgStore(init.store.url, init.config.commitPipeline) : undefined,
  clock: init.clock ? new ManualClock(init.clock) : systemClock,
  post,
});

port.on('message', (batch: ThreadIn[]) => host.receive(batch));

host.boot().then(
  () => port.postMessage([{ id: 0, ok: true, value: 'ready' }]),
  (err: Error) => port.postMessage([{ id: 0, ok: false, error: new AppError('UNAVAILABLE', `boot failed: ${err.message}`).toWire() }]),
);
