// Per-queue job metrics: what GET /api/v1/metrics shows for each queue beside its gauges — the wait and run
// histograms and the transition counters of GET /metrics (src/app/metrics.ts), under the same names, buckets and
// label sets, one set per queue. Pure: fed committed DomainEvents, read as plain data.
//
// `countJobEvent` is the one reading of a committed job event as metrics (which counter, which histogram, how
// long); the node-wide series and the per-queue ones both go through it, so they cannot drift apart.
//
// Where the per-queue numbers live: on the actor thread that serves the queue, fed by the events its journal
// publishes after each commit (the same events the node-wide series count, so the two agree). A queue is served by
// one thread of one node at a time, so its numbers are in one place in the cluster, and GET /api/v1/metrics asks
// that thread for them (the `metrics` operation of QueueOps, forwarded to the owner like any queue operation). The
// thread keeps them whether the queue's actor is loaded or not (an actor rebuilt after a failed commit keeps its
// counts, and a read never loads a cold queue), and forgets them when the queue's shard leaves the thread or the
// queue is deleted. So they count from when the thread began serving the queue: a node restart, a crashed actor
// thread or a move of the queue to another node starts them again at 0, which Prometheus' rate() and increase()
// read as a counter reset.
//
// Memory: one QueueMetrics per queue that had a job transition on this thread while it served it: a handful of
// counters, plus each histogram it used (18 numbers), allocated at its first observation.
import type { DomainEvent, QueueEventName } from '../records.js';

/** The job events counted by sluice_job_events_total (job.progress is not a transition). */
export const JOB_EVENTS = ['job.created', 'job.started', 'job.completed', 'job.failed', 'job.cancelled'] as const;
export type CountedJobEvent = (typeof JOB_EVENTS)[number];
/** How an attempt ended, for sluice_job_run_seconds{outcome}. */
export const RUN_OUTCOMES = ['completed', 'failed', 'lease_expired', 'cancelled'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];
/** Why an attempt failed, for the retry and dead-letter counters' `reason`. */
export const FAIL_REASONS = ['failed', 'lease_expired'] as const;
export type FailReason = (typeof FAIL_REASONS)[number];
export const QUEUE_EVENTS: readonly QueueEventName[] = ['queue.paused', 'queue.resumed'];

/** Waits from milliseconds (a hot queue) to an hour (a starved one), in seconds. */
export const WAIT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
export const RUN_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/** What a committed job event counts as; implemented by the node-wide series and by QueueMetrics. */
export interface JobEventSink {
  event(name: CountedJobEvent): void;
  /** Due → claimed. */
  wait(seconds: number): void;
  /** Claimed → end of that attempt. */
  run(outcome: RunOutcome, seconds: number): void;
  retry(reason: FailReason): void;
  deadLetter(reason: FailReason): void;
  leaseExpiry(): void;
  cancellation(): void;
}

type JobEvent = Extract<DomainEvent, { type: 'job' }>;

const COUNTED = new Set<string>(JOB_EVENTS);

/** Tells `sink` what one committed job event counts as. The durations come from the actor's `since` (see DomainEvent). */
export function countJobEvent(e: JobEvent, sink: JobEventSink): void {
  if (!COUNTED.has(e.event)) return;
  sink.event(e.event as CountedJobEvent);
  const took = e.since === undefined ? -1 : Math.max(0, e.at - e.since) / 1000;
  switch (e.event) {
    case 'job.started':
      if (took >= 0) sink.wait(took);
      break;
    case 'job.completed':
      if (took >= 0) sink.run('completed', took);
      break;
    case 'job.failed': {
      const reason: FailReason = e.expired ? 'lease_expired' : 'failed';
      if (e.expired) sink.leaseExpiry();
      if (e.status === 'deadletter') sink.deadLetter(reason);
      else sink.retry(reason);
      if (took >= 0) sink.run(reason, took);
      break;
    }
    case 'job.cancelled':
      sink.cancellation();
      if (took >= 0) sink.run('cancelled', took);
      break;
  }
}

/**
 * A histogram as plain data: `buckets[i]` observations fell in (bound[i-1], bound[i]], the last entry those above
 * the highest bound (not cumulative: the exposition sums them up).
 */
export interface HistogramData {
  buckets: number[];
  sum: number;
  count: number;
}

/** One queue's numbers as the `metrics` operation answers them (plain data: it may travel to another node). */
export interface QueueMetricsSnapshot {
  events: Record<CountedJobEvent, number>;
  queue_events: Record<QueueEventName, number>;
  /** null: nothing observed yet. */
  wait: HistogramData | null;
  run: Record<RunOutcome, HistogramData | null>;
  retries: Record<FailReason, number>;
  dead_letters: Record<FailReason, number>;
  lease_expiries: number;
  cancellations: number;
}

const zeros = <K extends string>(keys: readonly K[]): Record<K, number> => Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;

function observe(h: HistogramData | null, bounds: readonly number[], seconds: number): HistogramData {
  const out = h ?? { buckets: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 };
  let i = 0;
  while (i < bounds.length && seconds > bounds[i]!) i++;
  out.buckets[i]!++;
  out.sum += seconds;
  out.count++;
  return out;
}

const copy = (h: HistogramData | null): HistogramData | null => (h === null ? null : { buckets: [...h.buckets], sum: h.sum, count: h.count });

/** The numbers of one queue. */
export class QueueMetrics implements JobEventSink {
  private readonly events = zeros(JOB_EVENTS);
  private readonly queueEvents = zeros(QUEUE_EVENTS);
  private waitH: HistogramData | null = null;
  private readonly runH: Record<RunOutcome, HistogramData | null> = { completed: null, failed: null, lease_expired: null, cancelled: null };
  private readonly retries = zeros(FAIL_REASONS);
  private readonly deadLetters = zeros(FAIL_REASONS);
  private leaseExpiries = 0;
  private cancellations = 0;

  event(name: CountedJobEvent): void {
    this.events[name]++;
  }

  wait(seconds: number): void {
    this.waitH = observe(this.waitH, WAIT_BUCKETS, seconds);
  }

  run(outcome: RunOutcome, seconds: number): void {
    this.runH[outcome] = observe(this.runH[outcome], RUN_BUCKETS, seconds);
  }

  retry(reason: FailReason): void {
    this.retries[reason]++;
  }

  deadLetter(reason: FailReason): void {
    this.deadLetters[reason]++;
  }

  leaseExpiry(): void {
    this.leaseExpiries++;
  }

  cancellation(): void {
    this.cancellations++;
  }

  queueEvent(name: QueueEventName): void {
    this.queueEvents[name]++;
  }

  snapshot(): QueueMetricsSnapshot {
    return {
      events: { ...this.events },
      queue_events: { ...this.queueEvents },
      wait: copy(this.waitH),
      run: {
        completed: copy(this.runH.completed),
        failed: copy(this.runH.failed),
        lease_expired: copy(this.runH.lease_expired),
        cancelled: copy(this.runH.cancelled),
      },
      retries: { ...this.retries },
      dead_letters: { ...this.deadLetters },
      lease_expiries: this.leaseExpiries,
      cancellations: this.cancellations,
    };
  }
}

/** The QueueMetrics of the queues one actor thread serves, by actor key. */
export class QueueMetricsBook {
  private readonly queues = new Map<string, QueueMetrics>();

  constructor(private readonly keyOf: (organizationId: string, queueName: string) => string) {}

  /** Committed events, in commit order. A deleted queue's numbers go with it. */
  observe(events: readonly DomainEvent[]): void {
    for (const e of events) {
      if (e.type === 'job') countJobEvent(e, this.of(e.organization_id, e.queue_name));
      else if (e.type === 'queue') this.of(e.organization_id, e.queue_name).queueEvent(e.event);
      else if (e.type === 'queue.deleted') this.queues.delete(this.keyOf(e.organization_id, e.queue_name));
    }
  }

  /** null: nothing counted for this queue here (a queue idle since its thread began serving it). */
  snapshot(key: string): QueueMetricsSnapshot | null {
    return this.queues.get(key)?.snapshot() ?? null;
  }

  /** Forgets the queues whose key matches (their shard left this thread). */
  forget(matches: (key: string) => boolean): void {
    for (const key of [...this.queues.keys()]) if (matches(key)) this.queues.delete(key);
  }

  get size(): number {
    return this.queues.size;
  }

  private of(organizationId: string, queueName: string): QueueMetrics {
    const key = this.keyOf(organizationId, queueName);
    let m = this.queues.get(key);
    if (!m) this.queues.set(key, (m = new QueueMetrics()));
    return m;
  }
}
