// An actor "thread" on the main thread (ACTOR_THREADS=0): the same ActorHost, reached without a worker. On a small
// machine a message between threads costs more than the work it carries: a round trip to an idle worker took
// 35-70 µs of the sender's CPU on the 2-core machine of docs/BENCHMARKS.md, most of it in the kernel waking the
// other thread. Messages are still copied both ways (structuredClone), so that neither side ever shares an object
// with the other, exactly as across a worker.
import { EventEmitter } from 'node:events';
import type { ActorHost } from './actor-host.js';
import { postEach, startHost, type ThreadInit } from './host-start.js';
import type { ThreadIn } from './protocol.js';

export class InlineThread extends EventEmitter {
  private readonly host: ActorHost;
  private stopped = false;

  constructor(init: ThreadInit) {
    super();
    this.host = startHost(init, (batch) =>
      postEach(init.index, batch, (b) => {
        const copy = structuredClone(b);
        if (!this.stopped) this.emit('message', copy);
      }),
    );
  }

  postMessage(batch: ThreadIn[]): void {
    const copy = structuredClone(batch);
    // Received on a later turn, as a worker would: the sender finishes what it was doing first.
    queueMicrotask(() => this.host.receive(copy));
  }

  async terminate(): Promise<number> {
    this.stopped = true;
    this.emit('exit', 0);
    return 0;
  }
}
