// KeyLanes — the ready jobs of a queue that uses concurrency keys: one lane per key (jobs without a key share
// the lane of key null, which no per-key limit applies to), each lane a heap in the queue's ready order.
//
// A claim takes the head of the lane that comes first in `order`: highest head priority, then the lane served
// longest ago (its turn), then the oldest head. Serving a lane gives it the newest turn, so within a priority
// level lanes take turns (round-robin) and a key with 100,000 waiting jobs delays a key with 10 by one job per
// round, not by its backlog. A lane at its key's concurrency limit leaves `order` (parked) and comes back when one
// of its jobs stops processing, so it never blocks the lanes behind it.
//
// Each lane has its own window (window.ts): a bounded actor holds the head of every lane, and a lane whose held
// jobs ran out while some are paged out is kept (it must be refilled before claims go on: `starved`).
//
// Entries are never removed in place (see heap.ts): a lane's entry in `order` carries the lane's version and the
// head it was pushed with; a stale one is skipped, a head that moved is re-pushed when it surfaces.
import { Heap } from '../heap.js';
import { readyOrder, type Entry } from './entry.js';
import { newWin, type Win } from './window.js';

export interface Lane {
  key: string | null;
  ready: Heap<Entry>;
  /** Jobs of this key processing now. */
  processing: number;
  /** When the lane was last served (a sequence number): the lowest goes first within a priority. */
  turn: number;
  /** Bumped whenever the lane is re-pushed into `order`: older entries are stale. */
  ver: number;
  /** An entry of the current version is in `order`. */
  queued: boolean;
  win: Win;
}

interface LaneEntry {
  lane: Lane;
  ver: number;
  priority: number;
  id: string;
  turn: number;
}

const laneOrder = (a: LaneEntry, b: LaneEntry): boolean =>
  a.priority !== b.priority ? a.priority > b.priority : a.turn !== b.turn ? a.turn < b.turn : a.id < b.id;

export class KeyLanes {
  readonly lanes = new Map<string | null, Lane>();
  private readonly order = new Heap<LaneEntry>(laneOrder);
  private seq = 0;

  /**
   * `stale` says whether a ready entry no longer stands for a pending job (the actor's versions decide); `unkeyed`
   * is the window the queue had before it used lanes, which becomes the window of the lane without a key.
   */
  constructor(
    private readonly stale: (e: Entry) => boolean,
    private unkeyed: Win | null = null,
  ) {}

  /** The window of the key's lane (the lane is made if needed). */
  windowOf(key: string | null): Win {
    return this.lane(key).win;
  }

  /** The ready heap of the key's lane (its window is trimmed there). */
  heapOf(key: string | null): Heap<Entry> {
    return this.lane(key).ready;
  }

  /** Every lane's window. */
  windows(): IterableIterator<Win> {
    const it = this.lanes.values();
    return (function* () {
      for (const lane of it) yield lane.win;
    })();
  }

  push(e: Entry, limit: number | null): void {
    const lane = this.lane(e.job.concurrency_key);
    lane.ready.push(e);
    // Only a new head changes the lane's place in `order`.
    if (lane.ready.peek() === e || !lane.queued) this.requeue(lane, limit);
  }

  /** The next job to claim under the per-key limit, taken out of its lane, or undefined. */
  pop(limit: number | null): Entry | undefined {
    for (let le = this.order.pop(); le; le = this.order.pop()) {
      const lane = le.lane;
      if (le.ver !== lane.ver || this.lanes.get(lane.key) !== lane) continue;
      lane.queued = false;
      const head = this.head(lane);
      if (!head) {
        this.drop(lane);
        continue;
      }
      if (head.job.priority !== le.priority || head.job.id !== le.id) {
        this.requeue(lane, limit);
        continue;
      }
      if (this.atLimit(lane, limit)) continue;
      lane.ready.pop();
      lane.turn = ++this.seq;
      return head;
    }
    return undefined;
  }

  /** A job of `key` entered processing (a claim, or a row read back): its lane goes back in line behind the others. */
  started(key: string | null, limit: number | null): void {
    const lane = this.lane(key);
    lane.processing++;
    if (!lane.queued) this.requeue(lane, limit);
  }

  /** A job of `key` left processing: its lane may come back from parking. */
  stopped(key: string | null, limit: number | null): void {
    const lane = this.lanes.get(key);
    if (!lane) return;
    lane.processing--;
    if (!lane.queued) this.requeue(lane, limit);
  }

  /** The limit changed: every lane is placed again under it. */
  relimit(limit: number | null): void {
    for (const lane of this.lanes.values()) this.requeue(lane, limit);
  }

  /** Some lane has a claimable job under the limit (stale heads are cleaned on the way). */
  hasClaimable(limit: number | null): boolean {
    for (let le = this.order.peek(); le; le = this.order.peek()) {
      const lane = le.lane;
      if (le.ver === lane.ver && this.lanes.get(lane.key) === lane && this.head(lane) && !this.atLimit(lane, limit)) return true;
      this.order.pop();
      if (le.ver === lane.ver) {
        lane.queued = false;
        this.requeue(lane, limit);
      }
    }
    return false;
  }

  processingOf(key: string | null): number {
    return this.lanes.get(key)?.processing ?? 0;
  }

  atLimit(lane: Lane, limit: number | null): boolean {
    return limit !== null && lane.key !== null && lane.processing >= limit;
  }

  private head(lane: Lane): Entry | undefined {
    let e = lane.ready.peek();
    while (e && this.stale(e)) {
      lane.ready.pop();
      e = lane.ready.peek();
    }
    return e;
  }

  /** Puts the lane back in `order` under its current head, unless it has none or is parked at its limit. */
  private requeue(lane: Lane, limit: number | null): void {
    lane.ver++;
    lane.queued = false;
    const head = this.head(lane);
    if (!head) return this.drop(lane);
    if (this.atLimit(lane, limit)) return;
    lane.queued = true;
    this.order.push({ lane, ver: lane.ver, priority: head.job.priority, id: head.job.id, turn: lane.turn });
  }

  /** A lane with nothing ready and nothing processing is forgotten: keys come and go without growing memory. */
  private drop(lane: Lane): void {
    if (lane.processing <= 0 && lane.win.paged === 0 && this.head(lane) === undefined) this.lanes.delete(lane.key);
  }

  private lane(key: string | null): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      // A new key joins the rotation behind every key already served.
      let win = newWin(key);
      if (key === null && this.unkeyed !== null) [win, this.unkeyed] = [this.unkeyed, null];
      lane = { key, ready: new Heap<Entry>(readyOrder), processing: 0, turn: this.seq, ver: 0, queued: false, win };
      this.lanes.set(key, lane);
    }
    return lane;
  }
}
