// An actor "thread" on the main thread (ACTOR_THREADS=0): the same ActorHost, reached without a worker. On a small
// machine a message between threads costs more than the work it carries: a round trip to an idle worker took
// 35-70 µs of the sender's CPU on the 2-core machine of docs/BENCHMARKS.md, most of it in the kernel waking the
// other thread.
//
// Requests are copied (structuredClone) on their way in; replies, events and statistics come back as they are, with
// no copy: the copy of replies took 7.5 % of the main thread when workers batch their acknowledgements, and the
// measurement without it did 16 % more claim → complete cycles (docs/BENCHMARKS.md). What the reply copy guaranteed
// holds without it:
//
//  1. No reply shares a mutable object with actor state, with the journal, or with another reply. Every reply is
//     built fresh by the actor that answers (queue-actor.ts, org-actor.ts), nothing of it kept after: where a reply
//     names something the actor holds, it carries a copy (a queue's rate limit, an organization's limits). A job row
//     a commit returned is read through the journal's view, which hands each reply a row of its own (journal.ts),
//     although several replies may rest on one row. An error's `extra` is copied by AppError.toWire, one error
//     failing many requests. Events are made for the one change they tell and published once; the host only counts
//     them before (queue-metrics.ts). Copies are shallow: the JSON values a reply or an event carries (payloads,
//     results, tags, progress data) are never changed in place, on either side.
//  2. The main thread never changes what it receives: the use cases (src/app) and the adapters (src/io/http,
//     src/io/grpc, src/io/events) present replies and events as new objects, never in place (explain.ts adds what
//     the store knows to a copy of the actor's facts). What it sent it may still hold, or send again (a forwarded
//     message is retried as it is, cluster/forwarding.ts), while the host keeps parts of it (a payload in the journal
//     until it is committed, a queue's rate limit in its actor): that, and the refusal of what cannot be copied with
//     VALIDATION_ERROR for that request alone (ActorPool.send), is why requests are still copied.
//  3. A reply that cannot be encoded fails only its own request. Replies are plain data built from the actor's own
//     strings and numbers and from request data that crossed the copy above; the one exception, job rows as the
//     store returns them (claims, revives: a payload stored before the edge refused deep values), is checked by the
//     host in every mode (ActorHost.encodable): a row nested deeper than REPLY_MAX_DEPTH fails its request with
//     INTERNAL "The reply could not be encoded", the others go on. On a worker, postEach (host-start.ts) stays the
//     last line.
//
// test/actor-host.test.ts, test/journal.test.ts and test/actor-pool.test.ts change what they receive and send rows
// too deep to encode: they fail if any of this stops holding.
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
