// The events between two nodes, with the node-to-node channel replaced by one in memory that can lose messages:
// a subscriber on the receiving node still sees every event of its organization once and in order, whether the
// loss shows as a skipped number (a later event arrives) or only in a round's interest message (nothing came
// after); events older than what the sender keeps are reported lost, not waited for.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventBus, type SluiceEvent } from '../src/app/events.js';
import type { Authenticator } from '../src/app/auth.js';
import { ManualClock } from '../src/clock.js';
import { EventFanOut } from '../src/io/events/fan-out.js';
import { StreamHub } from '../src/io/events/hub.js';

const ORG = 'org-1';

type Handler = (payload: unknown, from: string) => unknown;

/** Two nodes' channel: casts go through `deliver`, which a test can make drop them. */
class Wire {
  readonly handlers = new Map<string, Map<string, Handler>>();
  readonly rounds = new Map<string, Array<() => void>>();
  drop: (method: string, payload: unknown) => boolean = () => false;

  node(id: string, other: string) {
    const handlers = new Map<string, Handler>();
    this.handlers.set(id, handlers);
    this.rounds.set(id, []);
    const peer = { id: other, address: `${other}:1` };
    return {
      others: () => [peer],
      handle: (method: string, fn: Handler) => void handlers.set(method, fn),
      cast: (to: { id: string }, method: string, payload: unknown) => {
        if (this.drop(method, payload)) return;
        const copy = JSON.parse(JSON.stringify(payload)) as unknown;
        queueMicrotask(() => this.handlers.get(to.id)!.get(method)!(copy, id));
      },
      call: async <T>(to: { id: string }, method: string, payload: unknown): Promise<T> =>
        JSON.parse(JSON.stringify(await this.handlers.get(to.id)!.get(method)!(payload, id))) as T,
      onRound: (fn: () => void) => void this.rounds.get(id)!.push(fn),
    };
  }

  round(id: string): void {
    for (const fn of this.rounds.get(id)!) fn();
  }
}

const settle = () => new Promise((r) => setTimeout(r, 20));
const auth = { onRevoke: () => () => {} } as unknown as Authenticator;

function pair() {
  const wire = new Wire();
  const clock = new ManualClock(Date.UTC(2030, 0, 1));
  const busA = new EventBus(clock);
  const busB = new EventBus(clock);
  new EventFanOut(wire.node('A', 'B'), busA, new StreamHub(busA, clock, auth, 10)).start();
  new EventFanOut(wire.node('B', 'A'), busB, new StreamHub(busB, clock, auth, 10)).start();
  const heard: SluiceEvent[] = [];
  busB.subscribe(ORG, (e) => heard.push(e));
  return { wire, busA, heard };
}

const publish = (bus: EventBus, n: number) => bus.publish(ORG, 'job.created', { n });
const ns = (heard: SluiceEvent[]) => heard.map((e) => e.data.n);

test('a lost event is asked for again when the next one shows the gap, and delivered before it', async () => {
  const { wire, busA, heard } = pair();
  await settle(); // B tells A it has a subscriber of ORG
  publish(busA, 1);
  await settle();
  let lost = false;
  wire.drop = (method, payload) => method === 'events' && !lost && (lost = (payload as { seq: number }).seq === 2);
  publish(busA, 2);
  await settle();
  assert.deepEqual(ns(heard), [1]);
  publish(busA, 3);
  await settle();
  assert.deepEqual(ns(heard), [1, 2, 3], 'each once, in order');
});

test('a loss with nothing after it is found by the next round, which says how many were sent', async () => {
  const { wire, busA, heard } = pair();
  await settle();
  wire.drop = (method) => method === 'events';
  publish(busA, 1);
  publish(busA, 2);
  await settle();
  assert.deepEqual(ns(heard), []);
  wire.drop = () => false;
  wire.round('A');
  await settle();
  assert.deepEqual(ns(heard), [1, 2]);
  wire.round('A');
  await settle();
  assert.deepEqual(ns(heard), [1, 2], 'nothing twice');
});
