// The entry of an actor thread: connects an ActorHost (actor-host.ts, built by host-start.ts) to the main thread's
// port. Messages and replies cross in arrays, one post per event-loop turn (batching measured ~3x the throughput of
// one message per post).
import { parentPort, workerData } from 'node:worker_threads';
import { postEach, startHost, type ThreadInit } from './host-start.js';
import type { ThreadIn } from './protocol.js';

const init = workerData as ThreadInit;
const port = parentPort!;
const host = startHost(init, (batch) => postEach(init.index, batch, (b) => port.postMessage(b)));
port.on('message', (batch: ThreadIn[]) => host.receive(batch));
