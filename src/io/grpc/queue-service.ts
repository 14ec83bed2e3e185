// QueueService (gRPC adapter): the job RPCs over the use cases of src/app (jobs, queues). Requests are mapped
// to the REST bodies and checked by the same validators, so validation, defaults and quotas are one copy.
import type { ServerDuplexStream, ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import { idOf, isUuid } from '../../app/fields.js';
import type { EventBus } from '../../app/events.js';
import { ACK_MAX, CLAIM_MAX, ClaimBody, CompleteBody, EnqueueBody, FailBody, HeartbeatBody, ProgressBody } from '../../app/jobs.js';
import type { CompleteInput } from '../../actors/queue/queue-actor.js';
import { AppError, validationError } from '../../errors.js';
import { presentJob, presentTimes } from '../present.js';
import { assertCleanRequest, given, grpcError, OpenStream, unary, type GrpcContext } from './call.js';
import { storable } from '../input.js';
import { fromStruct, fromValue, toStruct, toValue, type PbStruct, type PbValue } from './proto.js';

/** How long one claim of a stream waits for jobs before asking again (bounds the work after a cancel). */
const POLL_MS = 5_000;

type Json = Record<string, unknown>;
const str = (v: unknown): string => (v === null || v === undefined ? '' : String(v));

/**
 * An absent string field: left out of the message rather than set to "", which protobufjs would encode anyway (a
 * reader sees "" either way, proto3's default). A claimed job has half a dozen such fields.
 */
const opt = (v: unknown): string | undefined => (v === null || v === undefined || v === '' ? undefined : String(v));

/** A job as the REST API shows it (presentJob), as a queue.v1.Job. */
export function toJob(j: Json): Json {
  return {
    id: j.id,
    queueName: j.queue_name,
    status: j.status,
    payload: toStruct((j.payload as Json | null) ?? {}),
    result: j.result === null || j.result === undefined ? null : toValue(j.result),
    priority: j.priority,
    retryCount: j.retry_count,
    maxRetries: j.max_retries,
    lastError: opt(j.last_error),
    tags: Object.fromEntries(Object.entries((j.tags as Json | null) ?? {}).map(([k, v]) => [k, str(v)])),
    idempotencyKey: opt(j.idempotency_key),
    timeoutSeconds: j.timeout_seconds,
    workerId: opt(j.assigned_worker_id),
    leaseId: opt(j.lease_id),
    leaseExpiresAt: opt(j.lease_expires_at),
    scheduledAt: opt(j.scheduled_at),
    createdAt: opt(j.created_at),
    startedAt: opt(j.started_at),
    completedAt: opt(j.completed_at),
    updatedAt: opt(j.updated_at),
    workflowId: opt(j.workflow_id),
    completionWebhook: opt(j.completion_webhook),
    concurrencyKey: opt(j.concurrency_key),
    progress: (j.progress as Json | null)?.progress ?? -1,
    progressMessage: opt((j.progress as Json | null)?.message),
  };
}

/** About how many bytes of payloads one JobBatch message carries before the next begins (a larger job goes alone). */
const JOB_BATCH_BYTES = 1 << 20;

/**
 * Claimed rows cut into runs of about JOB_BATCH_BYTES of payloads, so that a message stays far below a client's
 * usual receive limit (grpc-js: 4 MiB) whatever the batch size; most claims are one run.
 */
function bySize(rows: Json[]): Json[][] {
  const out: Json[][] = [];
  let run: Json[] = [];
  let bytes = 0;
  for (const row of rows) {
    const size = JSON.stringify(row.payload ?? null).length + ((row.last_error as string | null)?.length ?? 0) + 512;
    if (run.length > 0 && bytes + size > JOB_BATCH_BYTES) {
      out.push(run);
      run = [];
      bytes = 0;
    }
    run.push(row);
    bytes += size;
  }
  if (run.length > 0) out.push(run);
  return out;
}

/** Jobs a stream handed out and has not seen finished; the oldest are forgotten past this many. */
const HELD_MAX = 10_000;

/**
 * Tells a stream when a job it handed out is cancelled (job.cancelled of a job that was processing). A
 * subscriber of one organization hears that organization's events from every node (src/io/events/fan-out.ts),
 * so the cancel reaches the stream whichever node owns the queue. Returns the set to add sent jobs to, and the
 * unsubscribe.
 */
function watchCancels(events: EventBus, org: string, onCancel: (jobId: string) => void): { held: Set<string>; stop: () => void } {
  const held = new Set<string>();
  const stop = events.subscribe(
    org,
    (e) => {
      const id = e.data.job_id as string;
      if (held.delete(id)) onCancel(id);
    },
    // Cancels only: the organization's other events then cost this stream nothing, not even their envelope.
    (_org, event) => event === 'job.cancelled',
  );
  const add = held.add.bind(held);
  held.add = (id: string) => {
    if (held.size >= HELD_MAX) held.delete(held.values().next().value!);
    return add(id);
  };
  return { held, stop };
}

interface ProgressMsg {
  jobId: string;
  workerId: string;
  leaseId: string;
  progress: number;
  message: string;
  data: PbValue | null;
}

/** proto3 has no null: 0 means "no bound". */
const debounceOf = (d: Json) => ({ key: d.key, delay_ms: d.delayMs, max_delay_ms: d.maxDelayMs ? d.maxDelayMs : null });

interface ClaimMsg {
  queueName: string;
  workerId: string;
  batchSize: number;
  leaseDurationSecs: number;
  waitMs?: number;
  /** ProcessJobs: deliver the claimed jobs as JobBatch messages. */
  jobBatches?: boolean;
}
interface CompleteMsg {
  jobId: string;
  workerId: string;
  leaseId: string;
  result?: PbValue | null;
}
interface FailMsg {
  jobId: string;
  workerId: string;
  leaseId: string;
  error: string;
  retryable?: boolean | null;
}
interface RenewMsg {
  jobId: string;
  workerId: string;
  leaseId: string;
  leaseDurationSecs: number;
}

const claimBody = (r: ClaimMsg, waitMs: number) => ({
  queue_name: r.queueName,
  worker_id: r.workerId,
  limit: r.batchSize,
  lease_duration_secs: given(r.leaseDurationSecs),
  wait_ms: waitMs,
});

export function queueService(ctx: GrpcContext): UntypedServiceImplementation {
  const { jobs, queues } = ctx.app;
  const jobId = (id: string) => idOf('Job', id);

  /** A Complete request checked as the unary RPC checks it: the use case's input, or the refusal to answer. */
  const completeInput = (r: CompleteMsg): CompleteInput => {
    const body = CompleteBody({ worker_id: r.workerId, lease_id: r.leaseId, result: fromValue(r.result) });
    return { id: jobId(r.jobId), worker_id: body.worker_id, lease_id: body.lease_id ?? null, result: body.result ?? null };
  };
  const completed = (reply: { id: string; status: string; completed_at: number }): Json => {
    const shown = presentTimes(reply);
    return { jobId: shown.id, status: shown.status, completedAt: str(shown.completed_at) };
  };
  const complete = async (org: string, r: CompleteMsg): Promise<Json> => {
    const body = CompleteBody({ worker_id: r.workerId, lease_id: r.leaseId, result: fromValue(r.result) });
    return completed(await jobs.complete(org, jobId(r.jobId), body));
  };
  const fail = async (org: string, r: FailMsg): Promise<Json> => {
    const body = FailBody({ worker_id: r.workerId, lease_id: r.leaseId, error: r.error, retryable: r.retryable ?? undefined });
    const reply = presentTimes(await jobs.fail(org, jobId(r.jobId), body));
    return { jobId: reply.id, status: reply.status, retryCount: reply.retry_count, maxRetries: reply.max_retries, scheduledAt: str(reply.scheduled_at) };
  };
  const renew = async (org: string, r: RenewMsg): Promise<Json> => {
    const body = HeartbeatBody({ worker_id: r.workerId, lease_id: r.leaseId, lease_duration_secs: given(r.leaseDurationSecs) });
    const reply = presentTimes(await jobs.heartbeat(org, jobId(r.jobId), body));
    return { jobId: reply.id, leaseId: str(reply.lease_id), leaseExpiresAt: str(reply.lease_expires_at) };
  };
  const progress = async (org: string, r: ProgressMsg): Promise<Json> => {
    const body = ProgressBody({ worker_id: r.workerId, lease_id: given(r.leaseId), progress: r.progress, message: given(r.message), data: fromValue(r.data) });
    const reply = await jobs.progress(org, jobId(r.jobId), body);
    return { jobId: reply.id, progress: reply.progress, at: str(reply.at) };
  };
  const claim = async (org: string, r: ClaimMsg, waitMs: number) => jobs.claim(org, ClaimBody(claimBody(r, waitMs)));

  /**
   * Claims until `want` jobs went out (Infinity: for ever) or `more()` turns false, writing each job by `send`
   * while `open()`.
   */
  const pump = async (
    org: string,
    r: ClaimMsg,
    want: number,
    open: () => boolean,
    send: (job: Json) => Promise<void>,
    more = open,
    sendBatch?: (jobs: Json[]) => Promise<void>,
  ) => {
    let left = want;
    while (more() && left > 0) {
      const claimed = await claim(org, { ...r, batchSize: Math.min(r.batchSize, left) }, POLL_MS);
      // Jobs claimed after the client left go back to the queue at once.
      const unsent: Record<string, unknown>[] = [];
      if (sendBatch) {
        for (const part of bySize(claimed)) {
          if (open()) await sendBatch(part.map((j) => toJob(presentJob(j))));
          else unsent.push(...part);
        }
      } else {
        for (const j of claimed) {
          if (open()) await send(toJob(presentJob(j)));
          else unsent.push(j);
        }
      }
      if (unsent.length > 0) jobs.unclaim(org, unsent);
      left -= claimed.length;
    }
  };

  /** A cancelled job is told as a Job with status "cancelled" (the stream carries only Job messages). */
  const streamJobs = (call: ServerWritableStream<ClaimMsg, Json>) => {
    const stream = new OpenStream(ctx, call);
    let stop = () => {};
    call.on('close', () => stop());
    stream
      .authenticate('jobs:write')
      .then((org) => {
        assertCleanRequest(ctx, call.request);
        const w = watchCancels(ctx.app.ctx.events, org, (id) => {
          if (stream.open) void stream.write({ id, queueName: call.request.queueName, status: 'cancelled', progress: -1 }).catch(() => {});
        });
        stop = w.stop;
        return pump(org, call.request, Infinity, () => stream.open, (job) => {
          w.held.add(job.id as string);
          return stream.write(job);
        });
      })
      .catch((err) => stream.fail(err))
      .finally(() => stop());
  };

  /**
   * Up: {ref, claim | complete | completes | fail | renew}. Down: claimed jobs, and an Ack {ref, jobId, code, message,
   * reply} for each complete, fail and renew (and for a claim that was refused). A claim with jobBatches gets its
   * jobs as JobBatch messages, and a CompleteBatch (completes) its acks as one AckBatch: per message, grpc-js and
   * protobufjs cost both ends more than a small job's own fields do. The completes that arrive in
   * the same turn go to the queue actors together (one ask per queue), each answered by its own ack as if alone.
   * A claim that arrives behind completes not yet asked of their actors is asked right after them (as
   * jobs.completeMany asks its claim): an actor takes its messages in order, so the claim finds the slots they
   * free (max_concurrency, concurrency keys) and usually rides in their commit, which lets a client claim for
   * those slots without waiting for the acks. When the client half-closes, claims stop after their poll in
   * flight, what is in flight is answered, and the stream ends (OK).
   */
  const processJobs = (call: ServerDuplexStream<{ ref: string; kind?: string } & Json, Json>) => {
    const stream = new OpenStream(ctx, call);
    /** False once the client half-closed: claims stop asking (after the poll in flight). */
    let claiming = true;
    const pending = new Set<Promise<void>>();
    const org = stream.authenticate('jobs:write');
    org.catch((err) => stream.fail(err));
    const cancels = org.then((o) => {
      const w = watchCancels(ctx.app.ctx.events, o, (jobId) => {
        if (stream.open) void stream.write({ cancelled: { jobId } }).catch(() => {});
      });
      call.on('close', w.stop);
      if (!stream.open) w.stop();
      return w;
    });
    cancels.catch(() => {});
    const ackOf = (ref: string, jobId: string, reply: Json | null, err?: unknown): Json => {
      const e = err === undefined ? null : grpcError(err, ctx.log);
      return { ref, jobId, code: e?.code ?? 0, message: e?.details ?? '', ...(reply ?? {}) };
    };
    const ack = async (ref: string, jobId: string, reply: Json | null, err?: unknown): Promise<void> => {
      if (!stream.open) return;
      await stream.write({ ack: ackOf(ref, jobId, reply, err) });
    };
    /**
     * Completes go to the queue actors in batches (jobs.completeEach: one ask per queue for the whole batch),
     * each still answered by its own ack. grpc-js hands a stream's messages over one at a time, so a batch is
     * what arrived in the same turn as the first, plus, while a batch is in flight, everything that arrives
     * until it is answered (as a group commit gathers): the first complete waits for nothing, and a busy stream
     * sends one ask per round trip instead of one per message.
     */
    /** `answer`: an item of a CompleteBatch, whose ack goes out with its batch's (AckBatch) rather than alone. */
    let completes: Array<{ ref: string; jobId: string; input: CompleteInput; done: () => void; answer?: (ack: Json) => void }> = [];
    /** Called once the completes queued (not yet taken by a flush) have been asked of their actors. */
    let queuedAsked = () => {};
    /** Resolves once every complete received so far has been asked of its actor; null once they have been. */
    let completesAsked: Promise<void> | null = null;
    let flushing = false;
    let flushScheduled = false;
    const flushCompletes = async (o: string): Promise<void> => {
      flushScheduled = false;
      if (flushing) return;
      flushing = true;
      try {
        while (completes.length > 0) {
          const batch = completes;
          const batchAsked = queuedAsked;
          completes = [];
          const asks: Promise<void>[] = [];
          const answers = Array.from({ length: Math.ceil(batch.length / ACK_MAX) }, (_, c) => {
            let asked!: () => void;
            asks.push(new Promise<void>((resolve) => (asked = resolve)));
            return completeBatch(o, batch.slice(c * ACK_MAX, (c + 1) * ACK_MAX), asked);
          });
          void Promise.all(asks).then(batchAsked);
          await Promise.all(answers);
        }
      } finally {
        flushing = false;
      }
    };
    /** `asked` is called once the chunk's asks have been sent (or it failed before sending them). */
    const completeBatch = async (o: string, chunk: typeof completes, asked: () => void): Promise<void> => {
      try {
        const outcomes = await jobs.completeEach(o, chunk.map((c) => c.input), asked);
        const { held } = await cancels;
        await Promise.all(
          chunk.map((c, k) => {
            const out = outcomes[k]!;
            if ('error' in out) return answer(c, null, out.error);
            // A finished job can no longer be cancelled: stop watching it.
            held.delete(out.id);
            return answer(c, { complete: completed({ id: out.id, status: 'completed', completed_at: out.completed_at }) });
          }),
        );
      } catch (err) {
        await Promise.all(chunk.map((c) => answer(c, null, err)));
      } finally {
        asked();
        for (const c of chunk) c.done();
      }
    };
    const answer = (c: (typeof completes)[number], reply: Json | null, err?: unknown): Promise<void> => {
      if (!c.answer) return ack(c.ref, c.jobId, reply, err);
      c.answer(ackOf(c.ref, c.jobId, reply, err));
      return Promise.resolve();
    };
    const queueComplete = (o: string, item: (typeof completes)[number]): void => {
      if (completes.length === 0) {
        const asked = new Promise<void>((resolve) => (queuedAsked = resolve));
        completesAsked = asked;
        void asked.then(() => {
          if (completesAsked === asked) completesAsked = null;
        });
      }
      completes.push(item);
      if (!flushing && !flushScheduled) {
        flushScheduled = true;
        setImmediate(() => void flushCompletes(o));
      }
    };
    const batchComplete = (o: string, ref: string, r: CompleteMsg): Promise<void> => {
      let input: CompleteInput;
      try {
        input = completeInput(r);
      } catch (err) {
        return ack(ref, r.jobId, null, err);
      }
      return new Promise<void>((done) => queueComplete(o, { ref, jobId: r.jobId, input, done }));
    };
    /**
     * A CompleteBatch: its items join the completes as if each had come alone (the same batching, the same order
     * with the claims behind them), and their acks go out together, in the items' order, as one AckBatch.
     */
    const completeItems = (o: string, ref: string, items: Array<{ ref: string; complete: CompleteMsg | null }>): Promise<void> => {
      if (!Array.isArray(items) || items.length === 0) return Promise.resolve();
      if (items.length > ACK_MAX) return ack(ref, '', null, validationError([{ field: 'completes.items', message: `at most ${ACK_MAX} per message` }]));
      const acks: Json[] = new Array(items.length);
      let left = items.length;
      return new Promise<void>((done) => {
        const settle = (k: number, a: Json) => {
          acks[k] = a;
          if (--left > 0) return;
          if (!stream.open) return done();
          void stream.write({ acks: { acks, ref } }).then(done, done);
        };
        items.forEach((item, k) => {
          const itemRef = typeof item.ref === 'string' && storable(item.ref) ? item.ref : '';
          const r = item.complete;
          if (!r) return settle(k, ackOf(itemRef, '', null, validationError([{ field: 'complete', message: 'is required' }])));
          let input: CompleteInput;
          try {
            // Each item is checked as a message of its own would be, so a batch refuses only its bad items.
            assertCleanRequest(ctx, r);
            input = completeInput(r);
          } catch (err) {
            return settle(k, ackOf(itemRef, typeof r.jobId === 'string' ? r.jobId : '', null, err));
          }
          queueComplete(o, { ref: itemRef, jobId: r.jobId, input, done: () => {}, answer: (a) => settle(k, a) });
        });
      });
    };
    const handle = async (o: string, m: { ref: string; kind?: string } & Json): Promise<void> => {
      const ref = m.ref ?? '';
      try {
        // A CompleteBatch's items are checked one by one (completeItems).
        assertCleanRequest(ctx, m.kind === 'completes' ? { ref } : m);
      } catch (err) {
        return ack(typeof ref === 'string' && storable(ref) ? ref : '', '', null, err);
      }
      if (m.kind === 'claim') {
        const r = m.claim as ClaimMsg;
        // Checked before the first job can go out, so a bad claim is refused whole.
        if (!Number.isInteger(r.batchSize) || r.batchSize < 1 || r.batchSize > CLAIM_MAX) {
          return ack(ref, '', null, validationError([{ field: 'batchSize', message: `must be from 1 to ${CLAIM_MAX}` }]));
        }
        // The completes received before it are asked first (see above).
        const behind = completesAsked;
        const more = () => stream.open && claiming;
        const { held } = await cancels;
        if (behind) await behind;
        const send = (job: Json) => {
          held.add(job.id as string);
          return stream.write({ job });
        };
        const sendBatch = r.jobBatches
          ? (batch: Json[]) => {
              for (const job of batch) held.add(job.id as string);
              return stream.write({ jobs: { jobs: batch } });
            }
          : undefined;
        return pump(o, r, r.batchSize, () => stream.open, send, more, sendBatch).catch((err) => ack(ref, '', null, err));
      }
      if (m.kind === 'complete' && m.complete) return batchComplete(o, ref, m.complete as CompleteMsg);
      if (m.kind === 'completes' && m.completes) return completeItems(o, ref, ((m.completes as Json).items as never) ?? []);
      const ops = { complete, fail, renew, progress } as Record<string, (org: string, r: never) => Promise<Json>>;
      const op = m.kind === undefined ? undefined : ops[m.kind];
      if (!op) return ack(ref, '', null, validationError([{ field: 'kind', message: 'one of claim, complete, completes, fail, renew, progress is required' }]));
      const r = m[m.kind!] as { jobId: string };
      try {
        const reply = await op(o, r as never);
        // A finished job can no longer be cancelled: stop watching it.
        if (m.kind === 'complete' || m.kind === 'fail') (await cancels).held.delete(reply.jobId as string);
        await ack(ref, r.jobId, { [m.kind!]: reply });
      } catch (err) {
        await ack(ref, r.jobId, null, err);
      }
    };
    call.on('data', (m: { ref: string; kind?: string } & Json) => {
      const p = org.then((o) => handle(o, m)).catch(() => {});
      pending.add(p);
      void p.finally(() => pending.delete(p));
    });
    call.on('end', () => {
      claiming = false;
      void Promise.all([...pending]).then(() => stream.end());
    });
  };

  return {
    Enqueue: unary(ctx, 'jobs:write', async (org, r: Json) => {
      const { created, job } = await jobs.enqueue(org, EnqueueBody({
        queue_name: r.queueName,
        payload: fromStruct(r.payload as PbStruct | null),
        idempotency_key: given(r.idempotencyKey as string),
        priority: given(r.priority as number),
        scheduled_at: given(r.scheduledAt as string),
        max_retries: given(r.maxRetries as number),
        timeout_seconds: given(r.timeoutSeconds as number),
        tags: r.tags,
        completion_webhook: given(r.completionWebhook as string),
        completion_webhook_secret: given(r.completionWebhookSecret as string),
        concurrency_key: given(r.concurrencyKey as string),
        idempotency_ttl_secs: given(r.idempotencyTtlSecs as number),
        debounce: r.debounce ? debounceOf(r.debounce as Json) : undefined,
      }));
      return { job: toJob(presentJob(job)), created };
    }),
    Dequeue: unary(ctx, 'jobs:write', async (org, r: ClaimMsg) => ({ jobs: (await claim(org, r, r.waitMs ?? 0)).map((j) => toJob(presentJob(j))) })),
    Complete: unary(ctx, 'jobs:write', complete),
    Fail: unary(ctx, 'jobs:write', fail),
    RenewLease: unary(ctx, 'jobs:write', renew),
    GetJob: unary(ctx, 'jobs:read', async (org, r: { jobId: string }) => {
      if (!isUuid(r.jobId)) return { job: {} };
      try {
        return { job: toJob(presentJob(await jobs.get(org, r.jobId.toLowerCase()))) };
      } catch (err) {
        if (err instanceof AppError && err.code === 'NOT_FOUND') return { job: {} };
        throw err;
      }
    }),
    GetQueueStats: unary(ctx, 'queues:read', async (org, r: { queueName: string }) => {
      if (!r.queueName) throw validationError([{ field: 'queueName', message: 'is required' }]);
      const st = await queues.stats(org, r.queueName);
      const throughput = st.throughput_last_minute;
      const n = (k: 'pending' | 'scheduled' | 'processing' | 'completed' | 'deadletter' | 'cancelled') => String(st[k]);
      return {
        queueName: st.name,
        paused: st.paused,
        depth: String(st.pending + st.scheduled),
        pending: n('pending'),
        scheduled: n('scheduled'),
        processing: n('processing'),
        completed: n('completed'),
        deadletter: n('deadletter'),
        cancelled: n('cancelled'),
        oldestPendingAgeSeconds: String(st.oldest_pending_age_seconds ?? -1),
        completedLastMinute: String(throughput.completed),
        failedLastMinute: String(throughput.failed),
        busiestKeys: st.busiest_keys.map((k) => ({ key: k.key, processing: String(k.processing), waiting: String(k.waiting) })),
      };
    }),
    ExplainJob: unary(ctx, 'jobs:read', async (org, r: { jobId: string }) => {
      const e = await jobs.explain(org, jobId(r.jobId));
      return {
        id: e.id,
        queueName: e.queue_name,
        status: e.status,
        running: e.running,
        // Each reason carries its own data: a Struct with the REST object's keys.
        reasons: e.reasons.map(({ reason, message, ...data }) => ({ reason, message, data: toStruct(data) })),
        at: str(e.at),
      };
    }),
    StreamJobs: streamJobs,
    ProcessJobs: processJobs,
  };
}
