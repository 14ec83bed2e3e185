// Prometheus metrics of one node (prom-client, a registry per node so several nodes can share a process in
// tests). Labels are never tenant, queue, job or worker ids (DESIGN invariant 6): only fixed sets such as event
// names, route templates, status classes, gRPC method names and delivery outcomes.
//
// A service of the node, not part of the engine: the engine's only seam for it is the commit statistics its
// threads report (CommitStats in src/runtime/protocol.ts, through ActorPool.onStats).
//
// Sources:
// - the actor threads' commit statistics (batch size and latency of every group commit, reported once a second);
// - the committed domain events (job transitions, queue pauses): counters, and the wait and run histograms from
//   the times the actors put on the events (`since`), so nothing is read per job; counted in plain numbers (a
//   QueueMetrics for the whole node) and written out at scrape time beside prom-client's registry;
// - the store, at scrape time, for the cluster gauges (jobs by state, oldest pending age), summed over all
//   organizations and cached for GAUGE_CACHE_MS so that frequent scrapes cannot load the database;
// - the main thread's HTTP and gRPC servers (latency, admission), outgoing webhook deliveries (closed, endpoints disabled) and the
//   open streams (counted at scrape time);
// - prom-client's default process metrics, under their standard names (process_cpu_seconds_total,
//   nodejs_eventloop_lag_seconds…) so stock dashboards work.
//
// The per-organization view (GET /api/v1/metrics) is rendered here too: the gauges from that organization's rows
// only, and per queue the same histograms and counters as the node-wide series, asked of the thread that serves
// each queue (src/actors/queue/queue-metrics.ts says where they are counted and when they start again at 0).
import { performance } from 'node:perf_hooks';
import client from 'prom-client';
import {
  countJobEvent,
  FAIL_REASONS,
  JOB_EVENTS,
  QUEUE_EVENTS,
  QueueMetrics,
  RUN_BUCKETS,
  RUN_OUTCOMES,
  WAIT_BUCKETS,
  type HistogramData,
  type QueueMetricsSnapshot,
} from '../actors/queue/queue-metrics.js';
import type { DomainEvent } from '../actors/records.js';
import type { Clock } from '../clock.js';
import { clusterJobGauges, emptyCounts, GAUGE_STATES, type StateCounts } from '../io/db/sql/clusterJobGauges.js';
import { queueJobGauges } from '../io/db/sql/queueJobGauges.js';
import type { Store } from '../io/db/store.js';
import type { Log } from '../log.js';
import type { ActorPool } from '../runtime/actor-pool.js';
import type { CommitStats } from '../runtime/protocol.js';

/** How long a read of the cluster gauges serves scrapes. */
export const GAUGE_CACHE_MS = 5_000;
/** The most queues GET /api/v1/metrics reports (the busiest first). */
export const MAX_REPORTED_QUEUES = 100;

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export type StreamTransport = 'sse' | 'websocket' | 'grpc';
export type DeliveryKind = 'webhook' | 'callback' | 'test';

export interface MetricsOptions {
  actorThreads: number;
  store: Store;
  clock: Clock;
  log: Log;
  /** Asks each reported queue's thread for its counters (GET /api/v1/metrics). */
  actors: Pick<ActorPool, 'ask'>;
}

/** The help of the job series, shared by GET /metrics and the per-queue series of GET /api/v1/metrics. */
const HELP = {
  events: 'Committed job transitions by event (job.created, job.started, job.completed, job.failed, job.cancelled)',
  wait: 'Time from a job falling due (enqueued, its scheduled time or retry backoff passed, a lease expiry, a workflow release) to its claim',
  run: 'Time from a claim to the end of that attempt, by outcome (completed, failed, lease_expired, cancelled)',
  retries: 'Failed attempts that will be retried, by reason (failed: the worker said so; lease_expired)',
  deadLetters: 'Jobs moved to the dead-letter queue, by reason (failed: retries exhausted or not retryable; lease_expired)',
  leaseExpiries: 'Leases that expired before their worker answered',
  cancellations: 'Jobs cancelled (pending, scheduled or processing)',
  queueEvents: 'Queue pauses and resumes',
};

/** "2xx" … "5xx". */
export const statusClass = (status: number): string => `${Math.floor(status / 100)}xx`;

export class Metrics {
  readonly registry = new client.Registry();
  private readonly commits: client.Counter;
  private readonly commitFailures: client.Counter;
  private readonly commitRecords: client.Histogram;
  private readonly commitSeconds: client.Histogram;
  private readonly requests: client.Counter<'outcome'>;
  private readonly http: client.Histogram<'method' | 'route' | 'status_class'>;
  private readonly grpc: client.Histogram<'method' | 'code'>;
  private readonly deliveries: client.Counter<'kind' | 'outcome'>;
  private readonly disabled: client.Counter;
  // The node-wide series counted from committed events, in plain numbers, written out at scrape time by the code
  // that writes the per-queue ones: prom-client's counters and histograms build and hash a label key on every call,
  // which per job was ~3 % of the node's allocations. What a job event counts as is decided once, by countJobEvent.
  private readonly nodeCounts = new QueueMetrics();
  private readonly streamCounts = new Map<StreamTransport, () => number>();
  private gaugeRead: { at: number; value: Promise<StateCounts> } | null = null;
  private lastGauges: StateCounts = emptyCounts();

  constructor(private readonly o: MetricsOptions) {
    const registers = [this.registry];
    client.collectDefaultMetrics({ register: this.registry });
    this.commits = new client.Counter({ name: 'sluice_journal_commits_total', help: 'Group commits of the actor threads', registers });
    this.commitFailures = new client.Counter({
      name: 'sluice_journal_commit_failures_total',
      help: 'Group commits the store refused (answered 503, actors rebuilt)',
      registers,
    });
    this.commitRecords = new client.Histogram({
      name: 'sluice_journal_commit_records',
      help: 'Journal records per group commit',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      registers,
    });
    this.commitSeconds = new client.Histogram({
      name: 'sluice_journal_commit_seconds',
      help: 'Duration of a group commit (one statement, one round trip)',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.requests = new client.Counter({
      name: 'sluice_api_requests_total',
      help: 'Authenticated REST and gRPC requests by admission outcome (admitted, rate_limited)',
      labelNames: ['outcome'],
      registers,
    });
    this.http = new client.Histogram({
      name: 'sluice_http_request_duration_seconds',
      help: 'REST answers: time from the request to its answer (an SSE stream: to its headers), by method, route template and status class',
      labelNames: ['method', 'route', 'status_class'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.grpc = new client.Histogram({
      name: 'sluice_grpc_request_duration_seconds',
      help: 'Unary gRPC calls by method (Service/Method) and status code name',
      labelNames: ['method', 'code'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const counts = this.streamCounts;
    new client.Gauge({
      name: 'sluice_streams_open',
      help: 'Open real-time streams on this node by transport (sse, websocket, grpc)',
      labelNames: ['transport'],
      registers,
      collect() {
        for (const [transport, n] of counts) this.set({ transport }, n());
      },
    });
    this.deliveries = new client.Counter({
      name: 'sluice_webhook_deliveries_total',
      help: 'Outgoing webhook deliveries closed, by kind (webhook, callback, test) and outcome (success; failed: every attempt failed)',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.disabled = new client.Counter({
      name: 'sluice_webhook_endpoints_disabled_total',
      help: 'Webhook endpoints disabled automatically after consecutive failed deliveries',
      registers,
    });
    const gauges = () => this.clusterGauges();
    const cached = `read from the store at most every ${GAUGE_CACHE_MS / 1000} s; every node reports the same cluster-wide value`;
    new client.Gauge({
      name: 'sluice_jobs',
      help: `Jobs of all organizations by state (pending, blocked on workflow parents, scheduled, processing, deadletter); ${cached}`,
      labelNames: ['state'],
      registers,
      async collect() {
        const g = await gauges();
        for (const state of GAUGE_STATES) this.set({ state }, g.counts[state]);
      },
    });
    const clock = o.clock;
    new client.Gauge({
      name: 'sluice_oldest_pending_job_age_seconds',
      help: `Age of the oldest claimable pending job since it fell due, 0 when none waits; its due time is ${cached}`,
      registers,
      async collect() {
        this.set(ageSeconds((await gauges()).oldestDue, clock.now()));
      },
    });
    new client.Gauge({ name: 'sluice_actor_threads', help: 'Actor threads of this node', registers }).set(o.actorThreads);
  }

  onCommits(stats: CommitStats): void {
    this.commits.inc(stats.records.length);
    if (stats.failed > 0) this.commitFailures.inc(stats.failed);
    for (let i = 0; i < stats.records.length; i++) {
      this.commitRecords.observe(stats.records[i]!);
      this.commitSeconds.observe(stats.ms[i]! / 1000);
    }
  }

  onEvents(events: DomainEvent[]): void {
    for (const e of events) {
      if (e.type === 'queue') this.nodeCounts.queueEvent(e.event);
      else if (e.type === 'job') countJobEvent(e, this.nodeCounts);
    }
  }

  onRequest(admitted: boolean): void {
    this.requests.inc({ outcome: admitted ? 'admitted' : 'rate_limited' });
  }

  /** `route`: the matched route template, or 'unmatched' (never the raw path). */
  onHttp(method: string, route: string, status: number, seconds: number): void {
    this.http.observe({ method, route, status_class: statusClass(status) }, seconds);
  }

  onGrpc(method: string, code: string, seconds: number): void {
    this.grpc.observe({ method, code }, seconds);
  }

  onDelivery(kind: DeliveryKind, ok: boolean): void {
    this.deliveries.inc({ kind, outcome: ok ? 'success' : 'failed' });
  }

  onEndpointDisabled(): void {
    this.disabled.inc();
  }

  /** How to count a transport's open streams at scrape time. */
  countStreams(transport: StreamTransport, count: () => number): void {
    this.streamCounts.set(transport, count);
  }

  async render(): Promise<string> {
    const out: string[] = [];
    countedFamilies(out, [['', this.nodeCounts.snapshot()]], '');
    return `${await this.registry.metrics()}\n${out.join('\n')}\n`;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * One organization's view (GET /api/v1/metrics), for at most MAX_REPORTED_QUEUES of its queues, those with the
   * most unfinished jobs first (sluice_queues says how many there are): the cluster gauges per queue, read from its
   * rows only; and per queue the job series of GET /metrics (same names, buckets and labels, plus `queue`), asked of
   * the thread that serves each queue, on whichever node (one `metrics` ask per reported queue, forwarded to the
   * owner like any queue operation; a cold queue is not loaded to answer it). A queue whose owner cannot be
   * reached now (a shard between owners for longer than the forwarding patience) has its gauges but not those
   * series in this answer; the next scrape has them again.
   */
  async renderOrganization(organizationId: string): Promise<string> {
    const byQueue = await queueJobGauges(this.o.store, organizationId);
    const now = this.o.clock.now();
    const backlog = (g: StateCounts) => g.counts.pending + g.counts.blocked + g.counts.scheduled + g.counts.processing;
    const queues = [...byQueue]
      .sort(([a, ga], [b, gb]) => backlog(gb) - backlog(ga) || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, MAX_REPORTED_QUEUES);
    const asked = await Promise.allSettled(queues.map(([q]) => this.o.actors.ask(organizationId, q, 'metrics', {})));
    const counted: Array<[label: string, m: QueueMetricsSnapshot]> = [];
    let unreachable = 0;
    asked.forEach((r, i) => {
      const label = `queue="${escapeLabel(queues[i]![0])}"`;
      if (r.status === 'fulfilled') counted.push([label, r.value ?? EMPTY_QUEUE]);
      else if (unreachable++ === 0) this.o.log.warn('metrics: a queue\'s counters could not be read; its series are left out of this answer', r.reason);
    });
    const out: string[] = [];
    const family = (name: string, help: string, type: 'gauge' | 'counter' | 'histogram') => out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    family('sluice_jobs', 'Jobs of this queue by state (pending, blocked on workflow parents, scheduled, processing, deadletter)', 'gauge');
    for (const [q, g] of queues) for (const state of GAUGE_STATES) out.push(`sluice_jobs{queue="${escapeLabel(q)}",state="${state}"} ${g.counts[state]}`);
    family('sluice_oldest_pending_job_age_seconds', 'Age of the queue\'s oldest claimable pending job since it fell due, 0 when none waits', 'gauge');
    for (const [q, g] of queues) out.push(`sluice_oldest_pending_job_age_seconds{queue="${escapeLabel(q)}"} ${ageSeconds(g.oldestDue, now)}`);
    family('sluice_queue_paused', '1 when the queue is paused', 'gauge');
    for (const [q, g] of queues) out.push(`sluice_queue_paused{queue="${escapeLabel(q)}"} ${g.paused ? 1 : 0}`);
    family('sluice_queues', `Queues of this organization (at most ${MAX_REPORTED_QUEUES} are reported, the busiest first)`, 'gauge');
    out.push(`sluice_queues ${byQueue.size}`);

    // Counted by the node that serves the queue, since it began serving it: they start again at 0 when the queue
    // moves to another node or that node restarts (a counter reset).
    countedFamilies(out, counted, '; this queue only, counted since the node serving it began to (0 again after the queue moves or that node restarts)');
    return `${out.join('\n')}\n`;
  }

  /** The cluster gauges, read at most every GAUGE_CACHE_MS; a failed read serves the last values it had. */
  private clusterGauges(): Promise<StateCounts> {
    const now = performance.now();
    if (this.gaugeRead === null || now - this.gaugeRead.at >= GAUGE_CACHE_MS) {
      const value = clusterJobGauges(this.o.store).then(
        (g) => (this.lastGauges = g),
        (err) => {
          this.o.log.warn('metrics: the job gauges could not be read; serving the last values', err);
          return this.lastGauges;
        },
      );
      this.gaugeRead = { at: now, value };
    }
    return this.gaugeRead.value;
  }
}

/** What a queue that counted nothing yet shows: every series at 0 (a series that appears late breaks rate()). */
const EMPTY_QUEUE: QueueMetricsSnapshot = new QueueMetrics().snapshot();

/**
 * The series counted from committed events (jobs' transitions and times, queues' pauses and resumes) of one or more
 * sets of numbers (per queue: `label` is its `queue="…"`; node-wide: ''), family by family as the text format wants
 * them, each with `help` + `since` and every series present from the start at 0 (a series that appears late breaks
 * rate()).
 */
function countedFamilies(out: string[], sets: Array<[label: string, m: QueueMetricsSnapshot]>, since: string): void {
  const family = (name: string, help: string, type: 'counter' | 'histogram') => out.push(`# HELP ${name} ${help}${since}`, `# TYPE ${name} ${type}`);
  const labels = (...parts: string[]) => {
    const l = parts.filter((p) => p !== '').join(',');
    return l === '' ? '' : `{${l}}`;
  };
  const counter = (name: string, help: string, value: (m: QueueMetricsSnapshot) => Array<[label: string, n: number]>) => {
    family(name, help, 'counter');
    for (const [q, m] of sets) for (const [l, n] of value(m)) out.push(`${name}${labels(q, l)} ${n}`);
  };
  const histogram = (name: string, parts: string[], bounds: readonly number[], h: HistogramData | null) => {
    let cumulative = 0;
    for (let i = 0; i < bounds.length; i++) {
      cumulative += h?.buckets[i] ?? 0;
      out.push(`${name}_bucket${labels(...parts, `le="${bounds[i]}"`)} ${cumulative}`);
    }
    const count = h?.count ?? 0;
    out.push(`${name}_bucket${labels(...parts, 'le="+Inf"')} ${count}`, `${name}_sum${labels(...parts)} ${h?.sum ?? 0}`, `${name}_count${labels(...parts)} ${count}`);
  };
  counter('sluice_job_events_total', HELP.events, (m) => JOB_EVENTS.map((e) => [`event="${e}"`, m.events[e]]));
  family('sluice_job_wait_seconds', HELP.wait, 'histogram');
  for (const [q, m] of sets) histogram('sluice_job_wait_seconds', [q], WAIT_BUCKETS, m.wait);
  family('sluice_job_run_seconds', HELP.run, 'histogram');
  for (const [q, m] of sets) for (const o of RUN_OUTCOMES) histogram('sluice_job_run_seconds', [q, `outcome="${o}"`], RUN_BUCKETS, m.run[o]);
  counter('sluice_job_retries_total', HELP.retries, (m) => FAIL_REASONS.map((r) => [`reason="${r}"`, m.retries[r]]));
  counter('sluice_job_dead_letters_total', HELP.deadLetters, (m) => FAIL_REASONS.map((r) => [`reason="${r}"`, m.dead_letters[r]]));
  counter('sluice_job_lease_expiries_total', HELP.leaseExpiries, (m) => [['', m.lease_expiries]]);
  counter('sluice_job_cancellations_total', HELP.cancellations, (m) => [['', m.cancellations]]);
  counter('sluice_queue_events_total', HELP.queueEvents, (m) => QUEUE_EVENTS.map((e) => [`event="${e}"`, m.queue_events[e]]));
}

const ageSeconds = (due: number | null, now: number): number => (due === null ? 0 : Math.max(0, now - due) / 1000);

/** A Prometheus label value: backslash, double quote and line feed escaped. */
const escapeLabel = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
