// Prometheus metrics of one node (prom-client, a registry per node so several nodes can share a process in
// tests). Labels are never tenant or job ids (DESIGN invariant 6): only fixed sets such as event names.
//
// Sources: the actor threads' commit statistics (batch size and latency of every group commit, reported once a
// second), the committed domain events (job transitions), and the main thread's admission of requests (rate
// limiting). Process metrics (CPU, memory, event-loop lag) come from prom-client's defaults.
import client from 'prom-client';
import type { DomainEvent } from '../actors/records.js';
import type { CommitStats } from './protocol.js';

export class Metrics {
  readonly registry = new client.Registry();
  private readonly commits: client.Counter;
  private readonly commitFailures: client.Counter;
  private readonly commitRecords: client.Histogram;
  private readonly commitSeconds: client.Histogram;
  private readonly jobEvents: client.Counter<'event'>;
  private readonly queueEvents: client.Counter<'event'>;
  private readonly requests: client.Counter<'outcome'>;

  constructor(actorThreads: number) {
    const registers = [this.registry];
    client.collectDefaultMetrics({ register: this.registry, prefix: 'sluice_process_' });
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
    this.jobEvents = new client.Counter({
      name: 'sluice_job_events_total',
      help: 'Committed job transitions by event (job.created, job.started, job.completed, job.failed, job.cancelled)',
      labelNames: ['event'],
      registers,
    });
    this.queueEvents = new client.Counter({ name: 'sluice_queue_events_total', help: 'Queue pauses and resumes', labelNames: ['event'], registers });
    this.requests = new client.Counter({
      name: 'sluice_api_requests_total',
      help: 'Authenticated REST requests by admission outcome (admitted, rate_limited)',
      labelNames: ['outcome'],
      registers,
    });
    new client.Gauge({ name: 'sluice_actor_threads', help: 'Actor threads of this node', registers }).set(actorThreads);
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
      if (e.type === 'job') this.jobEvents.inc({ event: e.event });
      else if (e.type === 'queue') this.queueEvents.inc({ event: e.event });
    }
  }

  onRequest(admitted: boolean): void {
    this.requests.inc({ outcome: admitted ? 'admitted' : 'rate_limited' });
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
