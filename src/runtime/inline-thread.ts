// An actor "thread" on the main thread (ACTOR_THREADS=0): the same ActorHost, reached without a worker. On a small
// machine a message between threads costs more than the work it carries: a round trip to an idle worker took
// 35-70 µs of the sender's CPU on the 2-core machine of docs/BENCHMARKS.md, most of it in the kernel waking the
// other thread.
//
// Requests are copied (copyMessage): the host keeps parts of them (a payload until committed, a rate limit), the
// sender may resend the same object (cluster/forwarding.ts), and what cannot be copied must fail alone
// (ActorPool.send). Replies are not copied (+15 % claim → complete with batch acks, docs/BENCHMARKS.md), which holds
// because every reply is its receiver's own: built fresh by the actor, with copies of what the actor keeps (a rate
// limit, an organization's limits, a committed row: journal.ts, an error's `extra`: AppError.toWire); the main thread
// never changes what it receives; and the one part that might not encode, a job row as stored, is checked by the host
// in every mode (ActorHost.encodable). Tests: actor-host, journal, errors and actor-pool.
import { EventEmitter } from 'node:events';
import type { ActorHost } from './actor-host.js';
import { startHost, type ThreadInit } from './host-start.js';
import type { ThreadIn } from './protocol.js';

export class InlineThread extends EventEmitter {
  private readonly host: ActorHost;
  private stopped = false;

  constructor(init: ThreadInit) {
    super();
    this.host = startHost(init, (batch) => {
      if (!this.stopped) this.emit('message', batch);
    });
  }

  postMessage(batch: ThreadIn[]): void {
    const copy = copyMessage(batch);
    // Received on a later turn, as a worker would: the sender finishes what it was doing first.
    queueMicrotask(() => this.host.receive(copy));
  }

  async terminate(): Promise<number> {
    this.stopped = true;
    this.emit('exit', 0);
    return 0;
  }
}

/**
 * A copy of a message, as a post to a worker would make: the protocol's messages are plain data (protocol.ts), and
 * plain objects and arrays are copied here in JavaScript, 6-8 times faster than a structured clone of the same
 * message (its serialisation and parse). Anything else goes through `structuredClone`, which copies what a worker
 * post would and throws on what it could not (a function); a value nested too deep for the stack throws a RangeError
 * as a clone runs out of stack: either way the post fails and ActorPool.send fails that request alone.
 */
function copyMessage<T>(v: T): T {
  if (v === null || typeof v !== 'object') return typeof v === 'function' || typeof v === 'symbol' ? structuredClone(v) : v;
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = copyMessage(v[i]);
    return out as T;
  }
  if (Object.getPrototypeOf(v) !== Object.prototype) return structuredClone(v);
  const out: Record<string, unknown> = {};
  for (const k in v) {
    const item = copyMessage((v as Record<string, unknown>)[k]);
    // A payload's own "__proto__" key (JSON.parse makes one) stays a key: assigned, it would set the prototype.
    if (k === '__proto__') Object.defineProperty(out, k, { value: item, enumerable: true, writable: true, configurable: true });
    else out[k] = item;
  }
  return out as T;
}
