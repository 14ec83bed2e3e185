// Batch acknowledgements for the HTTP worker transport: completions reported in the same event-loop turn go out
// as one `POST /api/v1/jobs/complete` (jobs.completeMany), and each report resolves or rejects with its own item's
// outcome, as a single `POST /jobs/:id/complete` would have.
//
// Batching. The first completion of a turn schedules a flush with setImmediate, so every handler that finishes
// in that turn (a claim's worth of short jobs finishes together) rides in the same request; a batch is also cut
// at ACK_MAX_ITEMS items or about ACK_MAX_BYTES of results (far below the service's body limits). Batches are
// independent: there is no cap on those in flight, so a slow one holds up only its own items. A batch may carry
// the worker's next claim (AckRider): its claimed jobs are handed over before its items settle, and a batch with
// a claim that gets no answer is sent again without it (a claim is never resent: a lost answer's jobs wait for
// their lease), its items counted as possibly done (the rule below).
//
// Failures.
// - An item refused for a transient reason (503 UNAVAILABLE, the queue moving, 429) is sent again in a later
//   batch after a backoff, up to the client's `retry.retries` times.
// - A batch that fails as a whole with a transient error (no answer, 502–504, 503, 429) is retried by the client
//   as a single complete is (it is idempotent: the lease fences it). One still failing after the retries rejects
//   every item with that error (the worker emits `error`, as for a single complete).
// - A batch refused as a whole for what it holds (413, 422: say one result the service will not store) or by a
//   service without the route (404, 405) is split: each item goes as a single complete and gets its own answer.
// - Once the batcher's signal aborts (the worker's close() is past its grace), every item still unanswered
//   rejects with its reason at once, and no request goes out any more.
//
// The rule for a retried acknowledgement. Once a batch (or an item) has been sent more than once after anything
// but a 429, an earlier attempt may have completed its jobs with the answer lost; the retry then finds them
// completed and answers LEASE_EXPIRED. Such an item is not reported as a lost lease on that word alone: its job is
// read back (GET /api/v1/jobs/status) and counts as completed by this report when it is `completed` with the
// `retry_count` it was claimed with (a lost lease puts the job back with retry_count + 1 before anyone else can
// complete it, so the same count means the completion happened under this claim's lease, which only this worker
// held). Otherwise the LEASE_EXPIRED stands (`leaseLost`). If the read fails too, the outcome is unknown and the
// report rejects with the read's error (the worker emits `error`). JOB_CANCELLED and NOT_FOUND are never the
// echo of our own completion and stand as they are.
//
// The same rule for a retried fail (both transports: failEcho). A fail leaves no `completed` to look for: the job
// is read back whole (GET /api/v1/jobs/{id}) and the fail counts as landed when the error history's entry for this
// attempt (`attempt` = the retry_count the job was claimed with + 1) holds our message. Only two things write that
// entry: the lease holder's fail, and the lease running out, which writes `lease expired`; a fail whose message is
// that text cannot be told from the expiry, so it stands as the lost lease it may be.
import type { SluiceClient } from './client.js';
import { errorFromResponse, LeaseExpiredError, SluiceError } from './errors.js';
import type { RetryEvent } from './http.js';
import { backoff, sleep } from './http.js';
import type { AckClaim, AckResult, Job } from './types.js';

/** The error history's entry the service writes when a lease runs out. */
const LEASE_EXPIRY_ERROR = 'lease expired';

/** The length of a result's JSON (`undefined` counts as the `null` it is sent as); throws for one that is not JSON. */
export function jsonLength(result: unknown): number {
  return JSON.stringify(result)?.length ?? 4;
}

/** The length of a result's JSON (0 for one that is not JSON: the service will refuse it, and it fails alone). */
export function resultBytes(result: unknown): number {
  try {
    return jsonLength(result);
  } catch {
    return 0;
  }
}

/** Items per batch: the service takes up to 500. */
export const ACK_MAX_ITEMS = 500;
/** Bytes of results per batch, roughly (a larger result goes alone). */
export const ACK_MAX_BYTES = 64 * 1024;

interface Pending {
  job: Job<never>;
  result: unknown;
  bytes: number;
  /** Transient refusals of this item so far. */
  attempts: number;
  /** An earlier attempt may have completed the job (see the rule above). */
  maybeDone: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * A claim that rides on a batch acknowledgement (the REST worker's next jobs, asked in the same request: one round
 * trip per batch instead of two). The worker reserves the slots it claims until the batch is answered.
 */
export interface AckRider {
  /** The claim to send with a batch of `items` completions, or null for none. */
  take(items: number): AckClaim | null;
  /** The batch that carried the claim was answered with these jobs, or not answered (null); before its items settle. */
  landed(claim: AckClaim, items: number, jobs: Job<never>[] | null): void;
  /** Whether `err`, the answer to a batch that carried a claim, refused the claim alone (an older service's limit). */
  refused(err: unknown): boolean;
}

export class AckBatcher {
  private queue: Pending[] = [];
  private bytes = 0;
  private scheduled = false;
  /** False once the service said it has no batch route: every completion goes alone. */
  private batchRoute = true;

  /** `signal` ends every request and wait of the batcher (the worker's close, once its grace is over). */
  constructor(
    private readonly client: SluiceClient,
    private readonly workerId: () => string,
    private readonly rider: AckRider | null,
    private readonly signal: AbortSignal,
  ) {}

  /** `json`: the length of the result's JSON, when the caller has measured it already. */
  complete(job: Job<never>, result: unknown, json: number = resultBytes(result)): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.push({ job, result, bytes: 64 + json, attempts: 0, maybeDone: false, resolve, reject });
    });
  }

  private push(p: Pending): void {
    this.queue.push(p);
    this.bytes += p.bytes;
    if (this.queue.length >= ACK_MAX_ITEMS || this.bytes >= ACK_MAX_BYTES) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    while (this.queue.length > 0) {
      const batch: Pending[] = [];
      let bytes = 0;
      while (this.queue.length > 0 && batch.length < ACK_MAX_ITEMS && (batch.length === 0 || bytes + this.queue[0]!.bytes <= ACK_MAX_BYTES)) {
        const p = this.queue.shift()!;
        bytes += p.bytes;
        batch.push(p);
      }
      this.bytes -= bytes;
      void this.send(batch);
    }
    this.bytes = 0;
  }

  private async send(batch: Pending[], ride = true): Promise<void> {
    if (!this.batchRoute) {
      await Promise.all(batch.map((p) => this.single(p)));
      return;
    }
    let resent = false;
    const onRetry = (e: RetryEvent) => {
      if (e.error.code !== 'RATE_LIMITED') resent = true;
    };
    const claim = ride ? (this.rider?.take(batch.length) ?? null) : null;
    let res: AckResult;
    try {
      res = await this.client.jobs.completeMany(
        batch.map((p) => ({ id: p.job.id, ...(p.job.lease_id ? { lease_id: p.job.lease_id } : {}), result: p.result })),
        { worker_id: this.workerId(), ...(claim ? { claim } : {}) },
        { onRetry, signal: this.signal },
      );
    } catch (err) {
      if (claim) {
        this.rider!.landed(claim, batch.length, null);
        // Refused for its claim's size alone (a 422 changes nothing): the batch goes again without it.
        if (this.rider!.refused(err)) return this.send(batch, false);
        // A request with a claim is not retried (a claim never is): the batch goes again without it, and the first
        // attempt may have completed its items.
        if (!(err instanceof SluiceError && !err.retryable && [404, 405, 413, 422].includes(err.status))) {
          for (const p of batch) p.maybeDone = true;
          return this.send(batch, false);
        }
      }
      if (resent) for (const p of batch) p.maybeDone = true;
      if (err instanceof SluiceError && !err.retryable && [404, 405, 413, 422].includes(err.status)) {
        // The route itself is unknown (an older service): its items' own 404s come inside a 200.
        if (err.status === 404 || err.status === 405) this.batchRoute = false;
        await Promise.all(batch.map((p) => this.single(p)));
        return;
      }
      for (const p of batch) p.reject(err);
      return;
    }
    if (resent) for (const p of batch) p.maybeDone = true;
    // The claimed jobs are taken before the acknowledged ones give their slots back.
    if (claim) this.rider!.landed(claim, batch.length, (res.jobs ?? []) as Job<never>[]);
    const refused: Array<{ p: Pending; err: SluiceError }> = [];
    for (const s of res.succeeded) batch[s.index]?.resolve();
    for (const f of res.failed) {
      const p = batch[f.index];
      if (!p) continue;
      const err = errorFromResponse(f.error.status, f.error, null, 'POST', '/api/v1/jobs/complete');
      if (err.retryable && p.attempts < this.client.http.retries) {
        // The actor could not take it (its store, a move): whether it did anything is unknown.
        p.maybeDone = true;
        const wait = err.retryAfter !== null ? err.retryAfter * 1000 : backoff(p.attempts);
        p.attempts++;
        sleep(wait, this.signal).then(() => this.push(p), p.reject);
        continue;
      }
      refused.push({ p, err });
    }
    await this.settle(refused);
  }

  /** One completion alone (the batch route refused the batch as a whole, or is missing). */
  private async single(p: Pending): Promise<void> {
    let resent = false;
    try {
      await this.client.jobs.complete(
        p.job.id,
        { worker_id: this.workerId(), ...(p.job.lease_id ? { lease_id: p.job.lease_id } : {}), result: p.result },
        { onRetry: (e) => void (e.error.code !== 'RATE_LIMITED' && (resent = true)), signal: this.signal },
      );
      p.resolve();
    } catch (err) {
      if (resent) p.maybeDone = true;
      await this.settle([{ p, err }]);
    }
  }

  /** Rejects each refused item with its error, unless it is the echo of an earlier attempt's success. */
  private async settle(refused: Array<{ p: Pending; err: unknown }>): Promise<void> {
    const echoes = refused.filter(({ p, err }) => p.maybeDone && isPlainLeaseExpired(err));
    for (const r of refused) if (!echoes.includes(r)) r.p.reject(r.err);
    if (echoes.length === 0) return;
    let lines: Map<string, { status: string; retry_count: number }>;
    try {
      lines = new Map((await this.client.jobs.status(echoes.map(({ p }) => p.job.id), { signal: this.signal })).map((l) => [l.id, l]));
    } catch (readErr) {
      for (const { p } of echoes) p.reject(readErr);
      return;
    }
    for (const { p, err } of echoes) {
      const line = lines.get(p.job.id);
      if (line && line.status === 'completed' && line.retry_count === (p.job.retry_count ?? 0)) p.resolve();
      else p.reject(err);
    }
  }
}

/**
 * A fail sent more than once and answered `err`: the status the first landing left the job in (`scheduled` or
 * `deadletter`; null when the job has moved on since), or `err` rethrown when the fail did not land (see the rule
 * above). The history's first entry for the attempt is the one that counts: a job revived from the dead-letter
 * queue starts its attempts again.
 */
export async function failEcho(client: SluiceClient, job: Job<never>, error: string, err: unknown, signal: AbortSignal): Promise<string | null> {
  if (!isPlainLeaseExpired(err) || error === LEASE_EXPIRY_ERROR) throw err;
  const claimed = job.retry_count ?? 0;
  const now = await client.jobs.get(job.id, { signal });
  if (now.errors.find((e) => e.attempt === claimed + 1)?.error !== error) throw err;
  if (now.status === 'scheduled' && now.retry_count === claimed + 1) return 'scheduled';
  if (now.status === 'deadletter' && now.retry_count === claimed) return 'deadletter';
  return null;
}

/** LEASE_EXPIRED itself (not JOB_CANCELLED, its subclass: a cancel is never the echo of our completion). */
function isPlainLeaseExpired(err: unknown): boolean {
  return err instanceof LeaseExpiredError && err.code === 'LEASE_EXPIRED';
}
