// QueueActor — the live jobs of one (organization, queue), on one thread, changed by nobody else.
//
// Job states held here (terminal jobs leave memory; the store keeps them):
//   provisional  inserted with an idempotency key, commit pending: the insert may lose to an existing key,
//                so it is not claimable until the commit says it went in
//   pending      in `ready`, ordered by priority (high first), then id (UUIDv7: oldest first); in a queue that
//                uses concurrency keys, in `lanes` instead (key-lanes.ts: one heap per key, keys take turns)
//   blocked      a workflow job whose parents have not all completed: pending with dependencies_met false,
//                held in `jobs` but not in `ready` until `release`
//   scheduled    in `scheduled`, ordered by run-at; `tick` moves it to pending when due
//   processing   in `leases`, ordered by lease expiry; `tick` expires it
//
// Messages:
//   enqueue    new job → provisional | pending | scheduled | blocked (a workflow job enqueued blocked);
//              a live job with the same idempotency key → that job, unless the key's window (idempotency_ttl)
//              is over: the key then passes to the new job (the commit frees it in the store);
//              with `debounce`: a job of that debounce key still waiting (scheduled, or pending unblocked) gets
//              the new payload and a run time pushed to now + delay_ms, never past its debounce_until; else a
//              new job scheduled at now + delay_ms
//   enqueueMany  several enqueues in one message (a bulk request), each as above; answers each new id
//   release    blocked → pending (dependencies_met true, feeds waiters); anything else is left alone, so the
//              workflow coordinator may repeat it
//   claim      paused → []; else up to `limit` ready jobs → processing, skipping keys at concurrency_per_key,
//              stopping at max_concurrency or when the rate limit's window is full; none and `wait_ms` → a waiter,
//              fed when a job becomes ready, a processing job stops (limits), or the rate window's next slot comes
//              (the actor's timer: nextWake), never by polling
//   progress   processing + matching live lease → progress stored on the row, job.progress published
//   complete   processing + matching live lease → completed (leaves memory); otherwise LEASE_EXPIRED
//   fail       processing + matching live lease → scheduled after backoff, or deadletter when retries are
//              exhausted or the worker says it is not retryable
//   heartbeat  processing + matching live lease → new expiry; an expired lease is never revived
//   cancel     pending (blocked too) | scheduled | processing → cancelled (a worker holding it then gets LEASE_EXPIRED;
//              job.cancelled names the worker, whose stream or heartbeat is told)
//   tick       due scheduled → pending; due leases → pending with retry_count + 1, or deadletter; a job never
//              started (no claim yet) whose expires_at came → cancelled, last_error 'expired'
//   priority   pending | scheduled → same state, new priority (the ready order changes at once)
//   unclaim    processing under the given lease → pending, as if never claimed (its worker never got it)
//   revive     a terminal job (deadletter | cancelled, read from the store by the caller) → provisional
//              until the commit finds the row still terminal → pending (or blocked, when asked) with
//              retry_count 0
//   queue      create (409 if it exists), pause (parked claims answered []), resume, configure (new limits
//              apply at once: parked keys and waiters are fed again), delete (409 while live jobs remain)
//   explain    any → what holds a live job here now (paused, scheduled, blocked, key or queue at its limit,
//              rate limited, jobs ahead of it, last claim); no change
//
// Bounded memory (settings.window, QUEUE_WINDOW): of its ready jobs the actor holds only the head of the claim
// order, per lane when it uses keys (window.ts). A ready job after the window's bound is written but not held
// (paged out); `refills` says when a window runs low and what to read, `refilled` takes the rows. A request that
// names a paged-out job (cancel, priority, explain, a debounce key, an expiry) is preceded by `adopt`, which
// holds it for that one request (pinned: held, not claimable out of order); `repage` lets it go again after.
// The host runs both around the requests, with the actor's other messages waiting (actor-host.ts).
//
// Heap entries are never removed in place: each job carries a version, bumped on every transition, and an
// entry whose version is old is skipped when it surfaces.
import { AppError, type WireError } from '../../errors.js';
import { Heap } from '../heap.js';
import { leaseId as newLeaseId } from '../ids.js';
import type { CommitOutput, DomainEvent, Effects, ErrorEntry, JobEventName, JobRow, JobState, JobStatus, Progress, QueueState, Reply } from '../records.js';
import { readyEntry, readyOrder, type Entry } from './entry.js';
import { KeyLanes } from './key-lanes.js';
import { RateWindow } from '../rate-window.js';
import { after, ESTIMATE, START, newWin, type Refill, type Win } from './window.js';

/** A queue's rate limit: at most `jobs` handed out in any `per_seconds`. */
export interface QueueRateLimit {
  jobs: number;
  per_seconds: number;
}

const rateWindow = (r: QueueRateLimit, previous: RateWindow | null): RateWindow => new RateWindow(r.jobs, r.per_seconds * 1000, previous);

/**
 * The queue's rate limit as a reply carries it: an object of its own, never the one the actor's state holds (a reply
 * goes to the main thread without a copy when the actors run there, inline-thread.ts).
 */
const rateLimitOf = (q: QueueState | null): QueueRateLimit | null => (q?.rate_limit ? { jobs: q.rate_limit.jobs, per_seconds: q.rate_limit.per_seconds } : null);

export interface QueueSettings {
  /** Backoff unit: min(2^retry_count, 60) units before the next attempt. */
  retryUnitMs: number;
  defaultMaxRetries: number;
  defaultTimeoutSeconds: number;
  /** Ready jobs held per queue (QUEUE_WINDOW); the rest stay in the store. Absent: every ready job is held. */
  window?: number;
  /** Memory the queues of one host share for the rows of new jobs (ROW_CACHE_MB). Absent: no row is kept. */
  rows?: RowBudget;
}

/**
 * The bytes left for kept rows, shared by the queues of one host. A new job's row (its payload included) is kept
 * while this allows, so that its claim is answered from memory: the claim's commit then returns no row
 * (`row_to_json` and its parse were a tenth of PostgreSQL's and of the node's CPU per claim, docs/BENCHMARKS.md).
 * DESIGN's invariant 4 bounds what a queue holds beyond metadata by such a budget.
 */
export class RowBudget {
  constructor(public left: number) {}
}

/** What a kept row is counted as besides its payload's JSON: the row object and its fields. */
const ROW_OVERHEAD = 600;

/** A lane's window is this share of the queue's, and never smaller than this many jobs. */
const LANE_MIN = 8;

type LiveStatus = 'provisional' | 'pending' | 'scheduled' | 'processing';

export interface LiveJob {
  id: string;
  status: LiveStatus;
  priority: number;
  retry_count: number;
  max_retries: number;
  timeout_seconds: number;
  last_error: string | null;
  scheduled_at: number | null;
  started_at: number | null;
  /** When the job last fell due (became claimable): job.started reports it, for the wait-time histogram. */
  due_at: number;
  assigned_worker_id: string | null;
  lease_id: string | null;
  lease_expires_at: number | null;
  /** Length of the current lease, which a heartbeat without a duration renews. */
  lease_ms: number;
  idempotency_key: string | null;
  /** The job has a completion callback: its terminal events say so (`callback: true`) for the webhook sender. */
  callback: boolean;
  /** The workflow the job belongs to: its end is reported with it (see finished). */
  workflow_id: string | null;
  /** A pending workflow job whose parents have not all completed: not in `ready`. */
  blocked: boolean;
  concurrency_key: string | null;
  idempotency_expires_at: number | null;
  debounce_key: string | null;
  debounce_until: number | null;
  /** Not started (claimed) by this instant, the job is cancelled as expired; absent or null: never. */
  expires_at?: number | null;
  ver: number;
  /** The window counting this job among its held ready jobs (null: not held ready). */
  win?: Win | null;
  /** A paged-out job held for the one request that named it (see adopt). */
  pinned?: boolean;
  /** The row as inserted, kept while nothing but a claim has changed it (see RowBudget); `rowBytes` its count. */
  row?: JobRow | null;
  rowBytes?: number;
}

/**
 * Every LiveJob is made here, each field in one order and none added later, so that every job shares one object
 * shape: the ready heap compares jobs millions of times, and jobs of four shapes (made by enqueue, rebuild, refill
 * and revive, with `win` and `pinned` added on first placing) made those comparisons 2–3× dearer (docs/BENCHMARKS.md).
 */
export function liveJobOf(r: Omit<LiveJob, 'ver' | 'win' | 'pinned' | 'row' | 'rowBytes'>): LiveJob {
  return {
    id: r.id,
    status: r.status,
    priority: r.priority,
    retry_count: r.retry_count,
    max_retries: r.max_retries,
    timeout_seconds: r.timeout_seconds,
    last_error: r.last_error,
    scheduled_at: r.scheduled_at,
    started_at: r.started_at,
    due_at: r.due_at,
    assigned_worker_id: r.assigned_worker_id,
    lease_id: r.lease_id,
    lease_expires_at: r.lease_expires_at,
    lease_ms: r.lease_ms,
    idempotency_key: r.idempotency_key,
    callback: r.callback,
    workflow_id: r.workflow_id,
    blocked: r.blocked,
    concurrency_key: r.concurrency_key,
    idempotency_expires_at: r.idempotency_expires_at,
    debounce_key: r.debounce_key,
    debounce_until: r.debounce_until,
    expires_at: r.expires_at ?? null,
    ver: 0,
    win: null,
    pinned: false,
    row: null,
    rowBytes: 0,
  };
}

export interface EnqueueInput {
  payload: unknown;
  priority: number;
  max_retries: number | null;
  timeout_seconds: number | null;
  scheduled_at: number | null;
  idempotency_key: string | null;
  tags: Record<string, string>;
  completion_webhook: string | null;
  completion_webhook_secret: string | null;
  /** Workflow jobs: the id is chosen by the coordinator, which writes its graph before the jobs exist. */
  id?: string;
  workflow_id?: string | null;
  /** Enqueue as blocked: pending with dependencies_met false, claimable only after `release`. */
  blocked?: boolean;
  concurrency_key?: string | null;
  /** The idempotency key frees itself this long after the job's creation. */
  idempotency_ttl_secs?: number | null;
  debounce?: Debounce | null;
  /** Not started by this instant (epoch ms), the job is cancelled as expired. */
  expires_at?: number | null;
  /** The payload's size as JSON, measured by the caller: the job's row may then be kept for its claim (RowBudget). */
  payload_bytes?: number;
}

export interface Debounce {
  key: string;
  delay_ms: number;
  /** How far past the first job of the burst the run may be pushed; null: no bound. */
  max_delay_ms: number | null;
}

export type EnqueueReply =
  /** The new row without its payload, which the caller already has (no need to copy it back across threads). */
  | { created: true; job: Omit<JobRow, 'payload'> }
  /** The key belongs to an existing job, which the caller reads from the store. */
  | { created: false; idempotency_key: string }
  /** A waiting job of the same debounce key took the payload: the caller reads it from the store. */
  | { created: false; debounced: true; id: string };

/** What adding one job came to: the new row, or the job that holds its key or took its payload. */
type Added = { created: true; row: JobRow } | Exclude<EnqueueReply, { created: true }>;

/** One job of a bulk enqueue: its new id, the job that holds its key or took its payload, or why it was refused. */
export type EnqueueOutcome = { created: true; id: string } | Exclude<EnqueueReply, { created: true }> | { created: false; error: WireError };

export interface ClaimInput {
  worker_id: string;
  limit: number;
  lease_duration_secs: number | null;
}

export interface LeaseInput {
  id: string;
  worker_id: string;
  lease_id: string | null;
}

export type CompleteInput = LeaseInput & { result: unknown };
export interface CompleteReply {
  id: string;
  status: JobStatus;
  completed_at: number;
}

/** One item of a batch acknowledgement: completed, or why not (a stale lease fails only its own item). */
export type CompleteOutcome = ({ ok: true } & CompleteReply) | { ok: false; id: string; error: WireError };

export type FailInput = LeaseInput & { error: string; retryable: boolean };
export interface FailReply {
  id: string;
  status: JobStatus;
  retry_count: number;
  max_retries: number;
  scheduled_at: number | null;
  last_error: string;
}

export type HeartbeatInput = LeaseInput & { lease_duration_secs: number | null };
export interface HeartbeatReply {
  id: string;
  lease_id: string | null;
  lease_expires_at: number | null;
}

export interface Waiter {
  input: ClaimInput;
  respond(reply: Reply<ClaimReply>): void;
  /** The node that forwarded the claim, when another did. */
  via?: string;
}

export type ClaimReply = { jobs: Record<string, unknown>[] };
/** A job a claim took, and the lease it took it under. */
interface Taken {
  id: string;
  lease: string;
  /** The reply's row, made from the job's kept row (null: the commit returns it). */
  row: ClaimReply['jobs'][number] | null;
}

export interface QueueConfig {
  max_retries: number | null;
  lease_duration_secs: number | null;
  concurrency_per_key: number | null;
  max_concurrency: number | null;
  rate_limit: QueueRateLimit | null;
}

const NO_CONFIG: QueueConfig = { max_retries: null, lease_duration_secs: null, concurrency_per_key: null, max_concurrency: null, rate_limit: null };

export interface ProgressInput extends LeaseInput {
  progress: number;
  message: string | null;
  data: unknown;
}

/** What the actor knows of why a job is not running; the caller adds what the store knows (explain). */
export type ExplainFacts =
  | { live: false }
  | {
      live: true;
      status: 'provisional' | 'pending' | 'scheduled' | 'processing';
      blocked: boolean;
      priority: number;
      scheduled_at: number | null;
      retry_count: number;
      max_retries: number;
      last_error: string | null;
      paused: boolean;
      paused_reason: string | null;
      paused_at: number | null;
      concurrency_key: string | null;
      concurrency_per_key: number | null;
      /** Processing jobs of the same key. */
      key_holders: string[];
      max_concurrency: number | null;
      processing: number;
      rate_limit: QueueRateLimit | null;
      /** The next instant the rate limit lets a job out, when it holds them back now. */
      rate_next_slot: number | null;
      /** Claimable jobs that a claim takes before this one (higher priority, or equal and older). */
      ahead: number;
      /**
       * The job is paged out of the actor's window: `ahead` counts only the held jobs, and the caller adds the
       * paged-out ones before it (the store knows them).
       */
      paged: boolean;
      last_claim_at: number | null;
      loaded_at: number;
    };

export interface QueueView {
  name: string;
  paused: boolean;
  paused_reason: string | null;
  paused_at: number | null;
  config: QueueConfig;
  created_at: number;
  updated_at: number;
}

/** What the caller read of a terminal job to revive it. */
export interface ReviveInput {
  id: string;
  priority: number;
  max_retries: number;
  timeout_seconds: number;
  last_error: string | null;
  idempotency_key: string | null;
  callback: boolean;
  workflow_id?: string | null;
  /** Revive as blocked (a workflow job whose parents have not all completed). */
  blocked?: boolean;
  concurrency_key?: string | null;
}

export type ReviveOutcome = { id: string; revived: true; job: Record<string, unknown> } | { id: string; revived: false; reason: string };

export const backoffMs = (retryCount: number, unitMs: number): number => Math.min(2 ** retryCount, 60) * unitMs;

/** Marks a terminal event of a job with a completion callback; nothing for the others. */
const callbackOf = (job: LiveJob): { callback?: true } => (job.callback ? { callback: true } : {});

const earliest = (a: Entry, b: Entry): boolean => a.at < b.at;

export class QueueActor {
  readonly jobs = new Map<string, LiveJob>();
  private readonly keys = new Map<string, LiveJob>();
  private readonly ready = new Heap<Entry>(readyOrder);
  private readonly scheduled = new Heap<Entry>(earliest);
  private readonly leases = new Heap<Entry>(earliest);
  /**
   * Jobs with an expires_at, by it. Unlike the other heaps an entry outlives the job's transitions (pending ↔
   * scheduled, blocked → pending): it is stale only when the job left memory or was claimed (expirable).
   */
  private readonly expiries = new Heap<Entry>(earliest);
  /** Replaces `ready` once the queue sees a concurrency key or a per-key limit; queues without keys never pay for it. */
  private lanes: KeyLanes | null = null;
  private rate: RateWindow | null = null;
  /** Processing jobs (max_concurrency). */
  private processing = 0;
  /** The waiting job of each debounce key. */
  private readonly debounces = new Map<string, LiveJob>();
  private waiters: Waiter[] = [];
  private queue: QueueState | null;
  /** The window of the ready jobs while the queue uses no lanes (then the window of the lane without a key). */
  private readonly win: Win = newWin(null);
  /** Paged-out jobs that never ran, by debounce key: a new job of the key takes the payload of that one. */
  private readonly pagedDebounces = new Map<string, string>();
  /** Paged-out jobs with an expiry (id, instant): the timer adopts them when it comes. */
  private readonly pagedExpiries = new Heap<{ id: string; at: number }>((a, b) => a.at < b.at);
  /** Jobs adopted for the request running now (see adopt). */
  private pinned: LiveJob[] = [];
  /** Windows that may have run low (below half) or out (none held) while jobs wait in the store; pruned lazily. */
  private readonly low = new Set<Win>();
  private readonly starved = new Set<Win>();
  /**
   * Windows whose refill the host is reading while the actor serves on, each with the jobs paged out of it since
   * the read began: the read may have missed their writes, so `refilled` holds those before its new bound itself.
   */
  private readonly reading = new Map<Win, LiveJob[] | null>();
  /**
   * A write this actor made did not find the row in the state it believed (a claim of a row that was not pending):
   * its memory no longer matches the store, and its host rebuilds it from rows. Fencing makes this unreachable;
   * the check is the second line against two writers of one queue.
   */
  diverged = false;
  private lastClaimAt: number | null = null;

  constructor(
    readonly organizationId: string,
    readonly name: string,
    private readonly settings: QueueSettings,
    queue: QueueState | null,
    live: Iterable<Omit<LiveJob, 'ver'>> = [],
    /** When the actor was built: explain's "no claim since" counts from here when none came since. */
    readonly loadedAt = 0,
  ) {
    this.queue = queue;
    if (queue?.concurrency_per_key != null) this.useLanes();
    if (queue?.rate_limit) this.rate = rateWindow(queue.rate_limit, null);
    for (const row of live) {
      const job = liveJobOf(row);
      this.place(job);
      if (job.status === 'processing') this.started(job);
      this.armExpiry(job);
      // Only a job that never ran still absorbs its burst: a claim ends the burst, and a retry does not reopen it.
      if (job.debounce_key !== null && job.status !== 'processing' && job.started_at === null) this.debounces.set(job.debounce_key, job);
    }
  }

  get paused(): boolean {
    return this.queue?.paused ?? false;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  // --- the window (window.ts) ---

  /**
   * A rebuilt actor learns what its store holds beyond the jobs it was built with: the ready jobs per key, all
   * paged out until `refilled` brings their head in, and the ready jobs it must find without holding them.
   * `unkeyed` null: ready jobs without a key may wait, their count comes later (`counted`).
   */
  page(
    ready: Array<{ key: string | null; count: number }>,
    marks: Array<{ id: string; expires_at: number | null; debounce_key: string | null }>,
    unkeyed: 'unknown' | 'none' = 'none',
  ): void {
    if (ready.some((r) => r.key !== null && r.count > 0)) this.useLanes();
    for (const { key, count } of ready) {
      if (count <= 0) continue;
      const w = this.windowOf(key);
      w.paged += count;
      w.bound = START;
      this.note(w);
    }
    if (unkeyed === 'unknown') {
      const w = this.windowOf(null);
      w.paged += ESTIMATE;
      w.estimated = true;
      w.bound = START;
      this.note(w);
    }
    for (const m of marks) {
      if (this.jobs.has(m.id)) continue;
      if (m.expires_at !== null) this.pagedExpiries.push({ id: m.id, at: m.expires_at });
      if (m.debounce_key !== null) this.pagedDebounces.set(m.debounce_key, m.id);
    }
  }

  /** The count of ready jobs without a key a rebuild read after its window: `paged` becomes exact. */
  counted(n: number): void {
    const w = this.windowOf(null);
    if (!w.estimated) return;
    w.estimated = false;
    // The count is read before any write of this actor can land (the host asks it before the first message runs),
    // so count + changes since is exact; were it not, a window that still has a bound keeps 1, and the refill that
    // finds the end makes it exact (never 0 while jobs could wait unseen in the store).
    w.paged = n + (w.paged - ESTIMATE);
    if (w.paged <= 0) w.paged = w.bound !== null ? 1 : 0;
  }

  /** Jobs in the store not held here: ready jobs after a window's bound (at least 1 for a window not counted yet). */
  get pagedOut(): number {
    let n = 0;
    for (const w of this.windows()) n += w.estimated ? Math.max(1, w.paged - ESTIMATE) : w.paged;
    return n;
  }

  /** A window of the rebuild still waits for its count. */
  get estimating(): boolean {
    return this.windowOf(null).estimated;
  }

  /** Ready jobs held now, in every window. */
  get heldReady(): number {
    let n = 0;
    for (const w of this.windows()) n += w.held;
    return n;
  }

  /**
   * What to read: `due`, only when a window ran below half its size while jobs wait in the store, and then every
   * window with room is topped up at once (lanes run low together as keys take turns: one read for all of them,
   * not one each); `room`, every window with room (a refill goes on until the windows are full, so the next one
   * comes after half a window of claims, not after one). At most `slice` rows a window (the host reads in slices so
   * that no other actor of the thread waits long).
   */
  refills(slice: number, mode: 'due' | 'room' = 'due'): Refill[] {
    const cap = this.cap();
    if (mode === 'due') {
      let due = false;
      for (const w of this.low) {
        if (w.paged > 0 && w.held < Math.ceil(cap / 2)) {
          due = true;
          break;
        }
        this.low.delete(w);
      }
      if (!due) return [];
    }
    const out: Refill[] = [];
    for (const w of this.windows()) {
      if (w.paged <= 0 || w.held >= cap) continue;
      out.push({ keyed: this.lanes !== null, key: w.key, after: w.bound === START ? null : w.bound, limit: Math.max(1, Math.min(slice, cap - w.held)) });
    }
    return out;
  }

  /**
   * The host reads these refills now (after the actor's earlier writes are committed): from here until `refilled`,
   * the jobs the windows page out are recorded, since the read may or may not see their writes.
   */
  beginRefill(refills: Refill[]): void {
    for (const r of refills) this.reading.set(this.windowOf(r.key), []);
  }

  /** A window holds nothing while jobs wait in the store: a claim now would find nothing (it waits for the refill). */
  get starving(): boolean {
    return this.isStarved();
  }

  /**
   * The rows a refill read, in claim order after its position: held now, with the jobs paged out while it was read
   * that come before its last row; the window's bound moves past them. A refill whose window changed shape meanwhile
   * (the queue took to lanes: `reading` null) is dropped: nothing moved, and the next refill reads again.
   */
  refilled(refill: Refill, rows: Iterable<Omit<LiveJob, 'ver'>>, fx: Effects): void {
    const w = this.windowOf(refill.key);
    // Recorded since beginRefill (none when the caller read with nothing else running, as a pure test does).
    const late = this.reading.get(w);
    this.reading.delete(w);
    if (late === null) return;
    const read = [...rows];
    const last = read[read.length - 1];
    // Fewer rows than asked: the store had no more after the position, so nothing is paged out any longer.
    w.bound = read.length < refill.limit ? null : { priority: last!.priority, id: last!.id };
    if (w.bound === null) {
      w.paged = 0;
      w.estimated = false;
    }
    // A job paged out meanwhile is newer than its row if the read saw one; those after the new bound stay paged out
    // (their writes were committed before any later refill reads).
    const bound = w.bound;
    const mine = new Map((late ?? []).filter((j) => bound === null || !after(j, bound)).map((j) => [j.id, j]));
    const list = [...read.filter((r) => !mine.has(r.id)), ...mine.values()];
    for (const row of list) {
      if (this.jobs.has(row.id) || row.status !== 'pending' || row.blocked) continue;
      if (w.bound !== null) w.paged = Math.max(0, w.paged - 1);
      this.hold(row).pinned = false;
    }
    for (const row of list) {
      const job = this.jobs.get(row.id);
      if (job && job.ver === 0) this.place(job);
    }
    this.feedWaiters(fx);
  }

  /** Of the ids a request names, those this actor may have paged out (not held while some are). */
  unheld(ids: Iterable<string>): string[] {
    if (this.pagedOut === 0) return [];
    return [...ids].filter((id) => !this.jobs.has(id));
  }

  /** The paged-out jobs that enqueues with these debounce keys would update (the waiting job of each key). */
  debouncedUnheld(inputs: Iterable<EnqueueInput>): string[] {
    const ids: string[] = [];
    for (const i of inputs) {
      const key = i.debounce?.key;
      if (key === undefined) continue;
      const held = this.debounces.get(key);
      const id = this.pagedDebounces.get(key);
      if (id !== undefined && !(held && this.jobs.get(held.id) === held) && !this.jobs.has(id)) ids.push(id);
    }
    return ids;
  }

  /** Paged-out jobs whose expiry came: the host adopts them before the tick cancels them. */
  dueUnheld(now: number): string[] {
    const ids: string[] = [];
    for (let e = this.pagedExpiries.peek(); e && e.at <= now; e = this.pagedExpiries.peek()) {
      this.pagedExpiries.pop();
      if (!this.jobs.has(e.id)) ids.push(e.id);
    }
    return ids;
  }

  /**
   * Paged-out jobs read back for one request that names them: held (pinned, out of the ready order) until
   * `repage`. Rows that are no longer ready jobs of this queue, or that are held already, are left alone.
   */
  adopt(rows: Iterable<Omit<LiveJob, 'ver'>>): void {
    for (const row of rows) {
      if (this.jobs.has(row.id) || row.status !== 'pending' || row.blocked) continue;
      const w = this.windowOf(row.concurrency_key);
      w.paged = Math.max(0, w.paged - 1);
      const job = this.hold(row);
      job.pinned = true;
      this.pinned.push(job);
    }
  }

  /** After the request: adopted jobs it left ready go back to the store (its writes describe them already). */
  repage(): void {
    if (this.pinned.length === 0) return;
    for (const job of this.pinned) {
      if (job.pinned && this.jobs.get(job.id) === job) {
        job.pinned = false;
        this.pageOut(job, this.windowOf(job.concurrency_key));
      }
    }
    this.pinned = [];
  }

  /** A row read back from the store, held (not placed: the caller does). */
  private hold(row: Omit<LiveJob, 'ver'>): LiveJob {
    const job = liveJobOf(row);
    this.jobs.set(job.id, job);
    if (job.idempotency_key !== null) this.keys.set(job.idempotency_key, job);
    if (job.debounce_key !== null && job.started_at === null) {
      this.debounces.set(job.debounce_key, job);
      if (this.pagedDebounces.get(job.debounce_key) === job.id) this.pagedDebounces.delete(job.debounce_key);
    }
    this.armExpiry(job);
    return job;
  }

  enqueue(input: EnqueueInput, fx: Effects): Reply<EnqueueReply> {
    const reply = this.add(input, fx);
    return (out) => {
      const r = reply(out);
      if (!r.created) return r;
      // The row without its payload, which the caller already has (no need to copy it back across threads).
      const { payload: _sent, ...job } = r.row;
      return { created: true, job };
    };
  }

  /**
   * Many jobs in one message (a bulk enqueue): each added as `enqueue` adds it, in order. The answer is slim, the
   * id of each new job (or why none was made), since the caller only lists them.
   */
  enqueueMany(inputs: EnqueueInput[], fx: Effects): Reply<EnqueueOutcome[]> {
    const replies: Array<Reply<Added> | AppError> = [];
    for (const input of inputs) {
      try {
        replies.push(this.add(input, fx));
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        replies.push(err);
      }
    }
    return (out) =>
      replies.map((r): EnqueueOutcome => {
        if (r instanceof AppError) return { created: false, error: r.toWire() };
        const a = r(out);
        return a.created ? { created: true, id: a.row.id } : a;
      });
  }

  private add(input: EnqueueInput, fx: Effects): Reply<Added> {
    const key = input.idempotency_key;
    const now = fx.now;
    if (key !== null) {
      const existing = this.keys.get(key);
      if (existing && (existing.status === 'provisional' || existing.idempotency_expires_at === null || existing.idempotency_expires_at > now)) {
        return () => ({ created: false, idempotency_key: key });
      }
      // The key's window is over: it passes to the new job, in the commit of the new job's insert.
      if (existing) {
        this.keys.delete(key);
        existing.idempotency_key = null;
        this.dropRow(existing);
        fx.write({ kind: 'update', id: existing.id, state: this.state(existing, now), dropKey: true });
      }
    }
    const debounce = input.debounce ?? null;
    if (debounce !== null) {
      const waiting = this.debounces.get(debounce.key);
      if (waiting && this.jobs.get(waiting.id) === waiting && (waiting.status === 'scheduled' || (waiting.status === 'pending' && !waiting.blocked))) {
        return this.debounced(waiting, debounce, input.payload, fx);
      }
    }
    this.ensureQueue(fx);
    const id = input.id ?? fx.newJobId();
    const blocked = input.blocked ?? false;
    const scheduledAt = debounce !== null ? now + debounce.delay_ms : input.scheduled_at;
    const delayed = scheduledAt !== null && scheduledAt > now;
    const row: JobRow = {
      id,
      organization_id: this.organizationId,
      queue_name: this.name,
      status: delayed ? 'scheduled' : 'pending',
      payload: input.payload,
      result: null,
      priority: input.priority,
      retry_count: 0,
      max_retries: input.max_retries ?? this.queue?.max_retries ?? this.settings.defaultMaxRetries,
      last_error: null,
      errors: [],
      tags: input.tags,
      idempotency_key: key,
      timeout_seconds: input.timeout_seconds ?? this.queue?.lease_duration_secs ?? this.settings.defaultTimeoutSeconds,
      scheduled_at: scheduledAt,
      created_at: now,
      started_at: null,
      completed_at: null,
      updated_at: now,
      assigned_worker_id: null,
      lease_id: null,
      lease_expires_at: null,
      workflow_id: input.workflow_id ?? null,
      dependencies_met: !blocked,
      completion_webhook: input.completion_webhook,
      completion_webhook_secret: input.completion_webhook_secret,
      concurrency_key: input.concurrency_key ?? null,
      idempotency_expires_at: key !== null && input.idempotency_ttl_secs != null ? now + input.idempotency_ttl_secs * 1000 : null,
      debounce_key: debounce?.key ?? null,
      debounce_until: debounce !== null && debounce.max_delay_ms !== null ? now + debounce.max_delay_ms : null,
      expires_at: input.expires_at ?? null,
    };
    const job = liveJobOf({
      id,
      status: key !== null ? 'provisional' : row.status as LiveStatus,
      priority: row.priority,
      retry_count: 0,
      max_retries: row.max_retries,
      timeout_seconds: row.timeout_seconds,
      last_error: null,
      scheduled_at: row.scheduled_at,
      started_at: null,
      due_at: delayed ? scheduledAt! : now,
      assigned_worker_id: null,
      lease_id: null,
      lease_expires_at: null,
      lease_ms: row.timeout_seconds * 1000,
      idempotency_key: key,
      callback: input.completion_webhook !== null,
      workflow_id: row.workflow_id,
      blocked,
      concurrency_key: row.concurrency_key,
      idempotency_expires_at: row.idempotency_expires_at,
      debounce_key: row.debounce_key,
      debounce_until: row.debounce_until,
      expires_at: row.expires_at ?? null,
    });
    this.jobs.set(id, job);
    if (key !== null) this.keys.set(key, job);
    if (debounce !== null) this.debounces.set(debounce.key, job);
    fx.write({ kind: 'insert', job: row, conflictKey: key !== null });
    this.publish(fx, 'job.created', job.id, row.status, { priority: row.priority, scheduled_at: row.scheduled_at }, key !== null);

    if (key === null) {
      this.place(job);
      this.keep(job, row, input.payload_bytes);
      this.armExpiry(job);
      this.feedWaiters(fx);
      return () => ({ created: true, row });
    }
    return (out) => {
      if (this.jobs.get(id) !== job) return { created: false, idempotency_key: key };
      if (!out.inserted.has(id)) {
        // Another thread's job holds the key: this one never existed.
        this.forget(job);
        return { created: false, idempotency_key: key };
      }
      job.status = row.status as LiveStatus;
      this.place(job);
      this.keep(job, row, input.payload_bytes);
      this.armExpiry(job);
      this.feedWaiters(fx);
      return { created: true, row };
    };
  }

  /** Returns null when nothing is claimable and the caller may wait (see addWaiter). */
  claim(input: ClaimInput, fx: Effects): Reply<ClaimReply> | null {
    if (this.paused) return () => ({ jobs: [] });
    this.lastClaimAt = fx.now;
    // A claim at the very instant a job falls due must see it, whether or not the thread's timer fired yet.
    this.tick(fx);
    const taken = this.take(input, fx);
    if (taken.length === 0) return null;
    return (out) => this.claimed(taken, out);
  }

  addWaiter(w: Waiter): void {
    this.waiters.push(w);
  }

  removeWaiter(w: Waiter): boolean {
    const i = this.waiters.indexOf(w);
    if (i < 0) return false;
    this.waiters.splice(i, 1);
    return true;
  }

  /** Hands every waiter its jobs; used when evicted (they get nothing) and when jobs become ready. */
  drainWaiters(): Waiter[] {
    const all = this.waiters;
    this.waiters = [];
    return all;
  }

  /** Takes out the waiters of claims that node `via` forwarded (it is stopping). */
  waitersVia(via: string): Waiter[] {
    const out = this.waiters.filter((w) => w.via === via);
    if (out.length > 0) this.waiters = this.waiters.filter((w) => w.via !== via);
    return out;
  }

  complete(input: CompleteInput, fx: Effects): Reply<CompleteReply> {
    const job = this.leased(input, fx.now);
    const now = fx.now;
    this.forget(job);
    this.stopped(job);
    fx.write({
      kind: 'update',
      id: job.id,
      state: { ...this.state(job, now), status: 'completed', completed_at: now, lease_id: null, lease_expires_at: null },
      result: input.result,
    });
    this.finished(job, 'completed', fx);
    this.publish(fx, 'job.completed', job.id, 'completed', { worker_id: input.worker_id, result: input.result ?? null, ...callbackOf(job) }, false, job.started_at);
    this.feedWaiters(fx);
    return () => ({ id: job.id, status: 'completed', completed_at: now });
  }

  /**
   * A batch acknowledgement: each item completed as `complete` would, in order; an item whose lease is stale
   * (or whose job is not here) is reported as such and the others go on.
   */
  completeMany(items: CompleteInput[], fx: Effects): Reply<CompleteOutcome[]> {
    const replies: Array<Reply<CompleteReply> | AppError> = [];
    for (const item of items) {
      try {
        replies.push(this.complete(item, fx));
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        replies.push(err);
      }
    }
    return (out) =>
      replies.map((r, i) => (r instanceof AppError ? { ok: false, id: items[i]!.id, error: r.toWire() } : { ok: true, ...r(out) }));
  }

  fail(input: FailInput, fx: Effects): Reply<FailReply> {
    const job = this.leased(input, fx.now);
    const now = fx.now;
    const entry: ErrorEntry = { attempt: job.retry_count + 1, error: input.error, at: new Date(now).toISOString() };
    const claimedAt = job.started_at;
    this.stopped(job);
    job.last_error = input.error;
    job.lease_id = null;
    job.lease_expires_at = null;
    job.assigned_worker_id = null;
    let status: JobStatus;
    if (input.retryable && job.retry_count < job.max_retries) {
      job.scheduled_at = now + backoffMs(job.retry_count, this.settings.retryUnitMs);
      job.due_at = job.scheduled_at;
      job.retry_count++;
      job.status = 'scheduled';
      status = 'scheduled';
      this.place(job);
      fx.write({ kind: 'update', id: job.id, state: this.state(job, now), errors: [entry] });
    } else {
      status = 'deadletter';
      this.forget(job);
      fx.write({ kind: 'update', id: job.id, state: { ...this.state(job, now), status, completed_at: now }, errors: [entry] });
      this.finished(job, 'deadletter', fx);
    }
    this.publish(fx, 'job.failed', job.id, status, {
      worker_id: input.worker_id,
      error: input.error,
      retry_count: job.retry_count,
      will_retry: status === 'scheduled',
      next_run_at: status === 'scheduled' ? job.scheduled_at : null,
      ...(status === 'deadletter' ? callbackOf(job) : {}),
    }, false, claimedAt);
    this.feedWaiters(fx);
    const reply: FailReply = {
      id: job.id,
      status,
      retry_count: job.retry_count,
      max_retries: job.max_retries,
      scheduled_at: status === 'scheduled' ? job.scheduled_at : null,
      last_error: input.error,
    };
    return () => reply;
  }

  heartbeat(input: HeartbeatInput, fx: Effects): Reply<HeartbeatReply> {
    const job = this.leased(input, fx.now);
    const now = fx.now;
    if (input.lease_duration_secs !== null) job.lease_ms = input.lease_duration_secs * 1000;
    job.lease_expires_at = now + job.lease_ms;
    this.place(job);
    fx.write({ kind: 'update', id: job.id, state: this.state(job, now) });
    const reply: HeartbeatReply = { id: job.id, lease_id: job.lease_id, lease_expires_at: job.lease_expires_at };
    return () => reply;
  }

  /** The lease holder's progress report: stored on the row (not in memory) and published as job.progress. */
  progress(input: ProgressInput, fx: Effects): Reply<{ id: string } & Progress> {
    const job = this.leased(input, fx.now);
    const now = fx.now;
    const progress: Progress = { progress: input.progress, message: input.message, data: input.data ?? null, at: new Date(now).toISOString() };
    fx.write({ kind: 'update', id: job.id, state: this.state(job, now), progress });
    this.publish(fx, 'job.progress', job.id, 'processing', { worker_id: input.worker_id, ...progress });
    return () => ({ id: job.id, ...progress });
  }

  /** Null when the job is not live here: the caller tells "terminal" from "unknown" with the store. */
  cancel(id: string, fx: Effects): Reply<{ id: string; status: JobStatus }> | null {
    const job = this.jobs.get(id);
    if (!job || job.status === 'provisional') return null;
    this.cancelled(job, fx);
    return () => ({ id, status: 'cancelled' });
  }

  /** A live job cancelled: by a request, or by its expiry (`expired`: it was never claimed, so never running). */
  private cancelled(job: LiveJob, fx: Effects, expired = false): void {
    const id = job.id;
    const now = fx.now;
    if (expired) job.last_error = 'expired';
    const claimedAt = job.status === 'processing' ? job.started_at : null;
    const wasRunning = job.status === 'processing';
    const worker = job.assigned_worker_id;
    this.forget(job);
    if (wasRunning) this.stopped(job);
    fx.write({
      kind: 'update',
      id,
      state: { ...this.state(job, now), status: 'cancelled', completed_at: now, lease_id: null, lease_expires_at: null },
    });
    this.finished(job, 'cancelled', fx);
    // A running job's worker is told through this event (its stream, its next heartbeat answers JOB_CANCELLED).
    const data = wasRunning ? { worker_id: worker, was_processing: true } : expired ? { reason: 'expired' } : undefined;
    this.publish(fx, 'job.cancelled', id, 'cancelled', data, false, claimedAt);
    if (wasRunning) this.feedWaiters(fx);
  }

  /**
   * Unblocks workflow jobs whose parents all completed. Ids that are not blocked here (already released,
   * cancelled, finished, or another queue's) are skipped: the coordinator repeats releases after a crash.
   */
  release(ids: string[], fx: Effects): Reply<{ released: string[] }> {
    const now = fx.now;
    const released: string[] = [];
    for (const id of ids) {
      const job = this.jobs.get(id);
      if (!job || job.status !== 'pending' || !job.blocked) continue;
      job.blocked = false;
      job.due_at = now;
      this.place(job);
      fx.write({ kind: 'update', id, state: this.state(job, now) });
      released.push(id);
    }
    if (released.length > 0) this.feedWaiters(fx);
    return () => ({ released });
  }

  /**
   * Gives back jobs claimed for a worker that was gone before it got them (a long poll whose client left, a
   * cancelled gRPC stream): each job still under that very lease is pending again at once, as if never claimed
   * (same retry count), instead of waiting out its lease and losing an attempt.
   */
  unclaim(items: Array<{ id: string; lease_id: string }>, fx: Effects): Reply<{ unclaimed: string[] }> {
    const now = fx.now;
    const unclaimed: string[] = [];
    for (const { id, lease_id } of items) {
      const job = this.jobs.get(id);
      if (!job || job.status !== 'processing' || job.lease_id !== lease_id) continue;
      this.stopped(job);
      job.status = 'pending';
      job.assigned_worker_id = null;
      job.lease_id = null;
      job.lease_expires_at = null;
      job.started_at = null;
      this.place(job);
      // It never reached a worker: its expiry holds again.
      this.armExpiry(job);
      fx.write({ kind: 'update', id, state: this.state(job, now) });
      unclaimed.push(id);
    }
    if (unclaimed.length > 0) this.feedWaiters(fx);
    return () => ({ unclaimed });
  }

  /** Null when the job is not live here (the caller tells terminal from unknown with the store). */
  setPriority(id: string, priority: number, fx: Effects): Reply<{ id: string; status: JobStatus; priority: number }> | null {
    const job = this.jobs.get(id);
    if (!job || job.status === 'provisional') return null;
    if (job.status === 'processing') {
      throw new AppError('JOB_NOT_LIVE', 'The job is processing; only pending or scheduled jobs can change priority', {
        job_status: 'processing',
      });
    }
    job.priority = priority;
    this.place(job);
    fx.write({ kind: 'update', id, state: this.state(job, fx.now) });
    const status = job.status;
    return () => ({ id, status, priority });
  }

  /**
   * Brings terminal jobs back as pending with a fresh retry budget. The actor never held them, so the write is
   * conditional on the row still being in one of `from` (a purge may have won), and the job stays unclaimable
   * until the commit says it matched.
   */
  revive(inputs: ReviveInput[], from: JobStatus[], fx: Effects): Reply<ReviveOutcome[]> {
    const now = fx.now;
    const revived: LiveJob[] = [];
    const outcomes: Array<ReviveOutcome | LiveJob> = inputs.map((input) => {
      if (this.jobs.has(input.id)) return { id: input.id, revived: false, reason: 'the job is already live' };
      const job = liveJobOf({
        id: input.id,
        status: 'provisional',
        priority: input.priority,
        retry_count: 0,
        max_retries: input.max_retries,
        timeout_seconds: input.timeout_seconds,
        last_error: input.last_error,
        scheduled_at: null,
        started_at: null,
        due_at: now,
        assigned_worker_id: null,
        lease_id: null,
        lease_expires_at: null,
        lease_ms: input.timeout_seconds * 1000,
        idempotency_key: input.idempotency_key,
        callback: input.callback,
        workflow_id: input.workflow_id ?? null,
        blocked: input.blocked ?? false,
        concurrency_key: input.concurrency_key ?? null,
        // A revived job keeps its key under the store's rule (the row's expiry is not read back): held while live.
        idempotency_expires_at: null,
        debounce_key: null,
        debounce_until: null,
        expires_at: null,
      });
      this.jobs.set(job.id, job);
      // A retry is another chance to run: an expiry of the first one no longer holds.
      fx.write({ kind: 'update', id: job.id, state: { ...this.state(job, now), status: 'pending' }, returning: true, onlyFrom: from, clearExpiry: true });
      revived.push(job);
      return job;
    });
    if (revived.length > 0) this.ensureQueue(fx);
    return (out) => {
      const result = outcomes.map((o): ReviveOutcome => {
        if (!('ver' in o)) return o;
        const row = out.rows.get(o.id);
        if (this.jobs.get(o.id) !== o) return { id: o.id, revived: false, reason: 'the job changed meanwhile' };
        if (!row) {
          this.forget(o);
          return { id: o.id, revived: false, reason: `the job is no longer ${from.join(' or ')}` };
        }
        o.status = 'pending';
        this.place(o);
        return { id: o.id, revived: true, job: row };
      });
      this.feedWaiters(fx);
      return result;
    };
  }

  // --- the queue itself ---

  createQueue(config: Partial<QueueConfig>, fx: Effects): Reply<QueueView> {
    if (this.queue) throw new AppError('QUEUE_EXISTS', `Queue '${this.name}' already exists`);
    this.ensureQueue(fx, config);
    return this.viewReply();
  }

  pause(reason: string | null, fx: Effects): Reply<QueueView> {
    const q = this.existing();
    this.writeQueue(fx, { ...q, paused: true, paused_reason: reason, paused_at: q.paused ? q.paused_at : fx.now });
    fx.emit({ type: 'queue', event: 'queue.paused', organization_id: this.organizationId, queue_name: this.name, at: fx.now, data: { reason } });
    // Parked claims would wait in vain: they are answered now, empty.
    for (const w of this.drainWaiters()) w.respond(() => ({ jobs: [] }));
    return this.viewReply();
  }

  resume(fx: Effects): Reply<QueueView> {
    const q = this.existing();
    this.writeQueue(fx, { ...q, paused: false, paused_reason: null, paused_at: null });
    fx.emit({ type: 'queue', event: 'queue.resumed', organization_id: this.organizationId, queue_name: this.name, at: fx.now });
    return this.viewReply();
  }

  configure(config: Partial<QueueConfig>, fx: Effects): Reply<QueueView> {
    const q = this.existing();
    this.writeQueue(fx, { ...q, ...config });
    this.applyLimits(q);
    this.feedWaiters(fx);
    return this.viewReply();
  }

  deleteQueue(fx: Effects): Reply<{ name: string; deleted: true }> {
    this.existing();
    const live = this.jobs.size + this.pagedOut;
    if (live > 0) {
      throw new AppError('QUEUE_NOT_EMPTY', `Queue '${this.name}' still has ${live} active job(s)`, { active_jobs: live });
    }
    this.queue = null;
    fx.write({ kind: 'queue', organization_id: this.organizationId, name: this.name, state: null });
    fx.emit({ type: 'queue.deleted', organization_id: this.organizationId, queue_name: this.name });
    for (const w of this.drainWaiters()) w.respond(() => ({ jobs: [] }));
    return () => ({ name: this.name, deleted: true });
  }

  /** Fires everything due at fx.now: scheduled jobs become pending, expired leases are given up. */
  tick(fx: Effects): void {
    const now = fx.now;
    // First, so that a job expiring at the instant it falls due is not handed out.
    for (let e = this.expiryTop(); e && e.at <= now; e = this.expiryTop()) {
      this.expiries.pop();
      this.cancelled(e.job, fx, true);
    }
    let promoted = false;
    for (let e = this.scheduled.peek(); e && (this.stale(e, 'scheduled') || e.at <= now); e = this.scheduled.peek()) {
      this.scheduled.pop();
      if (this.stale(e, 'scheduled')) continue;
      const job = e.job;
      job.status = 'pending';
      this.place(job);
      fx.write({ kind: 'update', id: job.id, state: this.state(job, now) });
      promoted = true;
    }
    for (let e = this.leases.peek(); e && (this.stale(e, 'processing') || e.at <= now); e = this.leases.peek()) {
      this.leases.pop();
      if (this.stale(e, 'processing')) continue;
      const job = e.job;
      const entry: ErrorEntry = { attempt: job.retry_count + 1, error: 'lease expired', at: new Date(now).toISOString() };
      this.stopped(job);
      job.last_error = 'lease expired';
      job.lease_id = null;
      job.lease_expires_at = null;
      const worker = job.assigned_worker_id;
      job.assigned_worker_id = null;
      const retry = job.retry_count < job.max_retries;
      if (retry) {
        job.retry_count++;
        job.status = 'pending';
        job.due_at = now;
        this.place(job);
        fx.write({ kind: 'update', id: job.id, state: this.state(job, now), errors: [entry] });
        promoted = true;
      } else {
        this.forget(job);
        fx.write({ kind: 'update', id: job.id, state: { ...this.state(job, now), status: 'deadletter', completed_at: now }, errors: [entry] });
        this.finished(job, 'deadletter', fx);
      }
      this.publish(fx, 'job.failed', job.id, retry ? 'pending' : 'deadletter', {
        worker_id: worker,
        error: 'lease expired',
        retry_count: job.retry_count,
        will_retry: retry,
        next_run_at: retry ? now : null,
        ...(retry ? {} : callbackOf(job)),
      }, false, job.started_at, true);
      promoted = true;
    }
    // Waiters held back by the rate limit are fed when its window has a slot again (nextWake armed the timer).
    if (promoted || this.rate !== null) this.feedWaiters(fx);
  }

  /** The next instant tick has work, or null. */
  nextWake(now: number): number | null {
    const s = this.liveTop(this.scheduled, 'scheduled');
    const l = this.liveTop(this.leases, 'processing');
    const x = this.expiryTop();
    let p = this.pagedExpiries.peek();
    while (p && this.jobs.has(p.id)) {
      this.pagedExpiries.pop();
      p = this.pagedExpiries.peek();
    }
    let at = Math.min(s?.at ?? Infinity, l?.at ?? Infinity, x?.at ?? Infinity, p?.at ?? Infinity);
    // Claims parked by the rate limit wake at its next slot, not by polling.
    if (this.rate !== null && this.waiters.length > 0 && !this.paused && this.hasReady()) {
      const slot = this.rate.nextSlot(now);
      if (slot > now) at = Math.min(at, slot);
    }
    return at === Infinity ? null : at;
  }

  /** What holds the job now, as far as this actor knows (see ExplainFacts). */
  explain(id: string, now: number): ExplainFacts {
    const job = this.jobs.get(id);
    if (!job) return { live: false };
    const q = this.queue;
    const perKey = q?.concurrency_per_key ?? null;
    const holders: string[] = [];
    let ahead = 0;
    const claimable = job.status === 'pending' && !job.blocked;
    for (const other of this.jobs.values()) {
      if (job.concurrency_key !== null && other.concurrency_key === job.concurrency_key && other.status === 'processing') holders.push(other.id);
      if (claimable && other !== job && other.status === 'pending' && !other.blocked && this.claimableKey(other, perKey)) {
        if (other.priority > job.priority || (other.priority === job.priority && other.id < job.id)) ahead++;
      }
    }
    const slot = this.rate?.nextSlot(now) ?? now;
    return {
      live: true,
      status: job.status,
      blocked: job.blocked,
      priority: job.priority,
      scheduled_at: job.scheduled_at,
      retry_count: job.retry_count,
      max_retries: job.max_retries,
      last_error: job.last_error,
      paused: q?.paused ?? false,
      paused_reason: q?.paused_reason ?? null,
      paused_at: q?.paused_at ?? null,
      concurrency_key: job.concurrency_key,
      concurrency_per_key: perKey,
      key_holders: holders,
      max_concurrency: q?.max_concurrency ?? null,
      processing: this.processing,
      rate_limit: rateLimitOf(q),
      rate_next_slot: slot > now ? slot : null,
      ahead,
      paged: job.pinned === true,
      last_claim_at: this.lastClaimAt,
      loaded_at: this.loadedAt,
    };
  }

  // --- internals ---

  /** A job sent to an unknown queue creates it; an explicit create was counted against the quota already. */
  private ensureQueue(fx: Effects, config: Partial<QueueConfig> | null = null): void {
    if (this.queue) return;
    const cfg = { ...NO_CONFIG, ...config };
    this.writeQueue(fx, { paused: false, paused_reason: null, paused_at: null, ...cfg, created_at: fx.now, updated_at: fx.now });
    this.applyLimits(null);
    if (config === null) fx.emit({ type: 'queue.created', organization_id: this.organizationId, queue_name: this.name });
  }

  private finished(job: LiveJob, status: 'completed' | 'deadletter' | 'cancelled', fx: Effects): void {
    fx.emit({
      type: 'job.finished',
      organization_id: this.organizationId,
      queue_name: this.name,
      job_id: job.id,
      status,
      ...(job.workflow_id !== null ? { workflow_id: job.workflow_id } : {}),
    });
  }

  /** `since` and `expired` feed the metrics (see DomainEvent); they are left off when there is nothing to say. */
  private publish(
    fx: Effects,
    event: JobEventName,
    jobId: string,
    status: JobStatus,
    data?: Record<string, unknown>,
    ifInserted = false,
    since: number | null = null,
    expired = false,
  ): void {
    const e: DomainEvent = { type: 'job', event, organization_id: this.organizationId, queue_name: this.name, job_id: jobId, status, at: fx.now, data, ifInserted };
    if (since !== null) e.since = since;
    if (expired) e.expired = true;
    fx.emit(e);
  }

  private writeQueue(fx: Effects, state: QueueState): void {
    this.queue = { ...state, updated_at: fx.now };
    fx.write({ kind: 'queue', organization_id: this.organizationId, name: this.name, state: this.queue });
  }

  private existing(): QueueState {
    if (!this.queue) throw new AppError('NOT_FOUND', `Queue '${this.name}' not found`);
    return this.queue;
  }

  private viewReply(): Reply<QueueView> {
    const q = this.queue!;
    const view: QueueView = {
      name: this.name,
      paused: q.paused,
      paused_reason: q.paused_reason,
      paused_at: q.paused_at,
      config: {
        max_retries: q.max_retries,
        lease_duration_secs: q.lease_duration_secs,
        concurrency_per_key: q.concurrency_per_key,
        max_concurrency: q.max_concurrency,
        rate_limit: rateLimitOf(q),
      },
      created_at: q.created_at,
      updated_at: q.updated_at,
    };
    return () => view;
  }

  private take(input: ClaimInput, fx: Effects): Taken[] {
    const now = fx.now;
    const taken: Taken[] = [];
    const q = this.queue;
    const max = q?.max_concurrency ?? null;
    const perKey = q?.concurrency_per_key ?? null;
    while (taken.length < input.limit) {
      // A window ran out of held jobs while some wait in the store: its next one is unknown until the refill, so
      // no other lane may go before it.
      if (this.isStarved()) break;
      if (max !== null && this.processing >= max) break;
      if (this.rate !== null && this.rate.available(now) <= 0) break;
      const e = this.lanes !== null ? this.lanes.pop(perKey) : this.ready.pop();
      if (!e) break;
      if (this.stale(e, 'pending')) continue;
      const job = e.job;
      this.rate?.record(now);
      if (job.debounce_key !== null && this.debounces.get(job.debounce_key) === job) this.debounces.delete(job.debounce_key);
      job.status = 'processing';
      job.assigned_worker_id = input.worker_id;
      job.lease_id = newLeaseId();
      job.started_at = now;
      job.lease_ms = (input.lease_duration_secs ?? job.timeout_seconds) * 1000;
      job.lease_expires_at = now + job.lease_ms;
      const kept = job.row ?? null;
      this.place(job);
      this.started(job);
      const state = this.state(job, now);
      // Only from pending: a claim never takes a row that is not what this actor believes it is. A kept row answers
      // the claim; the commit then only confirms that its update took (an empty row back), else it returns the row.
      fx.write({ kind: 'update', id: job.id, state, ...(kept ? { confirm: true } : { returning: true }), onlyFrom: ['pending'] });
      this.publish(fx, 'job.started', job.id, 'processing', { worker_id: input.worker_id, attempt: job.retry_count + 1 }, false, job.due_at);
      taken.push({ id: job.id, lease: job.lease_id, row: kept ? { ...kept, ...state } : null });
    }
    return taken;
  }

  private feedWaiters(fx: Effects): void {
    if (this.paused) return;
    while (this.waiters.length > 0 && this.hasReady()) {
      const w = this.waiters[0]!;
      const taken = this.take(w.input, fx);
      if (taken.length === 0) break;
      this.waiters.shift();
      w.respond((out) => this.claimed(taken, out));
    }
  }

  /**
   * The rows of the jobs a claim took, as committed; a row the commit did not change is not handed out. Nor is a
   * row under another lease: the job's lease ran out while its group waited and a later claim of the same group
   * took it again, so the committed row is that claim's, and this one's lease was never written.
   */
  private claimed(taken: Taken[], out: CommitOutput): ClaimReply {
    const jobs: ClaimReply['jobs'] = [];
    for (const { id, lease, row: kept } of taken) {
      const row = out.rows.get(id);
      if (!row) this.diverged = true;
      // A kept row's claim is the job's last one of its group if the job still holds its lease (a later claim of
      // the same group would have replaced it): the committed row is then this claim's.
      else if (kept !== null) {
        if (this.jobs.get(id)?.lease_id === lease) jobs.push(kept);
      } else if (row.lease_id === lease) jobs.push(row);
    }
    return { jobs };
  }

  /**
   * The job under a live lease that the request proves it holds, or LEASE_EXPIRED. Without a lease_id (complete,
   * fail, heartbeat and progress may omit it) the worker id alone must hold the live lease.
   */
  private leased(input: LeaseInput, now: number): LiveJob {
    const job = this.jobs.get(input.id);
    if (
      !job ||
      job.status !== 'processing' ||
      job.lease_expires_at === null ||
      job.lease_expires_at <= now ||
      job.assigned_worker_id !== input.worker_id ||
      (input.lease_id !== null && job.lease_id !== input.lease_id)
    ) {
      throw new AppError('LEASE_EXPIRED', 'The lease is stale or does not match this worker');
    }
    return job;
  }

  /** Puts the job in the structure of its status, under a new version. */
  private place(job: LiveJob): void {
    job.ver++;
    this.dropRow(job);
    this.unhold(job);
    job.pinned = false;
    this.jobs.set(job.id, job);
    if (job.idempotency_key !== null) this.keys.set(job.idempotency_key, job);
    switch (job.status) {
      case 'pending': {
        if (job.blocked) break;
        if (job.concurrency_key !== null && this.lanes === null) this.useLanes();
        const w = this.windowOf(job.concurrency_key);
        // Behind the window: written, not held (the store has it; a refill brings it in its turn).
        if (w.bound !== null && after(job, w.bound)) return this.pageOut(job, w);
        if (this.lanes !== null) this.lanes.push(readyEntry(job), this.queue?.concurrency_per_key ?? null);
        else this.ready.push(readyEntry(job));
        job.win = w;
        w.held++;
        if (w.held > 2 * this.cap()) this.trim(w);
        break;
      }
      case 'scheduled':
        this.scheduled.push({ job, ver: job.ver, at: job.scheduled_at ?? 0 });
        break;
      case 'processing':
        this.leases.push({ job, ver: job.ver, at: job.lease_expires_at ?? 0 });
        break;
      case 'provisional':
        break;
    }
  }

  /**
   * Keeps a new job's row for its claim, while the host's budget allows: only a ready job (a scheduled or blocked
   * one changes before it runs) whose payload's size the caller measured. Any later change but the claim drops it.
   */
  private keep(job: LiveJob, row: JobRow, payloadBytes: number | undefined): void {
    const budget = this.settings.rows;
    if (budget === undefined || payloadBytes === undefined || job.status !== 'pending' || job.blocked || job.win == null) return;
    const bytes = payloadBytes + ROW_OVERHEAD;
    if (budget.left < bytes) return;
    budget.left -= bytes;
    job.row = row;
    job.rowBytes = bytes;
  }

  private dropRow(job: LiveJob): void {
    if (!job.row) return;
    this.settings.rows!.left += job.rowBytes!;
    job.row = null;
    job.rowBytes = 0;
  }

  /** Gives the host's budget back what this actor's jobs keep: the host is dropping the actor. */
  dispose(): void {
    for (const job of this.jobs.values()) this.dropRow(job);
  }

  private forget(job: LiveJob): void {
    job.ver++;
    this.dropRow(job);
    this.unhold(job);
    this.jobs.delete(job.id);
    if (job.idempotency_key !== null && this.keys.get(job.idempotency_key) === job) this.keys.delete(job.idempotency_key);
    if (job.debounce_key !== null && this.debounces.get(job.debounce_key) === job) this.debounces.delete(job.debounce_key);
  }

  private unhold(job: LiveJob): void {
    const w = job.win;
    if (w) {
      w.held--;
      job.win = null;
      this.note(w);
    }
  }

  /** Remembers a window that ran low or out while jobs wait in the store (refills, isStarved). */
  private note(w: Win): void {
    if (w.paged <= 0) return;
    if (w.held === 0) this.starved.add(w);
    if (w.held < Math.ceil(this.cap() / 2)) this.low.add(w);
  }

  /** Some window holds nothing while jobs wait in the store: its head is unknown, so no claim may go on. */
  private isStarved(): boolean {
    for (const w of this.starved) {
      if (w.held === 0 && w.paged > 0) return true;
      this.starved.delete(w);
    }
    return false;
  }

  /** A ready job leaves memory for the store, behind the window's bound; what must find it is remembered. */
  private pageOut(job: LiveJob, w: Win): void {
    this.reading.get(w)?.push({ ...job });
    this.forget(job);
    job.pinned = false;
    w.paged++;
    if (w.bound === null) w.bound = START;
    this.note(w);
    if (job.started_at === null) {
      if (job.debounce_key !== null) this.pagedDebounces.set(job.debounce_key, job.id);
      if (job.expires_at != null) this.pagedExpiries.push({ id: job.id, at: job.expires_at });
    }
  }

  /** Ready jobs held per window: the queue's size, shared between lanes (never fewer than LANE_MIN a lane). */
  private cap(): number {
    const size = this.settings.window ?? Infinity;
    return this.lanes === null ? size : Math.max(LANE_MIN, Math.floor(size / Math.max(1, this.lanes.lanes.size)));
  }

  private windowOf(key: string | null): Win {
    return this.lanes !== null ? this.lanes.windowOf(key) : this.win;
  }

  private windows(): Iterable<Win> {
    return this.lanes !== null ? this.lanes.windows() : [this.win];
  }

  /** Too many held before the bound (higher priorities arrived): the window keeps its head and pages out the rest. */
  private trim(w: Win): void {
    const heap = this.lanes !== null ? this.lanes.heapOf(w.key) : this.ready;
    const live: Entry[] = [];
    for (let e = heap.pop(); e; e = heap.pop()) if (!this.stale(e, 'pending')) live.push(e);
    const keep = Math.min(live.length, this.cap());
    for (let i = 0; i < keep; i++) heap.push(live[i]!);
    if (keep === 0 || keep === live.length) return;
    const last = live[keep - 1]!.job;
    w.bound = { priority: last.priority, id: last.id };
    for (let i = keep; i < live.length; i++) this.pageOut(live[i]!.job, w);
  }

  /** A waiting job of the debounce key takes the new payload; its run moves to now + delay, never past its bound. */
  private debounced(job: LiveJob, d: Debounce, payload: unknown, fx: Effects): Reply<Added> {
    const now = fx.now;
    const at = Math.min(now + d.delay_ms, job.debounce_until ?? Infinity);
    job.scheduled_at = at;
    job.due_at = at;
    job.status = at > now ? 'scheduled' : 'pending';
    this.place(job);
    fx.write({ kind: 'update', id: job.id, state: this.state(job, now), payload });
    if (job.status === 'pending') this.feedWaiters(fx);
    const id = job.id;
    return () => ({ created: false, debounced: true, id });
  }

  /** Switches the queue to per-key lanes (for good: an actor rebuilt without keys goes back to the plain heap). */
  private useLanes(): void {
    if (this.lanes !== null) return;
    // A refill being read was asked for the whole queue's order: dropped when it lands (refilled).
    for (const w of this.reading.keys()) this.reading.set(w, null);
    const lanes = new KeyLanes((e) => this.stale(e, 'pending'), this.win);
    const limit = this.queue?.concurrency_per_key ?? null;
    for (let e = this.ready.pop(); e; e = this.ready.pop()) if (!this.stale(e, 'pending')) lanes.push(e, limit);
    for (const job of this.jobs.values()) if (job.status === 'processing') lanes.started(job.concurrency_key, limit);
    this.lanes = lanes;
  }

  /** The queue's limits changed (or were just set): lanes, the rate window and waiters follow at once. */
  private applyLimits(before: QueueState | null): void {
    const q = this.queue!;
    if (q.concurrency_per_key !== null) this.useLanes();
    if (this.lanes !== null && q.concurrency_per_key !== (before?.concurrency_per_key ?? null)) this.lanes.relimit(q.concurrency_per_key);
    const r = q.rate_limit;
    if (r === null) this.rate = null;
    else if (this.rate === null || this.rate.limit !== r.jobs || this.rate.windowMs !== r.per_seconds * 1000) this.rate = rateWindow(r, this.rate);
  }

  private started(job: LiveJob): void {
    this.processing++;
    this.lanes?.started(job.concurrency_key, this.queue?.concurrency_per_key ?? null);
  }

  /** Called once on every way out of processing (complete, fail, cancel, expiry, unclaim). */
  private stopped(job: LiveJob): void {
    this.processing--;
    this.lanes?.stopped(job.concurrency_key, this.queue?.concurrency_per_key ?? null);
  }

  private hasReady(): boolean {
    if (this.isStarved()) return false;
    if (this.lanes !== null) return this.lanes.hasClaimable(this.queue?.concurrency_per_key ?? null);
    return this.liveTop(this.ready, 'pending') !== undefined;
  }

  private claimableKey(job: LiveJob, perKey: number | null): boolean {
    return perKey === null || job.concurrency_key === null || (this.lanes?.processingOf(job.concurrency_key) ?? 0) < perKey;
  }

  private stale(e: Entry, status: LiveStatus): boolean {
    return e.ver !== e.job.ver || e.job.status !== status || this.jobs.get(e.job.id) !== e.job;
  }

  /** Watches the job's expiry while it has one and was never claimed. */
  private armExpiry(job: LiveJob): void {
    if (job.expires_at != null && job.started_at === null && job.status !== 'processing') {
      this.expiries.push({ job, ver: job.ver, at: job.expires_at });
    }
  }

  /** The next expiry that still holds: the job is live here, waiting (not provisional) and never claimed. */
  private expiryTop(): Entry | undefined {
    for (let e = this.expiries.peek(); e; e = this.expiries.peek()) {
      const j = e.job;
      const holds = this.jobs.get(j.id) === j && j.expires_at === e.at && j.started_at === null && (j.status === 'pending' || j.status === 'scheduled');
      if (holds) return e;
      this.expiries.pop();
    }
    return undefined;
  }

  private liveTop(heap: Heap<Entry>, status: LiveStatus): Entry | undefined {
    let e = heap.peek();
    while (e && this.stale(e, status)) {
      heap.pop();
      e = heap.peek();
    }
    return e;
  }

  private state(job: LiveJob, now: number): JobState {
    return {
      status: job.status === 'provisional' ? 'pending' : job.status,
      priority: job.priority,
      retry_count: job.retry_count,
      last_error: job.last_error,
      scheduled_at: job.scheduled_at,
      started_at: job.started_at,
      completed_at: null,
      updated_at: now,
      assigned_worker_id: job.assigned_worker_id,
      lease_id: job.lease_id,
      lease_expires_at: job.lease_expires_at,
      dependencies_met: !job.blocked,
    };
  }
}

