// Queues: create (counted against the `queues` quota), pause (parked claims answered at once), resume,
// configure, delete (409 while live jobs remain), each run by the queue's actor; and the reads (list, one
// queue, stats), straight from the store, where the actors' writes are committed before their replies.
import Type from 'typebox';
import type { QueueView } from '../actors/queue/queue-actor.js';
import { notFound, validationError } from '../errors.js';
import { jobStats, zeroCounts, type StatusCounts } from '../io/db/sql/jobStats.js';
import { getQueue } from '../io/db/sql/getQueue.js';
import { listQueues, type QueueRow } from '../io/db/sql/listQueues.js';
import { queueCounts } from '../io/db/sql/queueCounts.js';
import { queueStats } from '../io/db/sql/queueStats.js';
import { busiestKeys, type KeyLoad } from '../io/db/sql/busiestKeys.js';
import { validator, type Valid } from '../io/validate.js';
import type { AppContext } from './context.js';
import { queueNameValid, QueueName } from './fields.js';

const MaxRetries = Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()]);
const LeaseSecs = Type.Union([Type.Integer({ minimum: 5, maximum: 3600 }), Type.Null()]);
// Flow control (docs/flow-control.md); null clears a limit. The rate window's log holds `jobs` instants, hence its cap.
const PerKey = Type.Union([Type.Integer({ minimum: 1, maximum: 10_000 }), Type.Null()]);
const MaxConcurrency = Type.Union([Type.Integer({ minimum: 1, maximum: 100_000 }), Type.Null()]);
const RateLimit = Type.Union([
  Type.Object({ jobs: Type.Integer({ minimum: 1, maximum: 10_000 }), per_seconds: Type.Integer({ minimum: 1, maximum: 86_400 }) }),
  Type.Null(),
]);
const FlowFields = {
  concurrency_per_key: Type.Optional(PerKey),
  max_concurrency: Type.Optional(MaxConcurrency),
  rate_limit: Type.Optional(RateLimit),
};

export const CreateQueueBody = validator(
  Type.Object({
    name: Type.Optional(QueueName),
    queue_name: Type.Optional(QueueName),
    max_retries: Type.Optional(MaxRetries),
    lease_duration_secs: Type.Optional(LeaseSecs),
    ...FlowFields,
  }),
);
export const PauseBody = validator(Type.Object({ reason: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()])) }));
export const QueueConfigBody = validator(Type.Object({ max_retries: Type.Optional(MaxRetries), lease_duration_secs: Type.Optional(LeaseSecs), ...FlowFields }));

/** The throughput window of queue stats. */
export const THROUGHPUT_WINDOW_MS = 60_000;

/** How many concurrency keys queue stats list. */
export const BUSIEST_KEYS = 10;

export interface QueueStats extends StatusCounts {
  name: string;
  paused: boolean;
  /** Whole seconds since the oldest pending job became due; null when none is pending. */
  oldest_pending_age_seconds: number | null;
  throughput_last_minute: { completed: number; failed: number };
  /** The concurrency keys with the most processing jobs, then the most live jobs. */
  busiest_keys: KeyLoad[];
}

export class Queues {
  constructor(private readonly c: AppContext) {}

  async create(org: string, body: Valid<typeof CreateQueueBody>): Promise<QueueView> {
    const name = body.name ?? body.queue_name;
    if (!name) throw validationError([{ field: 'name', message: 'is required' }]);
    await this.c.quotas.reserve(org, 'queues');
    try {
      return await this.c.actors.ask(org, name, 'createQueue', {
        max_retries: body.max_retries ?? null,
        lease_duration_secs: body.lease_duration_secs ?? null,
        concurrency_per_key: body.concurrency_per_key ?? null,
        max_concurrency: body.max_concurrency ?? null,
        rate_limit: body.rate_limit ?? null,
      });
    } catch (err) {
      this.c.quotas.release(org, 'queues');
      throw err;
    }
  }

  pause(org: string, name: string, reason: string | null): Promise<QueueView> {
    return this.c.actors.ask(org, this.named(name), 'pause', { reason });
  }

  resume(org: string, name: string): Promise<QueueView> {
    return this.c.actors.ask(org, this.named(name), 'resume', {});
  }

  configure(org: string, name: string, config: Valid<typeof QueueConfigBody>): Promise<QueueView> {
    return this.c.actors.ask(org, this.named(name), 'configure', config);
  }

  delete(org: string, name: string): Promise<{ name: string; deleted: true }> {
    return this.c.actors.ask(org, this.named(name), 'deleteQueue', {});
  }

  /** A page of queues by name, with their job counts; one row more than `limit` says there is a next page. */
  async list(org: string, after: string | null, limit: number): Promise<Array<{ row: QueueRow; counts: StatusCounts }>> {
    const rows = await listQueues(this.c.store, org, after, limit);
    const counts = await queueCounts(this.c.store, org, rows.slice(0, limit).map((r) => r.name));
    return rows.map((row) => ({ row, counts: counts.get(row.name) ?? zeroCounts() }));
  }

  async get(org: string, name: string): Promise<{ row: QueueRow; counts: StatusCounts }> {
    const row = await this.row(org, name);
    return { row, counts: await jobStats(this.c.store, org, row.name) };
  }

  async stats(org: string, name: string): Promise<QueueStats> {
    const row = await this.row(org, name);
    const now = this.c.clock.now();
    const [counts, times, keys] = await Promise.all([
      jobStats(this.c.store, org, row.name),
      queueStats(this.c.store, org, row.name, new Date(now), THROUGHPUT_WINDOW_MS),
      busiestKeys(this.c.store, org, row.name, BUSIEST_KEYS),
    ]);
    const oldest = times.oldest_pending === null ? null : new Date(times.oldest_pending).getTime();
    return {
      name: row.name,
      paused: row.paused,
      ...counts,
      // Whole seconds; a job due "in the future" by clock skew counts as waiting 0 s, never negative.
      oldest_pending_age_seconds: oldest === null ? null : Math.max(0, Math.floor((now - oldest) / 1000)),
      throughput_last_minute: { completed: times.completed, failed: times.failed },
      busiest_keys: keys,
    };
  }

  /** 404 unless the queue exists (the queue's stats stream checks before it opens). */
  async mustExist(org: string, name: string): Promise<void> {
    await this.row(org, name);
  }

  /** The queue's row, or 404: an invalid name cannot name a queue. */
  private async row(org: string, name: string): Promise<QueueRow> {
    const row = queueNameValid(name) ? await getQueue(this.c.store, org, name) : null;
    if (!row) throw notFound('Queue');
    return row;
  }

  /** A name given in a path, or 404 for one no queue can have. */
  private named(name: string): string {
    if (!queueNameValid(name)) throw notFound(`Queue '${name}'`);
    return name;
  }
}
