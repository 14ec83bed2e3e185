// The worker runner: claims jobs of one queue and runs a handler on each, at most `concurrency` at a time.
//
// Lifecycle: starting (register the worker) → running (claim, run, report; heartbeat the worker) → closing
// (stop claiming at once, let handlers finish and report within `shutdownGraceMs`, give back the jobs whose
// handler still runs, within GIVE_BACK_MS, deregister within as long again) → closed.
//
// Per job: the handler gets the job and a context whose `signal` aborts when the lease is lost (a renewal
// answered 409/404: the job is someone else's now), when the job is cancelled (a renewal answered
// JOB_CANCELLED, or the gRPC stream's cancel message: the reason is a JobCancelledError), when the job's
// `timeout_seconds` passes, or when a shutdown runs out of grace. `ctx.progress()` reports progress. While the handler runs, the lease is renewed every third of its length, so a
// handler may run far longer than the lease. The outcome is reported once: complete with the return value,
// or fail with the thrown error's message (`UnrecoverableError`: `retryable: false`, dead-lettered at once).
// A job whose lease was lost is not reported: the service would refuse it, and another worker may hold it.
//
// Claims are sized to the free slots (`limit` = concurrency + prefetch − held, at most 500) and long-poll
// (`wait_ms`), so an idle worker makes one request per `pollWaitMs` and a busy one none at all. A claim is sent
// once it is worth one (claiming.ts): a quarter of the concurrency free, the worker idle, or CLAIM_LINGER_MS
// after a slot freed. Over REST, completions are batched into POST /api/v1/jobs/complete (acks.ts), and a batch
// also claims the jobs for the slots it will free (its `claim` field: one round trip per batch instead of two;
// those slots are reserved until it is answered), up to half the slots, with at most two such batches in flight
// (CLAIM_LANES): one lane's round trip overlaps the other's handlers and commit. Over gRPC, completes go on the
// stream and the claim that follows them asks for their slots too, without waiting for their acks (grpc.ts): one
// round trip per cycle there as well. With `prefetch`, claimed jobs beyond the free slots are held (their leases
// renewed) until a slot frees.
import { randomUUID } from 'node:crypto';
import { hostname as osHostname } from 'node:os';
import type { SluiceClient } from './client.js';
import { TypedEmitter } from './emitter.js';
import { ConnectionError, JobCancelledError, LeaseExpiredError, NotFoundError, SluiceError } from './errors.js';
import { AckBatcher, failEcho, jsonLength } from './acks.js';
import { CLAIM_LANES, CLAIM_LINGER_MS, CLAIM_MAX, CLAIM_MAX_BEFORE, claimThreshold, refusesLimit } from './claiming.js';
import { backoff, sleep } from './http.js';
import type { AckClaim, Job, JsonObject } from './types.js';

/** Throw it from a handler to dead-letter the job at once, without the retries left. */
export class UnrecoverableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UnrecoverableError';
  }
}

/** The reason of a job's signal when its lease was lost. */
export class LeaseLostError extends Error {
  constructor(
    readonly jobId: string,
    cause?: unknown,
  ) {
    super(`the lease of job ${jobId} was lost`, { cause });
    this.name = 'LeaseLostError';
  }
}

/** The reason of a job's signal when its `timeout_seconds` passed. */
export class JobTimeoutError extends Error {
  constructor(
    readonly jobId: string,
    readonly timeoutSeconds: number,
  ) {
    super(`job ${jobId} timed out after ${timeoutSeconds} s`);
    this.name = 'JobTimeoutError';
  }
}

/** The reason of a job's signal when the worker shut down before the handler finished. */
export class WorkerShutdownError extends Error {
  constructor(readonly jobId: string) {
    super(`the worker shut down before job ${jobId} finished`);
    this.name = 'WorkerShutdownError';
  }
}

export interface JobContext {
  /** Aborts when the lease is lost, the job times out, or the worker's shutdown grace ends. */
  signal: AbortSignal;
  workerId: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** Renews the lease now (the worker also does it on its own). */
  heartbeat(): Promise<void>;
  /** Reports progress, 0…100, with an optional message and data (stored on the job, streamed as job.progress). */
  progress(progress: number, message?: string | null, data?: unknown): Promise<void>;
}

export type Handler<P = JsonObject, R = unknown> = (job: Job<P>, ctx: JobContext) => Promise<R> | R;

export interface WorkerOptions {
  /** Handlers running at once (1…1000, default 1). */
  concurrency?: number;
  /**
   * Jobs claimed ahead of the free slots, held until a slot frees (0…1000, default 0). Their leases run (and are
   * renewed) while they wait; close() runs them too.
   */
  prefetch?: number;
  /** Lease asked for at each claim and renewal, 5…3600 s (default: the queue's, else the job's timeout_seconds). */
  leaseSeconds?: number;
  /** Long-poll wait of a claim, 0…30000 ms (default 30000). */
  pollWaitMs?: number;
  /** Renewal period of a running job's lease (default: a third of the lease). */
  heartbeatIntervalMs?: number;
  /** Worker heartbeat period (default: what the service advises, else 30 s). */
  workerHeartbeatMs?: number;
  /** How long close() lets running handlers finish (default 30 s). */
  shutdownGraceMs?: number;
  /** A stable id: after a restart it re-registers into the same slot. Default: a random UUID per Worker. */
  workerId?: string;
  hostname?: string;
  metadata?: JsonObject;
  /** Close on SIGTERM and SIGINT (a second signal skips the grace period). Default false. */
  handleSignals?: boolean;
  /** With handleSignals: exit the process once closed (default true). */
  exitOnSignal?: boolean;
  /** Start at once (default true); otherwise call start(). */
  autostart?: boolean;
  /** `grpc`: claims and reports over QueueService.ProcessJobs (needs @grpc/grpc-js and @grpc/proto-loader). */
  transport?: 'http' | 'grpc';
  grpc?: {
    /** host:port of the gRPC API (default: the REST host, port 50051). */
    address?: string;
    /** TLS (default: when the REST URL is https). */
    tls?: boolean;
    /** HTTP/2 keepalive ping period while the stream is open, ms (default 20000; 0: no pings). */
    keepaliveMs?: number;
    /** A ping unanswered this long drops the connection and so breaks the stream, ms (default 10000). */
    keepaliveTimeoutMs?: number;
  };
}

export interface WorkerEvents<P, R> {
  /** Registered; claiming starts. */
  ready: [workerId: string];
  /** A handler started. */
  active: [job: Job<P>];
  completed: [job: Job<P>, result: R];
  /** The job failed and was reported: `status` is `scheduled` (will retry) or `deadletter`. */
  failed: [job: Job<P>, error: unknown, status: string | null];
  /** The lease was lost; the job's outcome was not reported. */
  leaseLost: [job: Job<P>, error: unknown];
  /** Something went wrong around the jobs (a claim, a report, a heartbeat). The worker carries on. */
  error: [error: unknown, context: string];
  closed: [];
}

/** How jobs come in and outcomes go out: HTTP long polls, or a gRPC stream. */
export interface Transport {
  /** Start delivering jobs through `host.dispatch`, never more than `host.free()` at once. */
  start(): void;
  /** A slot became free. */
  wake(): void;
  /**
   * Stop claiming now; resolves once no claim in flight can deliver more jobs. `grace` aborts when close()'s grace
   * ends: gRPC waits for the acks in flight on its stream until then at the latest.
   */
  stopClaiming(grace?: AbortSignal): Promise<void>;
  /** `bytes`: the length of the result's JSON, when the caller has it (the worker checks every result is JSON). */
  complete(job: Job<never>, result: unknown, bytes?: number): Promise<void>;
  /**
   * The status the job went to (`scheduled` or `deadletter`), when known. `giveBack`: a job handed back at close,
   * retried within the bound this signal sets (close()'s) rather than the reports' (see endReports).
   */
  fail(job: Job<never>, error: string, retryable: boolean, giveBack?: AbortSignal): Promise<string | null>;
  /** Renews the lease; LeaseExpiredError / NotFoundError when it is gone. */
  renew(job: Job<never>, leaseSeconds: number | undefined): Promise<void>;
  progress(job: Job<never>, progress: number, message: string | null, data: unknown): Promise<void>;
  /**
   * close()'s grace is over: the reports still unanswered (completes, fails, renewals, progress, their retries
   * and read-backs) fail now with `reason`, and any made after at once.
   */
  endReports(reason: unknown): void;
  close(): Promise<void>;
}

export interface TransportHost {
  readonly client: SluiceClient;
  readonly queue: string;
  readonly workerId: string;
  readonly concurrency: number;
  readonly prefetch: number;
  /** Handlers running now. */
  readonly active: number;
  readonly leaseSeconds: number | undefined;
  readonly pollWaitMs: number;
  readonly grpc: WorkerOptions['grpc'];
  readonly stopping: boolean;
  free(): number;
  dispatch(job: Job<never>): void;
  /** The service said the job was cancelled (a gRPC stream's cancel message). */
  cancelled(jobId: string): void;
  reportError(err: unknown, context: string): void;
}

interface Running {
  job: Job<never>;
  /** Its handler has begun (false while a prefetched job waits for a slot). */
  started: boolean;
  /** Its handler has returned: no more renewals (a late one would find the job completed and call it lost). */
  handled: boolean;
  /** The handler's signal's controller, made when the handler first reads `ctx.signal` (most never do). */
  ctl: AbortController | null;
  /** Why the job's work must stop, once it must (the signal's reason, whenever the signal is made). */
  abortedBy: { reason: unknown } | null;
  lost: boolean;
  timedOut: boolean;
  /** Given back at shutdown: nothing more is reported. */
  abandoned: boolean;
  renewTimer?: NodeJS.Timeout;
  deadline?: NodeJS.Timeout;
  renewing: Promise<void> | null;
  /** Settles once its handler has returned and its report is answered (null until it begins). */
  done: Promise<void> | null;
}

const MAX_ERROR_CHARS = 10_000;
/** After the grace, how long close() waits for its give-backs, and then for its deregistration (the client's timeoutMs if shorter). */
const GIVE_BACK_MS = 5_000;

/** Aborts the job's handler signal (a first reason stands), or records why for a signal not made yet. */
function abortRun(r: Running, reason: unknown): void {
  if (r.abortedBy) return;
  r.abortedBy = { reason };
  r.ctl?.abort(reason);
}

/** The job's handler signal, made on first use (already aborted if the job's work had to stop before). */
function signalOf(r: Running): AbortSignal {
  if (!r.ctl) {
    r.ctl = new AbortController();
    if (r.abortedBy) r.ctl.abort(r.abortedBy.reason);
  }
  return r.ctl.signal;
}

/** A signal that aborts after `ms` with a TIMEOUT ConnectionError naming `what`; `clear` once done. */
function bounded(ms: number, what: string): { signal: AbortSignal; clear: () => void } {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new ConnectionError(`close(): ${what} had no answer within ${ms} ms`, { timedOut: true })), ms);
  return { signal: ctl.signal, clear: () => clearTimeout(timer) };
}

function int(name: string, v: number | undefined, min: number, max: number, dflt: number): number;
function int(name: string, v: number | undefined, min: number, max: number, dflt: undefined): number | undefined;
function int(name: string, v: number | undefined, min: number, max: number, dflt: number | undefined): number | undefined {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < min || v > max) throw new RangeError(`Worker: ${name} must be an integer from ${min} to ${max}, got ${v}`);
  return v;
}

export class Worker<P = JsonObject, R = unknown> extends TypedEmitter<WorkerEvents<P, R>> implements TransportHost {
  readonly client: SluiceClient;
  readonly queue: string;
  readonly concurrency: number;
  readonly prefetch: number;
  readonly leaseSeconds: number | undefined;
  readonly pollWaitMs: number;
  readonly grpc: WorkerOptions['grpc'];
  /** Resolves with the worker id once registered (rejects if registration fails for good). */
  readonly ready: Promise<string>;
  /** Resolves once closed. */
  readonly closed: Promise<void>;

  private readonly handler: Handler<P, R>;
  private readonly opts: WorkerOptions;
  /** Every job held: waiting for a slot (prefetched), running, or being reported. */
  private readonly running = new Map<string, Running>();
  /** Prefetched jobs waiting for a slot, oldest first. */
  private readonly waiting: Running[] = [];
  /** Slots taken: handlers running (a reported job holds no slot, only its place in `running`). */
  private busy = 0;
  private id: string;
  private transport: Transport | null = null;
  private state: 'idle' | 'starting' | 'running' | 'closing' | 'closed' = 'idle';
  private startPromise: Promise<void> | null = null;
  private closePromise: Promise<void> | null = null;
  private resolveReady!: (id: string) => void;
  private rejectReady!: (err: unknown) => void;
  private resolveClosed!: () => void;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private beating = false;
  private registered = false;
  private readonly stopCtl = new AbortController();
  /** Fires when the shutdown grace must end now (a second signal). */
  private readonly hurryCtl = new AbortController();
  private drained: (() => void) | null = null;
  private signalHandler: ((sig: NodeJS.Signals) => void) | null = null;
  private processedCount = 0;

  constructor(client: SluiceClient, queue: string, handler: Handler<P, R>, opts: WorkerOptions = {}) {
    super();
    if (!client || typeof client !== 'object' || !('jobs' in client)) throw new TypeError('Worker: the first argument must be a SluiceClient');
    if (typeof queue !== 'string' || !/^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/.test(queue)) {
      throw new TypeError(`Worker: ${JSON.stringify(queue)} is not a queue name (1–100 of A-Z a-z 0-9 . _ -, not starting with . or -)`);
    }
    if (typeof handler !== 'function') throw new TypeError('Worker: the handler must be a function');
    if (opts.workerId !== undefined && !/^[A-Za-z0-9._-]{1,128}$/.test(opts.workerId)) {
      throw new TypeError('Worker: workerId must be 1–128 of A-Z a-z 0-9 . _ -');
    }
    if (opts.transport !== undefined && opts.transport !== 'http' && opts.transport !== 'grpc') {
      throw new TypeError(`Worker: transport must be 'http' or 'grpc', got ${JSON.stringify(opts.transport)}`);
    }
    this.client = client;
    this.queue = queue;
    this.handler = handler;
    this.opts = opts;
    this.concurrency = int('concurrency', opts.concurrency, 1, 1000, 1);
    this.prefetch = int('prefetch', opts.prefetch, 0, 1000, 0);
    this.leaseSeconds = int('leaseSeconds', opts.leaseSeconds, 5, 3600, undefined);
    this.pollWaitMs = int('pollWaitMs', opts.pollWaitMs, 0, 30_000, 30_000);
    int('heartbeatIntervalMs', opts.heartbeatIntervalMs, 50, 3_600_000, undefined);
    int('workerHeartbeatMs', opts.workerHeartbeatMs, 50, 3_600_000, undefined);
    int('shutdownGraceMs', opts.shutdownGraceMs, 0, 86_400_000, undefined);
    if (this.leaseSeconds !== undefined && opts.heartbeatIntervalMs !== undefined && opts.heartbeatIntervalMs >= this.leaseSeconds * 1000) {
      throw new RangeError('Worker: heartbeatIntervalMs must be shorter than the lease');
    }
    int('grpc.keepaliveMs', opts.grpc?.keepaliveMs, 0, 3_600_000, undefined);
    int('grpc.keepaliveTimeoutMs', opts.grpc?.keepaliveTimeoutMs, 1, 600_000, undefined);
    this.grpc = opts.grpc;
    // Minted here rather than by the service, so that a registration whose answer was lost can be sent again
    // without taking a second slot (a registration with an id is an upsert).
    this.id = opts.workerId ?? randomUUID();
    this.ready = new Promise<string>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    // Nobody may be awaiting it: a failed registration is also emitted as 'error'.
    this.ready.catch(() => {});
    this.closed = new Promise<void>((resolve) => (this.resolveClosed = resolve));
    if (opts.handleSignals) this.installSignals();
    if (opts.autostart ?? true) queueMicrotask(() => void this.start().catch(() => {}));
  }

  /** The worker id (throws before the worker is registered). */
  get workerId(): string {
    if (!this.registered && this.state !== 'closed') throw new Error('Worker: not registered yet (await worker.ready)');
    return this.id;
  }

  get stopping(): boolean {
    return this.state === 'closing' || this.state === 'closed';
  }

  /** Jobs started and not yet reported: handlers running, and reports waiting for their answer. */
  get active(): number {
    return this.running.size - this.waiting.length;
  }

  /** Jobs handled since start (reported or not). */
  get processed(): number {
    return this.processedCount;
  }

  /** Jobs the worker may take now: its free slots, plus the prefetch not used. */
  free(): number {
    return this.stopping ? 0 : this.concurrency + this.prefetch - this.running.size;
  }

  /** Registers and starts claiming. Called by the constructor unless `autostart: false`. */
  start(): Promise<void> {
    this.startPromise ??= this.run();
    return this.startPromise;
  }

  private async run(): Promise<void> {
    if (this.state !== 'idle') return;
    this.state = 'starting';
    let step = 'register';
    try {
      await this.register();
      if (this.stopping) return;
      step = 'transport';
      this.transport = this.opts.transport === 'grpc' ? await this.grpcTransport() : new HttpTransport(this);
    } catch (err) {
      this.rejectReady(err);
      if (!this.stopping) {
        this.emit('error', err, step);
        void this.close();
      }
      throw err;
    }
    if (this.stopping) return;
    this.state = 'running';
    this.resolveReady(this.id);
    this.emit('ready', this.id);
    this.transport.start();
  }

  private async grpcTransport(): Promise<Transport> {
    const { GrpcTransport } = await import('./grpc.js');
    return GrpcTransport.create(this);
  }

  /** Registers (or re-registers under the same id), retrying transient failures until closed. */
  private async register(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        const rec = await this.client.workers.register(
          {
            worker_id: this.id,
            queue_name: this.queue,
            hostname: (this.opts.hostname ?? osHostname()).slice(0, 255) || null,
            max_concurrency: this.concurrency,
            ...(this.opts.metadata !== undefined ? { metadata: this.opts.metadata } : {}),
          },
          { signal: this.stopCtl.signal },
        );
        this.id = rec.id;
        this.registered = true;
        this.scheduleHeartbeat(rec.heartbeat_interval_secs);
        return;
      } catch (err) {
        if (this.stopping) throw err;
        if (!(err instanceof SluiceError) || !err.retryable) throw err;
        this.emit('error', err, 'register');
        await sleep(err.retryAfter !== null ? err.retryAfter * 1000 : backoff(attempt), this.stopCtl.signal).catch(() => {});
      }
    }
  }

  /** Every `workerHeartbeatMs`, else what the service advised at registration (at least 1 s), else 30 s. */
  private scheduleHeartbeat(advisedSecs: number | null | undefined): void {
    const advised = typeof advisedSecs === 'number' && advisedSecs > 0 ? Math.max(1_000, advisedSecs * 1000) : null;
    const every = this.opts.workerHeartbeatMs ?? advised ?? 30_000;
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = setInterval(() => void this.beat(), every);
    this.heartbeatTimer.unref();
  }

  private async beat(): Promise<void> {
    // One at a time: a slow heartbeat (or a re-registration) must not pile up behind the interval.
    if (this.stopping || this.beating) return;
    this.beating = true;
    try {
      await this.beatOnce();
    } finally {
      this.beating = false;
    }
  }

  private async beatOnce(): Promise<void> {
    try {
      await this.client.workers.heartbeat(this.id, { signal: this.stopCtl.signal });
    } catch (err) {
      if (this.stopping) return;
      if (err instanceof NotFoundError) {
        // Reaped (a long pause) or deregistered by someone: take the same id again.
        try {
          await this.register();
        } catch (e) {
          if (!this.stopping) this.emit('error', e, 'register');
        }
        return;
      }
      this.emit('error', err, 'worker heartbeat');
    }
  }

  reportError(err: unknown, context: string): void {
    if (!this.stopping || !isAbort(err)) this.emit('error', err, context);
  }

  /** The job was cancelled on the service: its handler's signal aborts, and nothing is reported for it. */
  cancelled(jobId: string, cause?: unknown): void {
    const r = this.running.get(jobId);
    if (!r || r.lost) return;
    const reason = cause instanceof JobCancelledError ? cause : new JobCancelledError({ status: 409, code: 'JOB_CANCELLED', message: `job ${jobId} was cancelled` });
    this.lose(r, reason, reason);
  }

  /** The job is no longer ours: abort its signal (or drop it if it never started) and say so. */
  private lose(r: Running, reason: unknown, err: unknown): void {
    r.lost = true;
    clearTimeout(r.renewTimer);
    abortRun(r, reason);
    if (!r.started) this.unhold(r);
    this.emit('leaseLost', r.job as Job<P>, err);
  }

  /** A prefetched job leaves without having run (lost, or given back at shutdown). */
  private unhold(r: Running): void {
    const at = this.waiting.indexOf(r);
    if (at >= 0) this.waiting.splice(at, 1);
    if (this.running.get(r.job.id) !== r) return;
    this.running.delete(r.job.id);
    if (this.running.size === 0) this.drained?.();
    this.transport?.wake();
  }

  /** A claimed job: run it in a free slot, or hold it (with its lease renewed) until one frees. */
  dispatch(job: Job<never>): void {
    const r: Running = { job, started: false, handled: false, ctl: null, abortedBy: null, lost: false, timedOut: false, abandoned: false, renewing: null, done: null };
    this.running.set(job.id, r);
    this.renewals(r);
    if (this.busy < this.concurrency) this.begin(r);
    else this.waiting.push(r);
  }

  private begin(r: Running): void {
    r.started = true;
    this.busy++;
    // The handler's slot frees when it returns, the job's hold (what claims are sized by) when its report is
    // answered: a prefetched job starts while the last one's acknowledgement is on its way.
    let slot = true;
    const freeSlot = () => {
      if (!slot) return;
      slot = false;
      this.busy--;
      this.processedCount++;
      // The slot goes to the oldest prefetched job first.
      const next = this.waiting.shift();
      if (next) this.begin(next);
    };
    r.done = this.process(r, freeSlot).finally(() => {
      freeSlot();
      this.running.delete(r.job.id);
      if (this.running.size === 0) this.drained?.();
      this.transport?.wake();
    });
  }

  /** The lease times of the last job whose lease length was read, and that length. */
  private lastLease: { exp: string | undefined; start: string | undefined; ms: number } = { exp: undefined, start: undefined, ms: 0 };

  private leaseMsOf(job: Job<never>): number {
    if (this.leaseSeconds !== undefined) return this.leaseSeconds * 1000;
    // Both times are the service's, so the clocks of the two machines do not matter.
    // The jobs of one claim share both times: the last pair is remembered rather than parsed again.
    const last = this.lastLease;
    if (last.exp === job.lease_expires_at && last.start === job.started_at && last.exp !== undefined) return last.ms;
    const exp = job.lease_expires_at ? Date.parse(job.lease_expires_at) : NaN;
    const start = job.started_at ? Date.parse(job.started_at) : NaN;
    if (!(Number.isFinite(exp) && Number.isFinite(start) && exp > start)) return (job.timeout_seconds || 300) * 1000;
    this.lastLease = { exp: job.lease_expires_at!, start: job.started_at!, ms: exp - start };
    return exp - start;
  }

  /** Renews the job's lease; a renewal refused for good loses the job. */
  private async renew(r: Running): Promise<void> {
    const { job } = r;
    if (r.lost || r.timedOut || r.abandoned || r.handled) return;
    try {
      await this.transport!.renew(job, this.leaseSeconds);
    } catch (err) {
      if (err instanceof JobCancelledError) return this.cancelled(job.id, err);
      if (err instanceof LeaseExpiredError || err instanceof NotFoundError) {
        if (!r.lost) this.lose(r, new LeaseLostError(job.id, err), err);
        return;
      }
      // A renewal cut short by close() for a job it gives back is nobody's concern.
      if (!r.abandoned) this.emit('error', err, `lease renewal of job ${job.id}`);
    }
  }

  /** Renews the lease every third of its length from the claim on (a prefetched job's lease runs while it waits). */
  private renewals(r: Running): void {
    const every = this.opts.heartbeatIntervalMs ?? this.leaseMsOf(r.job) / 3;
    const tick = () => {
      r.renewTimer = setTimeout(async () => {
        r.renewing = this.renew(r);
        await r.renewing;
        r.renewing = null;
        if (!r.lost && !r.timedOut && !r.abandoned && !r.handled && this.running.get(r.job.id) === r) tick();
      }, every);
    };
    tick();
  }

  /** Runs the handler, calls `handled` as it returns, then reports the outcome. */
  private async process(r: Running, handled: () => void): Promise<void> {
    const { job } = r;
    if (job.timeout_seconds > 0) {
      r.deadline = setTimeout(() => {
        r.timedOut = true;
        clearTimeout(r.renewTimer);
        abortRun(r, new JobTimeoutError(job.id, job.timeout_seconds));
      }, job.timeout_seconds * 1000);
    }
    const ctx: JobContext = {
      get signal() {
        return signalOf(r);
      },
      workerId: this.id,
      attempt: (job.retry_count ?? 0) + 1,
      heartbeat: async () => {
        if (r.lost) throw new LeaseLostError(job.id);
        await this.renew(r);
        if (r.lost) throw new LeaseLostError(job.id);
      },
      progress: async (progress, message = null, data = null) => {
        if (r.lost) throw r.abortedBy?.reason ?? new LeaseLostError(job.id);
        try {
          await this.transport!.progress(job, progress, message, data);
        } catch (err) {
          if (err instanceof JobCancelledError) this.cancelled(job.id, err);
          throw err;
        }
      },
    };
    this.emit('active', job as Job<P>);
    let outcome: { ok: true; value: R } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await this.handler(job as Job<P>, ctx) };
    } catch (error) {
      outcome = { ok: false, error };
    } finally {
      r.handled = true;
      clearTimeout(r.renewTimer);
      clearTimeout(r.deadline);
    }
    handled();
    // A renewal in flight decides whether the lease is still ours.
    if (r.renewing) await r.renewing;
    if (r.abandoned) return;
    if (r.lost) return;
    await this.report(r, outcome);
  }

  private async report(r: Running, outcome: { ok: true; value: R } | { ok: false; error: unknown }): Promise<void> {
    const job = r.job as Job<P>;
    try {
      if (r.timedOut) {
        const err = new JobTimeoutError(job.id, job.timeout_seconds);
        const status = await this.transport!.fail(r.job, err.message, true);
        this.emit('failed', job, err, status);
      } else if (outcome.ok) {
        let result: unknown = outcome.value === undefined ? null : outcome.value;
        let bytes: number;
        try {
          bytes = jsonLength(result);
        } catch (e) {
          const err = new Error(`the handler's result is not JSON: ${(e as Error).message}`);
          const status = await this.transport!.fail(r.job, err.message, true);
          this.emit('failed', job, err, status);
          return;
        }
        await this.transport!.complete(r.job, result, bytes);
        this.emit('completed', job, outcome.value);
      } else {
        const retryable = !(outcome.error instanceof UnrecoverableError);
        const status = await this.transport!.fail(r.job, errorMessage(outcome.error), retryable);
        this.emit('failed', job, outcome.error, status);
      }
    } catch (err) {
      if (err instanceof LeaseExpiredError || err instanceof NotFoundError) this.emit('leaseLost', job, err);
      else this.emit('error', err, `report of job ${job.id}`);
    }
  }

  /**
   * Stops claiming at once, lets running handlers finish and report within `graceMs` (default `shutdownGraceMs`),
   * gives back the jobs still running after that (failed as retryable, their signals aborted; GIVE_BACK_MS at
   * most), then deregisters. What it could not settle (a report or a give-back unanswered) is an `error` event.
   */
  close(opts: { graceMs?: number } = {}): Promise<void> {
    this.closePromise ??= this.shutdown(opts.graceMs ?? this.opts.shutdownGraceMs ?? 30_000);
    return this.closePromise;
  }

  private async shutdown(graceMs: number): Promise<void> {
    const wasStarting = this.state === 'starting' || this.state === 'idle';
    this.state = 'closing';
    if (wasStarting) this.stopCtl.abort();
    // The grace runs from here, and what close() waits for before giving jobs back counts against it: the acks in
    // flight on a gRPC stream, the handlers and their reports. A second signal ends it at once.
    const grace = new AbortController();
    const graceTimer = setTimeout(() => grace.abort(), graceMs);
    const hurry = () => grace.abort();
    this.hurryCtl.signal.addEventListener('abort', hurry, { once: true });
    try {
      if (this.startPromise) await this.startPromise.catch(() => {});
      await this.transport?.stopClaiming(grace.signal);
      if (this.running.size > 0 && !grace.signal.aborted) {
        const drained = new Promise<void>((resolve) => (this.drained = resolve));
        const over = new Promise<void>((resolve) => grace.signal.addEventListener('abort', () => resolve(), { once: true }));
        await Promise.race([drained, over]);
      }
      await this.abandonRunning();
      await this.transport?.close();
    } catch (err) {
      this.emit('error', err, 'close');
    } finally {
      clearTimeout(graceTimer);
      this.hurryCtl.signal.removeEventListener('abort', hurry);
      this.stopCtl.abort();
      clearInterval(this.heartbeatTimer);
      if (this.registered) {
        // Bounded as the give-backs are: a node that does not answer would otherwise hold close() for every retry
        // of the client's timeoutMs. A worker left registered is reaped by the node once its heartbeats stop.
        const bound = bounded(Math.min(this.client.http.timeoutMs, GIVE_BACK_MS), 'the deregistration');
        await this.client.workers.deregister(this.id, { signal: bound.signal }).catch((err) => {
          if (!(err instanceof NotFoundError)) this.emit('error', err, 'deregister');
        });
        bound.clear();
        this.registered = false;
      }
      this.removeSignals();
      this.state = 'closed';
      this.rejectReady(new Error('Worker: closed before it was ready'));
      this.resolveClosed();
      this.emit('closed');
    }
  }

  /**
   * The grace is over. Jobs still held whose handler has not returned (running, or prefetched and never started)
   * are signalled and handed back, so that they are retried soon; close() waits GIVE_BACK_MS for that at most. A
   * job whose handler has returned is not: that would race its report, and landing first would undo a completion.
   * The reports still unanswered had the grace: they end now, each an `error` (what close() could not settle), as
   * is a give-back unanswered within its bound.
   */
  private async abandonRunning(): Promise<void> {
    const left = [...this.running.values()];
    const held = left.filter((r) => !r.handled);
    for (const r of held) {
      r.abandoned = true;
      clearTimeout(r.renewTimer);
      clearTimeout(r.deadline);
      abortRun(r, new WorkerShutdownError(r.job.id));
      if (!r.started) this.unhold(r);
    }
    this.transport?.endReports(new ConnectionError('close(): no answer within the shutdown grace period', { timedOut: true }));
    const bound = bounded(Math.min(this.client.http.timeoutMs, GIVE_BACK_MS), 'the give-back');
    const giveBack = async (r: Running) => {
      try {
        const status = await this.transport!.fail(r.job, new WorkerShutdownError(r.job.id).message, true, bound.signal);
        this.emit('failed', r.job as Job<P>, new WorkerShutdownError(r.job.id), status);
      } catch (err) {
        if (!(err instanceof LeaseExpiredError || err instanceof NotFoundError)) this.emit('error', err, `give back job ${r.job.id}`);
      }
    };
    try {
      await Promise.all([...left.filter((r) => r.handled).map((r) => r.done), ...held.filter((r) => !r.lost).map(giveBack)]);
    } finally {
      bound.clear();
    }
  }

  private installSignals(): void {
    const handler = (sig: NodeJS.Signals) => {
      if (this.stopping) {
        // A second signal: no more grace.
        this.hurryCtl.abort();
        return;
      }
      this.close().then(
        () => {
          if (this.opts.exitOnSignal ?? true) process.exit(sig === 'SIGINT' ? 130 : 0);
        },
        () => process.exit(1),
      );
    };
    this.signalHandler = handler;
    process.on('SIGTERM', handler);
    process.on('SIGINT', handler);
  }

  private removeSignals(): void {
    if (!this.signalHandler) return;
    process.off('SIGTERM', this.signalHandler);
    process.off('SIGINT', this.signalHandler);
    this.signalHandler = null;
  }
}

/**
 * The REST transport: long-poll claims sized to the free slots, sent once enough slots are free to fill several
 * (a quarter of the concurrency, or all of them when the worker is idle, or whatever is free after
 * CLAIM_LINGER_MS); completions batched into `POST /api/v1/jobs/complete` (acks.ts); fails, renewals and
 * progress as single requests.
 */
class HttpTransport implements Transport {
  private loop: Promise<void> | null = null;
  private claim: { ctl: AbortController; answered: boolean; limit: number } | null = null;
  private wakeUp: (() => void) | null = null;
  private wakeScheduled = false;
  private readonly idle = new AbortController();
  private readonly acks: AckBatcher;
  private readonly threshold: number;
  /** Slots reserved by the claims riding on batch acknowledgements in flight (acks.ts AckRider). */
  private riding = 0;
  /** Acknowledgements in the batches those claims ride on: their slots free when they land. */
  private ridingItems = 0;
  private riders = 0;
  /** The most jobs one rider claims: the slots split into CLAIM_LANES cycles that run out of phase. */
  private readonly laneSize: number;
  /** The most jobs one claim asks for: CLAIM_MAX, or CLAIM_MAX_BEFORE once the service refused more (claiming.ts). */
  private claimMax = CLAIM_MAX;
  /** Since when slots have been free without a claim for them (null: none are). */
  private freeSince: number | null = null;
  /** Aborts the reports still unanswered (requests, waits between attempts, read-backs): endReports. */
  private readonly reports = new AbortController();
  /** Ends stopClaiming's wait for the claims riding on acknowledgements in flight, once the last has landed. */
  private ridersLanded: (() => void) | null = null;

  constructor(private readonly host: TransportHost) {
    this.acks = new AckBatcher(
      host.client,
      () => host.workerId,
      {
        take: (items) => this.ride(items),
        landed: (claim, items, jobs) => this.landed(claim, items, jobs),
        refused: (err) => this.refusedLimit(err),
      },
      this.reports.signal,
    );
    this.threshold = claimThreshold(host.concurrency);
    this.laneSize = Math.max(1, Math.ceil((host.concurrency + host.prefetch) / CLAIM_LANES));
  }

  start(): void {
    this.loop = this.run();
  }

  /**
   * A slot became free. The loop looks after the current turn, so that every handler finishing in it (a batch
   * acknowledgement frees its slots together) is counted before a claim is sized.
   */
  wake(): void {
    if (this.wakeScheduled || !this.wakeUp) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      this.wakeUp?.();
    });
  }

  async stopClaiming(grace?: AbortSignal): Promise<void> {
    this.idle.abort();
    this.wakeUp?.();
    // Leaving a long poll before it answers makes the service put back what it had claimed for it. Once the
    // answer is on its way the jobs are ours: they are taken and run.
    if (this.claim && !this.claim.answered) this.claim.ctl.abort(new Error('closing'));
    await this.loop;
    // A claim riding on an acknowledgement in flight hands its jobs over when that lands: they are ours too, and
    // run within the grace. Past the grace the acknowledgement is given up (endReports), and its claim with it.
    if (this.riders > 0 && !grace?.aborted) {
      await new Promise<void>((resolve) => {
        this.ridersLanded = resolve;
        grace?.addEventListener('abort', () => resolve(), { once: true });
      });
    }
  }

  /** Waits for a wake() (or stopClaiming), or `ms` when given. */
  private sleepUntilWoken(ms?: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    }).finally(() => (this.wakeUp = null));
  }

  private async run(): Promise<void> {
    const h = this.host;
    let failures = 0;
    while (!h.stopping) {
      const free = Math.min(h.free() - this.riding, this.claimMax);
      if (free <= 0) {
        this.freeSince = null;
        await this.sleepUntilWoken();
        continue;
      }
      if (free < Math.min(this.threshold, this.claimMax) && h.active > 0) {
        // More slots are about to free: wait a little for them, so that the claim carries several jobs.
        this.freeSince ??= Date.now();
        const left = this.freeSince + CLAIM_LINGER_MS - Date.now();
        if (left > 0) {
          await this.sleepUntilWoken(left);
          continue;
        }
      }
      this.freeSince = null;
      const started = Date.now();
      let jobs: Job<never>[];
      try {
        jobs = await this.claimOnce(free);
        failures = 0;
      } catch (err) {
        if (h.stopping) break;
        if (this.refusedLimit(err)) continue;
        h.reportError(err, 'claim');
        const wait = err instanceof SluiceError && err.retryAfter !== null ? err.retryAfter * 1000 : backoff(failures++);
        await sleep(wait, this.idle.signal).catch(() => {});
        continue;
      }
      for (const job of jobs) h.dispatch(job);
      // An empty answer well before the wait was up (a paused queue, or pollWaitMs 0): pause instead of spinning.
      if (jobs.length === 0 && Date.now() - started < Math.max(h.pollWaitMs / 2, 1)) {
        await sleep(Math.min(1000, Math.max(250, h.pollWaitMs)), this.idle.signal).catch(() => {});
      }
    }
  }

  /**
   * The claim for a batch of `items` acknowledgements to carry, up to a lane's share: the slots free now or freed
   * once the riding batches (this one included) are answered, less those already claimed by riders or by the
   * loop's claim in flight. They stay reserved until the batch lands. With two lanes, one batch's round trip
   * overlaps the other's handlers and commit.
   */
  private ride(items: number): AckClaim | null {
    const h = this.host;
    if (h.stopping || this.riders >= CLAIM_LANES) return null;
    const limit = Math.min(this.claimMax, this.laneSize, h.free() + this.ridingItems + items - this.riding - (this.claim?.limit ?? 0));
    if (limit <= 0) return null;
    this.riding += limit;
    this.ridingItems += items;
    this.riders++;
    return { queue_name: h.queue, limit, ...(h.leaseSeconds !== undefined ? { lease_duration_secs: h.leaseSeconds } : {}) };
  }

  /** An older service refused the claim's limit (claiming.ts): claims are sized to what it takes from now on. */
  private refusedLimit(err: unknown): boolean {
    if (!(err instanceof SluiceError && err.status === 422 && this.claimMax > CLAIM_MAX_BEFORE && refusesLimit(err.details))) return false;
    this.claimMax = CLAIM_MAX_BEFORE;
    return true;
  }

  private landed(claim: AckClaim, items: number, jobs: Job<never>[] | null): void {
    this.riding -= claim.limit!;
    this.ridingItems -= items;
    this.riders--;
    if (jobs) for (const job of jobs) this.host.dispatch(job);
    if (this.riders === 0) this.ridersLanded?.();
    this.wake();
  }

  private async claimOnce(limit: number): Promise<Job<never>[]> {
    const h = this.host;
    const ctl = new AbortController();
    this.claim = { ctl, answered: false, limit };
    try {
      const res = await h.client.http.request<{ jobs: Job<never>[] }>({
        method: 'POST',
        path: '/api/v1/jobs/claim',
        body: {
          queue_name: h.queue,
          worker_id: h.workerId,
          limit,
          wait_ms: h.pollWaitMs,
          ...(h.leaseSeconds !== undefined ? { lease_duration_secs: h.leaseSeconds } : {}),
        },
        signal: ctl.signal,
        timeoutMs: h.client.http.timeoutMs + h.pollWaitMs,
        // Once the answer has begun, close() no longer aborts it: the jobs it holds are the worker's.
        onHeaders: () => {
          if (this.claim) this.claim.answered = true;
        },
      });
      return res.body.jobs;
    } finally {
      this.claim = null;
    }
  }

  /** Batched with the other completions of this turn (acks.ts); resolves or rejects with this job's own outcome. */
  complete(job: Job<never>, result: unknown, bytes?: number): Promise<void> {
    return this.acks.complete(job, result, bytes);
  }

  /** Sent more than once (a retry), a LEASE_EXPIRED may be the echo of our own fail: read back (acks.ts). */
  async fail(job: Job<never>, error: string, retryable: boolean, giveBack?: AbortSignal): Promise<string | null> {
    const signal = giveBack ?? this.reports.signal;
    let resent = false;
    try {
      const r = await this.host.client.jobs.fail(
        job.id,
        { worker_id: this.host.workerId, lease_id: job.lease_id!, error, retryable },
        { onRetry: (e) => void (e.error.code !== 'RATE_LIMITED' && (resent = true)), signal },
      );
      return r.status;
    } catch (err) {
      if (!resent) throw err;
      return failEcho(this.host.client, job, error, err, signal);
    }
  }

  async renew(job: Job<never>, leaseSeconds: number | undefined): Promise<void> {
    await this.host.client.jobs.heartbeat(
      job.id,
      { worker_id: this.host.workerId, lease_id: job.lease_id!, ...(leaseSeconds !== undefined ? { lease_duration_secs: leaseSeconds } : {}) },
      { signal: this.reports.signal },
    );
  }

  async progress(job: Job<never>, progress: number, message: string | null, data: unknown): Promise<void> {
    await this.host.client.jobs.progress(
      job.id,
      { worker_id: this.host.workerId, lease_id: job.lease_id!, progress, message, data },
      { signal: this.reports.signal },
    );
  }

  endReports(reason: unknown): void {
    this.reports.abort(reason);
  }

  async close(): Promise<void> {
    await this.stopClaiming();
  }
}

/** The message sent as the job's error: never empty, never over the service's 10,000 characters. */
export function errorMessage(err: unknown): string {
  let msg: string;
  if (err instanceof Error) msg = err.message || err.name || 'Error';
  else if (typeof err === 'string') msg = err || 'Error';
  else {
    try {
      msg = JSON.stringify(err) ?? String(err);
    } catch {
      msg = String(err);
    }
  }
  return msg.length > MAX_ERROR_CHARS ? `${msg.slice(0, MAX_ERROR_CHARS - 1)}…` : msg;
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || err.message === 'closing');
}
