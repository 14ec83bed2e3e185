// queue.stats for the queue streams: job counts of one (organization, queue), read once when a subscriber
// arrives, then again after activity on that queue (any bus event naming it), at most once a second and
// shared by every subscriber of that queue: one count query per queue per second, however many watch it.
//
// The second is measured on the node's clock: with a ManualClock a pending read waits for clock.advance.
import { ManualClock, type Clock } from '../../clock.js';
import type { Log } from '../../log.js';
import type { EventBus } from '../../app/events.js';
import type { Jobs } from '../../app/jobs.js';
import type { StatusCounts } from '../db/sql/jobStats.js';
import type { Envelope, StreamHub } from './hub.js';

/** At most one coalesced read per queue in this window. */
export const STATS_EVERY_MS = 1000;

type Send = (e: Envelope) => void;

interface Watch {
  organizationId: string;
  queue: string;
  subscribers: Set<Send>;
  stopListening: () => void;
  /** Activity seen since the last read started. */
  dirty: boolean;
  /** When the next read is due (null: none planned), and its real timer outside manual time. */
  due: number | null;
  timer: NodeJS.Timeout | null;
  lastReadAt: number;
  reading: Promise<StatusCounts> | null;
}

export class QueueStatsFeed {
  private readonly watches = new Map<string, Watch>();
  private readonly stopClock: () => void = () => {};

  constructor(
    private readonly jobs: Pick<Jobs, 'stats'>,
    private readonly events: EventBus,
    private readonly clock: Clock,
    private readonly hub: StreamHub,
    private readonly log: Log,
  ) {
    if (clock instanceof ManualClock) {
      const unhook = clock.onAdvance(() => this.fireDue());
      this.stopClock = () => void unhook();
    }
  }

  /** Sends a snapshot, then coalesced updates, until the returned function is called. */
  watch(organizationId: string, queue: string, send: Send): () => void {
    const key = `${organizationId}\u0000${queue}`;
    let w = this.watches.get(key);
    if (!w) {
      const fresh: Watch = {
        organizationId,
        queue,
        subscribers: new Set(),
        stopListening: () => {},
        dirty: false,
        due: null,
        timer: null,
        lastReadAt: -Infinity,
        reading: null,
      };
      fresh.stopListening = this.events.subscribe(organizationId, (e) => {
        if (e.data.queue_name === queue) this.touch(fresh);
      });
      this.watches.set(key, (w = fresh));
    }
    const watch = w;
    watch.subscribers.add(send);
    // A read already under way serves the newcomer too.
    this.read(watch).then(
      (counts) => {
        if (watch.subscribers.has(send)) send(this.envelope(watch, counts));
      },
      (err) => this.failed(watch, err),
    );
    return () => {
      watch.subscribers.delete(send);
      if (watch.subscribers.size > 0) return;
      watch.stopListening();
      if (watch.timer) clearTimeout(watch.timer);
      watch.due = null;
      if (this.watches.get(key) === watch) this.watches.delete(key);
    };
  }

  stop(): void {
    this.stopClock();
    for (const w of this.watches.values()) if (w.timer) clearTimeout(w.timer);
  }

  private touch(w: Watch): void {
    w.dirty = true;
    this.plan(w);
  }

  /** Plans the next read: a second after the last one began, and never while one is under way. */
  private plan(w: Watch): void {
    if (!w.dirty || w.due !== null || w.reading !== null || w.subscribers.size === 0) return;
    const now = this.clock.now();
    w.due = Math.max(now, w.lastReadAt + STATS_EVERY_MS);
    // Under manual time only clock.advance moves a wait along (fireDue); a read due now goes at once.
    if (!this.clock.manual || w.due <= now) w.timer = setTimeout(() => void this.flush(w), Math.max(0, w.due - now));
  }

  private async fireDue(): Promise<void> {
    const now = this.clock.now();
    await Promise.all([...this.watches.values()].filter((w) => w.due !== null && w.due <= now).map((w) => this.flush(w)));
  }

  private async flush(w: Watch): Promise<void> {
    if (w.timer) clearTimeout(w.timer);
    w.timer = null;
    w.due = null;
    if (w.subscribers.size === 0) return;
    w.dirty = false;
    try {
      const counts = await this.read(w);
      const e = this.envelope(w, counts);
      for (const send of w.subscribers) send(e);
    } catch (err) {
      this.failed(w, err);
    }
    this.plan(w);
  }

  private read(w: Watch): Promise<StatusCounts> {
    if (w.reading) return w.reading;
    w.lastReadAt = this.clock.now();
    const reading = this.jobs.stats(w.organizationId, w.queue).finally(() => {
      w.reading = null;
      // Activity during a read is not in its counts: it plans the next one.
      this.plan(w);
    });
    w.reading = reading;
    return reading;
  }

  private envelope(w: Watch, counts: StatusCounts): Envelope {
    return this.hub.envelope('queue.stats', { queue_name: w.queue, ...counts });
  }

  private failed(w: Watch, err: unknown): void {
    // After shutdown the store is gone and nobody is listening: nothing to report.
    if (w.subscribers.size > 0) this.log.warn(`could not read the stats of queue ${w.queue}`, err);
  }
}
