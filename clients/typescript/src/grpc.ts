// The gRPC transport of the worker: one QueueService.ProcessJobs stream per worker (proto/queue/v1/queue.proto,
// a copy of the service's contract shipped in this package).
//
// The protocol (the service's docs/grpc.md): the client sends `{ref, claim}` to ask for up to `batchSize` more
// jobs (claims add up; the service long-polls until they are delivered), and `{ref, complete | fail | renew}`;
// the service sends claimed jobs as `{job}` and answers every complete / fail / renew (and a refused claim)
// with `{ack: {ref, jobId, code, message, reply}}`. Claims ask for `jobBatches`: a service that has them sends the
// jobs of a claim together (`{jobs: {jobs}}`), and on a stream whose service has so shown it has them, the
// completes of one turn go as `{ref, completes: {items}}` (cut at 500 items or ~1 MiB of results), answered by one
// `{acks: {acks, ref}}`; a batch refused whole (a service that does not take them) is sent again item by item, and
// no other goes on that stream. So the demand the worker has outstanding is the sum of its
// claims minus the jobs received; it asks for more when the free slots beyond that are worth a claim (a quarter
// of the concurrency, any number when no handler runs, or whatever is free after a short linger), so that one
// claim message carries several jobs instead of one per freed slot.
//
// Claiming ahead of the acks: the service asks a claim of the queue's actor after the completes that came before
// it on the stream, so the claim finds the slots they free and usually shares their commit. The slots of the
// completes written and not yet acknowledged therefore count as free: the claim written in the turn after they
// go out asks for them too, one round trip per cycle instead of two (as the REST worker's acknowledgement that
// claims). Its jobs may come before those acks, so the jobs held may exceed concurrency + prefetch by the
// completes still in flight, until their acks; handlers never exceed the concurrency. Fails do not count.
//
// Stopping: a half-close would still let the service's poll in flight claim jobs for us, so the stream is
// cancelled instead (jobs the service claims after a cancel are put back at once). Acks in flight are waited
// for first (within close()'s grace, and 5 s at most); outcomes reported after the cancel, and after a broken
// stream, go by the unary RPCs. A broken stream is reopened with backoff. A complete or fail sent again so may
// find its job completed (or failed) by the stream's own unacknowledged attempt and be answered LEASE_EXPIRED: it
// is then read back, by the rules of acks.ts.
//
// Unary calls have a deadline, the client's `timeoutMs` (REST's per-attempt timeout): a connection that is up but
// silent (a middlebox that drops what the service sends) would otherwise hold a report, and close(), forever. A call
// past its deadline fails as a REST request past its timeout does (ConnectionError, code TIMEOUT), and is retried
// as REST retries a report (http.ts: transient failures, `retry.retries` times, the same backoff, the client's
// `onRetry` told of each retry with the call's HTTP/2 path, e.g. POST /queue.v1.QueueService/Fail). So that
// close() is bounded, the calls still unanswered when its grace ends are cancelled (endReports), and a job given
// back at close is retried only within the bound close() gives it (docs: clients/typescript/README.md).
// Within its deadline a call waits for the channel to connect (waitForReady): after a failed connection attempt
// grpc-js waits out a reconnect backoff (1 s, growing), and a call not waiting would fail at once ("No connection
// established"), so a report re-sent just after an outage would spend its retries before the node is reachable.
// The stream does not wait: it fails and is reopened with its own backoff. Calls still waiting at close() end
// with the channel.
//
// Keepalive: the acks and jobs awaited on the stream have no deadline (a stream lives as long as the worker), so
// the channel pings the service every `grpc.keepaliveMs` and drops the connection when a ping goes unanswered for
// `grpc.keepaliveTimeoutMs`. The stream then fails UNAVAILABLE, and the broken-stream path above takes over. Pings
// go only while a call is open (the stream, always, while the worker runs): an idle channel has nothing to watch,
// and servers that police pings (grpc-go's default policy) refuse them without calls.
//
// @grpc/grpc-js and @grpc/proto-loader are optional peer dependencies, loaded only when this transport is used.
import { fileURLToPath } from 'node:url';
import type * as GrpcJs from '@grpc/grpc-js';
import { ERROR_CLASSES, LeaseExpiredError, SluiceError, UnknownApiError, ConnectionError } from './errors.js';
import { backoff, sleep } from './http.js';
import type { Job, JobStatus } from './types.js';
import { CLAIM_LINGER_MS, CLAIM_MAX, CLAIM_MAX_BEFORE, claimThreshold } from './claiming.js';
import { ACK_MAX_ITEMS, failEcho, resultBytes } from './acks.js';
import type { Transport, TransportHost } from './worker.js';

const PROTO_PATH = fileURLToPath(new URL('../proto/queue/v1/queue.proto', import.meta.url));
const LOADER_OPTIONS = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true } as const;
/** How long a stop waits for acks in flight before cancelling the stream anyway (less if close()'s grace ends). */
const ACK_DRAIN_MS = 5_000;
/** Defaults of `grpc.keepaliveMs` and `grpc.keepaliveTimeoutMs`: a silent connection is dropped within ~30 s. */
export const KEEPALIVE_MS = 20_000;
export const KEEPALIVE_TIMEOUT_MS = 10_000;
/** Results' JSON per CompleteBatch, roughly: a message stays far below the service's 4 MiB receive limit. */
const COMPLETES_MAX_BYTES = 1 << 20;

type Pb = Record<string, unknown>;
type Callback = (err: GrpcJs.ServiceError | null, res: Pb) => void;
interface QueueClient extends GrpcJs.Client {
  ProcessJobs(md: GrpcJs.Metadata): GrpcJs.ClientDuplexStream<Pb, Pb>;
  Complete(req: Pb, md: GrpcJs.Metadata, opts: GrpcJs.CallOptions, cb: Callback): GrpcJs.ClientUnaryCall;
  Fail(req: Pb, md: GrpcJs.Metadata, opts: GrpcJs.CallOptions, cb: Callback): GrpcJs.ClientUnaryCall;
  RenewLease(req: Pb, md: GrpcJs.Metadata, opts: GrpcJs.CallOptions, cb: Callback): GrpcJs.ClientUnaryCall;
}

interface Ack {
  resolve: (reply: Pb) => void;
  reject: (err: unknown) => void;
  /** The same operation as a unary call, if the stream breaks before the ack. */
  unary: () => Promise<Pb>;
  /** A complete: its job's slot is counted free (`freeing`) until this ack. */
  frees: boolean;
}

type QueueClientClass = new (address: string, creds: GrpcJs.ChannelCredentials, options?: GrpcJs.ChannelOptions) => QueueClient;

async function loadGrpc(): Promise<{ grpc: typeof GrpcJs; QueueService: QueueClientClass }> {
  let grpc: typeof GrpcJs;
  let loader: typeof import('@grpc/proto-loader');
  try {
    grpc = await import('@grpc/grpc-js');
    loader = await import('@grpc/proto-loader');
  } catch (err) {
    throw new Error("Worker: transport 'grpc' needs the packages @grpc/grpc-js and @grpc/proto-loader (npm install @grpc/grpc-js @grpc/proto-loader)", {
      cause: err,
    });
  }
  const root = grpc.loadPackageDefinition(loader.loadSync(PROTO_PATH, LOADER_OPTIONS)) as unknown as {
    queue: { v1: { QueueService: QueueClientClass } };
  };
  return { grpc, QueueService: root.queue.v1.QueueService };
}

export class GrpcTransport implements Transport {
  private stream: GrpcJs.ClientDuplexStream<Pb, Pb> | null = null;
  /** Jobs asked for and not received yet on the current stream. */
  private outstanding = 0;
  /** Completes written on the current stream and not acknowledged yet: their slots are claimed ahead. */
  private freeing = 0;
  private readonly acks = new Map<string, Ack>();
  private nextRef = 0;
  private claiming = true;
  private failures = 0;
  private reopening: Promise<void> | null = null;
  private readonly stopCtl = new AbortController();
  /**
   * Aborts the reports still unanswered (unary calls, their waits between attempts, their read-backs) when
   * close()'s grace ends, or the transport is closed (its channel gone).
   */
  private readonly reports = new AbortController();
  private wakeScheduled = false;
  private linger: NodeJS.Timeout | null = null;
  private readonly threshold: number;
  /** Jobs one claim asks for at most: CLAIM_MAX, or CLAIM_MAX_BEFORE once a service refused more. */
  private claimMax = CLAIM_MAX;
  /**
   * The current stream's service sends JobBatch messages (its claims ask for them), so it also takes CompleteBatch:
   * completes then go out together. Learnt anew on every stream (a rolling upgrade may put an older node behind it).
   */
  private batches = false;
  /** The current stream's service refused a CompleteBatch whole: no more of them on it. */
  private batchesRefused = false;
  /** Completes of this turn waiting to go out as CompleteBatch messages on `this.stream` (`bytes`: their result's JSON). */
  private completesOut: Array<{ ref: string; complete: Pb; bytes: number }> = [];
  private completesScheduled = false;
  /** The items of each CompleteBatch sent and not answered yet, by the message's ref. */
  private readonly batchesOut = new Map<string, Array<{ ref: string; complete: Pb }>>();

  private constructor(
    private readonly host: TransportHost,
    private readonly grpc: typeof GrpcJs,
    private readonly client: QueueClient,
    private readonly apiKey: string,
  ) {
    this.threshold = Math.min(100, claimThreshold(host.concurrency));
  }

  static async create(host: TransportHost): Promise<GrpcTransport> {
    const apiKey = host.client.http.apiKey;
    if (!apiKey) throw new TypeError("Worker: transport 'grpc' needs an API key");
    if (apiKey.startsWith('eyJ')) throw new TypeError("Worker: transport 'grpc' takes an API key, not a JWT access token");
    const { grpc, QueueService } = await loadGrpc();
    const base = new URL(host.client.url);
    const address = host.grpc?.address ?? `${base.hostname.includes(':') ? `[${base.hostname}]` : base.hostname}:50051`;
    const tls = host.grpc?.tls ?? base.protocol === 'https:';
    const keepaliveMs = host.grpc?.keepaliveMs ?? KEEPALIVE_MS;
    const options: GrpcJs.ChannelOptions =
      keepaliveMs > 0
        ? { 'grpc.keepalive_time_ms': keepaliveMs, 'grpc.keepalive_timeout_ms': host.grpc?.keepaliveTimeoutMs ?? KEEPALIVE_TIMEOUT_MS }
        : {};
    const client = new QueueService(address, tls ? grpc.credentials.createSsl() : grpc.credentials.createInsecure(), options);
    return new GrpcTransport(host, grpc, client, apiKey);
  }

  /** `waitForReady`: the call waits for the channel to connect (up to its deadline) instead of failing at once. */
  private metadata(waitForReady = false): GrpcJs.Metadata {
    const md = new this.grpc.Metadata({ waitForReady });
    md.set('x-api-key', this.apiKey);
    return md;
  }

  start(): void {
    this.open();
  }

  private open(): void {
    const stream = this.client.ProcessJobs(this.metadata());
    this.stream = stream;
    this.outstanding = 0;
    this.batches = false;
    this.batchesRefused = false;
    this.batchesOut.clear();
    stream.on('data', (msg: Pb) => {
      if (stream !== this.stream) return;
      if (msg.job) {
        this.failures = 0;
        this.outstanding = Math.max(0, this.outstanding - 1);
        this.host.dispatch(fromPbJob(msg.job as Pb));
      } else if (msg.jobs) {
        this.failures = 0;
        this.batches = !this.batchesRefused;
        const jobs = ((msg.jobs as Pb).jobs as Pb[] | undefined) ?? [];
        this.outstanding = Math.max(0, this.outstanding - jobs.length);
        for (const job of jobs) this.host.dispatch(fromPbJob(job));
      } else if (msg.ack) {
        this.onAck(msg.ack as Pb);
      } else if (msg.acks) {
        this.batchesOut.delete(String((msg.acks as Pb).ref));
        for (const ack of ((msg.acks as Pb).acks as Pb[] | undefined) ?? []) this.onAck(ack);
      } else if (msg.cancelled) {
        this.host.cancelled(String((msg.cancelled as Pb).jobId));
      }
    });
    stream.on('error', (err: GrpcJs.ServiceError) => this.broken(stream, err));
    stream.on('end', () => this.broken(stream, null));
    this.wake();
  }

  private onAck(ack: Pb): void {
    const items = this.batchesOut.get(String(ack.ref));
    if (items) {
      // The CompleteBatch was refused as a whole (a service that does not take them, or the message itself):
      // its items go again one by one, as every later complete on this stream does.
      this.batchesOut.delete(String(ack.ref));
      this.batches = false;
      this.batchesRefused = true;
      for (const item of items) if (this.acks.has(item.ref)) this.stream?.write(item);
      return;
    }
    const pending = this.acks.get(String(ack.ref));
    if (pending) this.acks.delete(String(ack.ref));
    // Before its job leaves the worker (as the report settles), so that its slot is never counted twice.
    if (pending?.frees) this.freeing--;
    const code = Number(ack.code ?? 0);
    if (code !== 0) {
      const err = grpcError(code, String(ack.message ?? ''));
      if (pending) pending.reject(err);
      else if (code === 3 && /\bbatchSize\b/.test(String(ack.message ?? '')) && this.claimMax > CLAIM_MAX_BEFORE) {
        // A service from before claims of CLAIM_MAX refused the size, having claimed nothing: ask for less.
        this.claimMax = CLAIM_MAX_BEFORE;
        this.outstanding = 0;
        this.wake();
      } else {
        // A refused claim: its demand will never be served.
        this.outstanding = 0;
        this.host.reportError(err, 'claim');
        if (!this.host.stopping) void sleep(backoff(this.failures++), this.stopCtl.signal).then(() => this.wake(), () => {});
      }
      return;
    }
    pending?.resolve(ack);
  }

  /** The stream ended or failed: what waited for an ack goes by unary calls; reopen unless stopping. */
  private broken(stream: GrpcJs.ClientDuplexStream<Pb, Pb>, err: GrpcJs.ServiceError | null): void {
    if (stream !== this.stream) return;
    this.stream = null;
    // Its claims are gone, and its completes go by unary calls: their slots free as those answer.
    this.outstanding = 0;
    this.freeing = 0;
    const waiting = [...this.acks.values()];
    this.acks.clear();
    for (const a of waiting) a.unary().then(a.resolve, a.reject);
    if (!this.claiming || this.host.stopping) return;
    if (err && err.code !== this.grpc.status.CANCELLED) this.host.reportError(grpcError(err.code, err.details ?? err.message), 'gRPC stream');
    this.reopening = sleep(backoff(this.failures++), this.stopCtl.signal).then(
      () => {
        this.reopening = null;
        if (this.claiming && !this.host.stopping) this.open();
      },
      () => {},
    );
  }

  /**
   * A slot became free, is about to (a complete went out), or the stream opened. Looked at after the current
   * turn, so that the completes (and the acks) of one turn are counted as one demand.
   */
  wake(): void {
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      this.ask(false);
    });
  }

  /**
   * Asks for the free slots not asked for yet, those of the completes in flight included, once they are worth a
   * claim: a quarter of the concurrency, or any number when no handler runs (nor any report but those completes)
   * and nothing is asked for, or whatever is free after CLAIM_LINGER_MS.
   */
  private ask(lingered: boolean): void {
    if (!this.stream || !this.claiming || this.host.stopping) return;
    // The completes of this turn go out first: the service asks their actors before the claim, which then gets
    // the slots they free.
    this.sendCompletes();
    const want = Math.min(this.claimMax, this.host.free() + this.freeing - this.outstanding);
    if (want <= 0) return;
    if (!lingered && want < this.threshold && (this.host.active > this.freeing || this.outstanding > 0)) {
      this.linger ??= setTimeout(() => {
        this.linger = null;
        this.ask(true);
      }, CLAIM_LINGER_MS);
      return;
    }
    clearTimeout(this.linger ?? undefined);
    this.linger = null;
    this.outstanding += want;
    this.stream.write({
      ref: `c${this.nextRef++}`,
      claim: {
        queueName: this.host.queue,
        workerId: this.host.workerId,
        batchSize: want,
        leaseDurationSecs: this.host.leaseSeconds ?? 0,
        waitMs: this.host.pollWaitMs,
        jobBatches: true,
      },
    });
  }

  async stopClaiming(grace?: AbortSignal): Promise<void> {
    if (!this.claiming) return;
    this.claiming = false;
    this.stopCtl.abort();
    clearTimeout(this.linger ?? undefined);
    this.linger = null;
    const stream = this.stream;
    if (!stream) return;
    const deadline = Date.now() + ACK_DRAIN_MS;
    while (this.acks.size > 0 && Date.now() < deadline && !grace?.aborted && this.stream === stream) await sleep(20);
    if (this.stream === stream) {
      this.stream = null;
      for (const a of this.acks.values()) a.unary().then(a.resolve, a.reject);
      this.acks.clear();
      stream.cancel();
    }
  }

  /** Over the stream while it is open and claiming, else as a unary call; `resend` if the stream owes its ack. */
  private op(kind: 'complete' | 'fail' | 'renew' | 'progress', body: Pb, unary: () => Promise<Pb>, resend = unary, bytes = 0): Promise<Pb> {
    const stream = this.stream;
    if (!stream || !this.claiming) return unary();
    const ref = `${kind[0]}${this.nextRef++}`;
    return new Promise<Pb>((resolve, reject) => {
      const frees = kind === 'complete';
      this.acks.set(ref, { resolve, reject, unary: resend, frees });
      if (frees && this.batches) {
        this.completesOut.push({ ref, complete: body, bytes });
        if (!this.completesScheduled) {
          this.completesScheduled = true;
          setImmediate(() => this.sendCompletes());
        }
      } else stream.write({ ref, [kind]: body });
      if (frees) {
        this.freeing++;
        this.wake();
      }
    });
  }

  /**
   * The completes queued in this turn, as one CompleteBatch (one alone as itself). Those queued for a stream that
   * has since broken or stopped are no longer awaited on a stream (their reports went to unary calls): dropped.
   */
  private sendCompletes(): void {
    this.completesScheduled = false;
    const stream = this.stream;
    const queued = this.completesOut.filter((i) => this.acks.has(i.ref));
    this.completesOut = [];
    if (!stream) return;
    // Cut at ACK_MAX_ITEMS items (the service's bound per message) or about COMPLETES_MAX_BYTES of results.
    for (let i = 0; i < queued.length; ) {
      let j = i;
      let bytes = 0;
      while (j < queued.length && j - i < ACK_MAX_ITEMS && (j === i || bytes + queued[j]!.bytes <= COMPLETES_MAX_BYTES)) bytes += queued[j++]!.bytes;
      const items = queued.slice(i, j).map(({ ref, complete }) => ({ ref, complete }));
      i = j;
      if (items.length === 1) {
        stream.write(items[0]!);
        continue;
      }
      const ref = `b${this.nextRef++}`;
      this.batchesOut.set(ref, items);
      stream.write({ ref, completes: { items } });
    }
  }

  /**
   * One attempt, bounded by the client's timeoutMs (its REST per-attempt timeout), within which it waits for the
   * channel to connect rather than fail at once during grpc-js's reconnect backoff (see the top of this file).
   * `signal` cancels it, and it fails with the signal's reason.
   */
  private call(method: 'Complete' | 'Fail' | 'RenewLease', req: Pb, signal: AbortSignal): Promise<Pb> {
    const ms = this.host.client.http.timeoutMs;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const call = this.client[method](req, this.metadata(true), { deadline: Date.now() + ms }, (err, res) => {
        signal.removeEventListener('abort', cancel);
        if (!err) resolve(res);
        else if (signal.aborted) reject(signal.reason);
        else if (err.code === this.grpc.status.DEADLINE_EXCEEDED) {
          reject(new ConnectionError(`gRPC ${method}: timed out after ${ms} ms`, { cause: err, timedOut: true }));
        } else reject(grpcError(err.code, err.details ?? err.message));
      });
      const cancel = () => call.cancel();
      signal.addEventListener('abort', cancel, { once: true });
    });
  }

  /**
   * A unary call retried as REST retries a report (HttpCore's rule, the client's `retry` options and its `onRetry`
   * hook, told the call's HTTP/2 method and path). `resent` hears of each attempt after the first but those after
   * a RATE_LIMITED (refused unseen): an earlier one may have done the work. `signal` ends it (with its reason),
   * the transport's reports signal by default.
   */
  private async unary(method: 'Complete' | 'Fail' | 'RenewLease', req: Pb, opts: { signal?: AbortSignal; resent?: () => void } = {}): Promise<Pb> {
    const http = this.host.client.http;
    const signal = opts.signal ?? this.reports.signal;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.call(method, req, signal);
      } catch (err) {
        if (signal.aborted || !(err instanceof SluiceError) || attempt >= http.retries) throw err;
        const delay = http.retryDelay(err, attempt);
        if (delay === null) throw err;
        http.onRetry?.({ method: 'POST', path: `/queue.v1.QueueService/${method}`, attempt: attempt + 1, delayMs: delay, error: err });
        if (err.code !== 'RATE_LIMITED') opts.resent?.();
        await sleep(delay, signal);
      }
    }
  }

  async complete(job: Job<never>, result: unknown, bytes: number = resultBytes(result)): Promise<void> {
    const req = { jobId: job.id, workerId: this.host.workerId, leaseId: job.lease_id ?? '', result: toValue(result) };
    // Sent more than once (the stream's attempt, or a retry), a LEASE_EXPIRED may be the echo of our own success.
    let resent = false;
    const once = () => this.unary('Complete', req, { resent: () => (resent = true) }).catch((err) => (resent ? this.echo(job, err) : Promise.reject(err)));
    await this.op(
      'complete',
      req,
      once,
      () => {
        resent = true;
        return once();
      },
      bytes,
    );
  }

  /**
   * A complete sent again whose answer is LEASE_EXPIRED: the echo of the first attempt's success when the job is
   * completed with the retry_count it was claimed with (a lost lease would have raised it), as acks.ts rules.
   */
  private async echo(job: Job<never>, err: unknown): Promise<Pb> {
    if (!(err instanceof LeaseExpiredError) || err.code !== 'LEASE_EXPIRED') throw err;
    const [line] = await this.host.client.jobs.status([job.id], { signal: this.reports.signal });
    if (line?.status === 'completed' && line.retry_count === (job.retry_count ?? 0)) return {};
    throw err;
  }

  async fail(job: Job<never>, error: string, retryable: boolean, giveBack?: AbortSignal): Promise<string | null> {
    const req: Pb = { jobId: job.id, workerId: this.host.workerId, leaseId: job.lease_id ?? '', error, ...(retryable ? {} : { retryable: false }) };
    const signal = giveBack ?? this.reports.signal;
    // Sent more than once, a LEASE_EXPIRED may be the echo of our own fail, as for complete (acks.ts).
    let resent = false;
    const once = () =>
      this.unary('Fail', req, { signal, resent: () => (resent = true) }).then(
        (fail) => ({ fail }),
        async (err) => {
          if (!resent) throw err;
          return { fail: { status: (await failEcho(this.host.client, job, error, err, signal)) ?? '' } };
        },
      );
    const ack = await this.op('fail', req, once, () => {
      resent = true;
      return once();
    });
    const reply = ack.fail as Pb | undefined;
    return typeof reply?.status === 'string' && reply.status !== '' ? reply.status : null;
  }

  async renew(job: Job<never>, leaseSeconds: number | undefined): Promise<void> {
    const req = { jobId: job.id, workerId: this.host.workerId, leaseId: job.lease_id ?? '', leaseDurationSecs: leaseSeconds ?? 0 };
    await this.op('renew', req, () => this.unary('RenewLease', req));
  }

  /** Over the stream; with no stream (there is no unary Progress RPC), by REST. */
  async progress(job: Job<never>, progress: number, message: string | null, data: unknown): Promise<void> {
    const req = { jobId: job.id, workerId: this.host.workerId, leaseId: job.lease_id ?? '', progress, message: message ?? '', data: toValue(data) };
    const rest = () =>
      this.host.client.jobs
        .progress(job.id, { worker_id: this.host.workerId, lease_id: job.lease_id!, progress, message, data }, { signal: this.reports.signal })
        .then(() => ({}));
    await this.op('progress', req, rest);
  }

  endReports(reason: unknown): void {
    this.reports.abort(reason);
  }

  async close(): Promise<void> {
    await this.stopClaiming();
    await this.reopening;
    this.endReports(new ConnectionError('gRPC: the worker transport is closed'));
    this.client.close();
  }
}

/** A gRPC failure as the client's error class: the message is `CODE: message {extras}` (docs/errors.md). */
export function grpcError(code: number, message: string): SluiceError {
  const m = /^([A-Z_]+): ([\s\S]*)$/.exec(message);
  const catalog = m?.[1];
  if (catalog && catalog in ERROR_CLASSES) {
    const Cls = ERROR_CLASSES[catalog as keyof typeof ERROR_CLASSES];
    let text = m![2]!;
    let body: Record<string, unknown> = {};
    const extras = /\s(\{[\s\S]*\})$/.exec(text);
    if (extras) {
      try {
        body = JSON.parse(extras[1]!) as Record<string, unknown>;
        text = text.slice(0, extras.index);
      } catch {
        /* not extras after all: keep the whole message */
      }
    }
    // RATE_LIMITED carries its wait as an extra, as the REST body does.
    const retryAfter = typeof body.retry_after === 'number' ? body.retry_after : null;
    return new Cls({ status: 0, code: catalog, message: text, retryAfter, body: { ...body, error: catalog.toLowerCase(), code: catalog, message: text, status: 0 } });
  }
  // 14 UNAVAILABLE, 4 DEADLINE_EXCEEDED: no answer from the service (code TIMEOUT for the latter, as REST's).
  if (code === 14 || code === 4) return new ConnectionError(`gRPC: ${message}`, { timedOut: code === 4 });
  if (code === 9 && message.includes('LEASE_EXPIRED')) return new LeaseExpiredError({ status: 0, code: 'LEASE_EXPIRED', message });
  return new UnknownApiError({ status: 0, code: `GRPC_${code}`, message: `gRPC status ${code}: ${message}` });
}

// google.protobuf.Value / Struct as proto-loader reads and writes them ({fields: {k: {stringValue}}}).
interface PbValue {
  kind?: string;
  nullValue?: string | number;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: { fields?: Record<string, PbValue> };
  listValue?: { values?: PbValue[] };
}

export function toValue(v: unknown): PbValue {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toValue) } };
  if (typeof v === 'object') {
    const json = (v as { toJSON?: () => unknown }).toJSON;
    if (typeof json === 'function') return toValue(json.call(v));
    const fields: Record<string, PbValue> = {};
    for (const k of Object.keys(v)) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) own(fields, k, toValue(x));
    }
    return { structValue: { fields } };
  }
  return { nullValue: 'NULL_VALUE' };
}

export function fromValue(v: PbValue | null | undefined): unknown {
  if (!v) return null;
  switch (v.kind ?? Object.keys(v).find((k) => (v as Record<string, unknown>)[k] !== undefined)) {
    case 'numberValue':
      return v.numberValue;
    case 'stringValue':
      return v.stringValue;
    case 'boolValue':
      return v.boolValue;
    case 'structValue':
      return fromStruct(v.structValue);
    case 'listValue':
      return (v.listValue?.values ?? []).map(fromValue);
    default:
      return null;
  }
}

function fromStruct(s: { fields?: Record<string, PbValue> } | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const fields = s?.fields;
  if (fields) for (const k of Object.keys(fields)) own(out, k, fromValue(fields[k]));
  return out;
}

/**
 * Sets an own property, `__proto__` included (an assignment would set the prototype instead): what
 * Object.fromEntries does, without its array per entry (these run for every field of every job on the stream).
 */
function own(out: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  else out[k] = v;
}

const orNull = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** A queue.v1.Job in the REST shape (gRPC does not carry organization_id or the error history). */
function fromPbJob(j: Pb): Job<never> {
  return {
    id: String(j.id),
    organization_id: '',
    queue_name: String(j.queueName),
    status: String(j.status) as JobStatus,
    payload: fromStruct(j.payload as { fields?: Record<string, PbValue> }) as never,
    result: fromValue(j.result as PbValue) as never,
    priority: Number(j.priority ?? 0),
    retry_count: Number(j.retryCount ?? 0),
    max_retries: Number(j.maxRetries ?? 0),
    last_error: orNull(j.lastError),
    errors: [],
    tags: (j.tags as Record<string, string>) ?? {},
    idempotency_key: orNull(j.idempotencyKey),
    timeout_seconds: Number(j.timeoutSeconds ?? 0),
    assigned_worker_id: orNull(j.workerId),
    lease_id: orNull(j.leaseId),
    workflow_id: orNull(j.workflowId),
    dependencies_met: true,
    completion_webhook: orNull(j.completionWebhook),
    concurrency_key: orNull(j.concurrencyKey),
    // gRPC carries neither the debounce key, the idempotency window nor the expiry; progress without its data and time.
    debounce_key: null,
    progress: typeof j.progress === 'number' && j.progress >= 0 ? { progress: j.progress, message: orNull(j.progressMessage), data: null, at: '' } : null,
    idempotency_expires_at: null,
    expires_at: null,
    scheduled_at: orNull(j.scheduledAt),
    created_at: String(j.createdAt ?? ''),
    started_at: orNull(j.startedAt),
    completed_at: orNull(j.completedAt),
    updated_at: String(j.updatedAt ?? ''),
    lease_expires_at: orNull(j.leaseExpiresAt),
  };
}
