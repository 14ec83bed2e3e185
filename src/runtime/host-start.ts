// Builds and boots the ActorHost of one actor thread from what the main thread hands it (ThreadInit), whether the
// host runs on a worker thread (actor-thread.ts) or on the main thread itself (inline-thread.ts).
import { ManualClock, systemClock } from '../clock.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { PgStore } from '../io/db/pg.js';
import { RemoteStore } from '../io/db/remote.js';
import type { StoreLink } from '../io/db/store.js';
import { ActorHost } from './actor-host.js';
import type { ThreadOut } from './protocol.js';

export interface ThreadInit {
  index: number;
  threads: number;
  nodeId: string | null;
  config: Config;
  store: StoreLink;
  clock: SharedArrayBuffer | null;
}

/** The host, booting: `post` hears its replies and, once its queues are loaded, the ready message (id 0). */
export function startHost(init: ThreadInit, post: (batch: ThreadOut[]) => void): ActorHost {
  // A connection for each group commit in flight, open before the first commit; the embedded store has one
  // session for everything anyway.
  const commits = init.store.kind === 'pg' ? PgStore.forCommits(init.store.url, init.config.commitPipeline) : undefined;
  const host = new ActorHost({
    index: init.index,
    threads: init.threads,
    nodeId: init.nodeId,
    config: init.config,
    store: init.store.kind === 'pg' ? new PgStore(init.store.url, init.config.pgPoolSize, { name: 'actors' }) : new RemoteStore(init.store.port),
    commits,
    background: init.store.kind === 'pg' ? PgStore.forBackground(init.store.url, init.config.pgPoolSize) : undefined,
    clock: init.clock ? new ManualClock(init.clock) : systemClock,
    post,
  });
  Promise.all([host.boot(), commits?.warm()]).then(
    () => post([{ id: 0, ok: true, value: 'ready' }]),
    (err: Error) => post([{ id: 0, ok: false, error: new AppError('UNAVAILABLE', `boot failed: ${err.message}`).toWire() }]),
  );
  return host;
}

/**
 * Posts a batch through `post`, which copies it (a worker's port). Structured clone throws on what it cannot copy:
 * then the batch goes message by message, and a reply that cannot be copied fails its own request. The host refuses
 * the one kind of reply known to risk it (a job row stored before the edge refused deep values: ActorHost.encodable)
 * before it gets here; this is the last line. The actors on the main thread post without a copy (inline-thread.ts).
 */
export function postEach(index: number, batch: ThreadOut[], post: (batch: ThreadOut[]) => void): void {
  try {
    post(batch);
    return;
  } catch {
    // fall through: find the message that cannot be copied
  }
  for (const m of batch) {
    try {
      post([m]);
    } catch (err) {
      console.error(`[actor-thread ${index}] a message could not be posted:`, (err as Error).message);
      if (m.id > 0) post([{ id: m.id, ok: false, error: new AppError('INTERNAL', 'The reply could not be encoded').toWire() }]);
    }
  }
}
