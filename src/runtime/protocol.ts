// The messages between the main thread and the actor threads: one op map per kind of actor (operation name →
// argument → reply), from which the sending side (`ActorPool.ask`) and the thread-side dispatch
// (`ActorHost`) are both typed. Every argument and reply is plain data (structured-clone and JSON safe: no
// closures, no class instances), so the same messages can later travel to another node unchanged.
// Both directions travel in arrays (one post per event-loop turn).
import type { CountedResource, Permits, Usage } from '../actors/org/org-actor.js';
import type { LimitOverrides, PlanTier } from '../actors/org/plans.js';
import type {
  ClaimInput,
  ClaimReply,
  CompleteInput,
  CompleteOutcome,
  CompleteReply,
  EnqueueInput,
  EnqueueOutcome,
  EnqueueReply,
  ExplainFacts,
  FailInput,
  FailReply,
  HeartbeatInput,
  HeartbeatReply,
  ProgressInput,
  QueueConfig,
  QueueView,
  ReviveInput,
  ReviveOutcome,
} from '../actors/queue/queue-actor.js';
import type { QueueMetricsSnapshot } from '../actors/queue/queue-metrics.js';
import type { DomainEvent, JobStatus, Progress } from '../actors/records.js';
import type { WireError } from '../errors.js';

interface Op<A, R> {
  args: A;
  reply: R;
}

type Empty = Record<string, never>;

/**
 * How deep a reply's values may nest: the deepest body the edge can be set to accept (BODY_MAX_DEPTH is at most
 * 1,000 levels) and the few levels a job row adds around a value of it (the row, a progress report), with room to
 * spare; and well short of where a structured clone, JSON.stringify or the gRPC Struct of a value runs out of stack
 * (about 2,000 levels on Node 20 with some of the stack in use already).
 */
export const REPLY_MAX_DEPTH = 1_100;

/**
 * True when `value` holds an object or array more than `max` levels down (`value` itself is level 1). Iterative.
 * Depth alone: `inspect` (io/input.ts) also checks every string, work a claim need not pay for rows already stored.
 */
export function nestsDeeper(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: object[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const v = stack.pop() as Record<string, unknown>;
    const depth = depths.pop()!;
    if (depth > max) return true;
    for (const k in v) {
      const item = v[k];
      if (item !== null && typeof item === 'object') {
        stack.push(item);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** A queue actor's operations: (organization, queue) → QueueActor. */
export interface QueueOps {
  enqueue: Op<EnqueueInput, EnqueueReply>;
  /** A bulk enqueue's jobs of this queue: one outcome per input, in order. */
  enqueueMany: Op<{ inputs: EnqueueInput[] }, EnqueueOutcome[]>;
  /** `wait_ms` > 0: parked as a long poll until jobs arrive or the time runs out. */
  claim: Op<ClaimInput & { wait_ms: number }, ClaimReply>;
  complete: Op<CompleteInput, CompleteReply>;
  /** A batch acknowledgement: one outcome per item, in order. */
  completeMany: Op<{ items: CompleteInput[] }, CompleteOutcome[]>;
  fail: Op<FailInput, FailReply>;
  heartbeat: Op<HeartbeatInput, HeartbeatReply>;
  progress: Op<ProgressInput, { id: string } & Progress>;
  /** What holds a job now, as this actor knows it (GET /jobs/:id/explain adds what the store knows). */
  explain: Op<{ id: string }, ExplainFacts>;
  /** null: the job is not live in this queue (the caller tells terminal from unknown with the store). */
  cancel: Op<{ id: string }, { id: string; status: JobStatus } | null>;
  priority: Op<{ id: string; priority: number }, { id: string; status: JobStatus; priority: number } | null>;
  revive: Op<{ jobs: ReviveInput[]; from: JobStatus[] }, ReviveOutcome[]>;
  release: Op<{ ids: string[] }, { released: string[] }>;
  unclaim: Op<{ items: Array<{ id: string; lease_id: string }> }, { unclaimed: string[] }>;
  createQueue: Op<QueueConfig, QueueView>;
  pause: Op<{ reason: string | null }, QueueView>;
  resume: Op<Empty, QueueView>;
  configure: Op<Partial<QueueConfig>, QueueView>;
  deleteQueue: Op<Empty, { name: string; deleted: true }>;
  /**
   * The queue's wait and run histograms and transition counters (queue-metrics.ts), read-only. Answered by the
   * thread that serves the queue from what it counted, at once and without loading a cold actor; null when it
   * counted nothing for the queue.
   */
  metrics: Op<Empty, QueueMetricsSnapshot | null>;
}

/** What an admission answers: the UTC day it counted against, credit granted ahead, the plan's payload cap. */
export interface Admitted {
  day: string;
  granted: number;
  payloadCap: number | null;
}

/** An organization's quota actor's operations. */
export interface OrgOps {
  admit: Op<{ n: number; payloadBytes: number[]; credit: number }, Admitted>;
  releaseJobs: Op<{ n: number; day: string }, null>;
  jobsFinished: Op<{ n: number }, null>;
  reserve: Op<{ resource: CountedResource }, null>;
  counted: Op<{ resource: CountedResource; delta: number }, null>;
  setPlan: Op<{ plan: PlanTier; overrides: LimitOverrides }, null>;
  resetUsage: Op<Empty, null>;
  usage: Op<Empty, Usage>;
  permits: Op<{ want: number; holdMs: number }, Permits>;
}

export type QueueOp = keyof QueueOps;
export type OrgOp = keyof OrgOps;

/** The actor key of an organization's quota actor: '' is never a queue name. */
export const ORG_ACTOR = '';

/**
 * One queue operation as a message; `id` 0 makes it a tell that nobody answers. Built only by the typed
 * `ActorPool.ask<K>`, so `args` always matches `op`.
 */
export interface QueueAsk<K extends QueueOp = QueueOp> {
  t: 'queue';
  id: number;
  org: string;
  queue: string;
  op: K;
  args: QueueOps[K]['args'];
  /** The node that forwarded it here (cluster/forwarding.ts): its long poll is answered when that node stops. */
  via?: string;
}

export interface OrgAsk<K extends OrgOp = OrgOp> {
  t: 'org';
  id: number;
  org: string;
  op: K;
  args: OrgOps[K]['args'];
}

export type Ask = QueueAsk | OrgAsk;

/**
 * A message for an actor on its way to the node that owns its shard, which numbers it for its thread. `tell`: a
 * counter change nobody waits for, dropped unless the actor is loaded (an actor built from rows counts it already).
 */
export type Routed = (Omit<QueueAsk, 'id'> | Omit<OrgAsk, 'id'>) & { tell?: true };

export type ThreadIn =
  | Ask
  | { t: 'tick'; id: number }
  | { t: 'stop'; id: number }
  /**
   * The shards this node owns now, with their epochs (bigint as text): a thread serves the ones that map to it,
   * loads the live queues of those it gained, and drops the actors of those it lost.
   */
  | { t: 'shards'; id: number; epochs: Array<[shard: number, epoch: string]> }
  /** Shards being handed over: stop serving them, answer once what was written for them is committed. */
  | { t: 'release'; id: number; shards: number[] }
  /** The node is stopping: answer every parked long poll now, empty (claims that come later park as usual). */
  | { t: 'unpark'; id: number; via?: string };

/** Group commits of one thread since its last report: one entry per commit (records, milliseconds). */
export interface CommitStats {
  records: number[];
  ms: number[];
  failed: number;
}

/**
 * id 0 is the thread's boot report; `events` carries what committed groups published; `stats` feeds /metrics;
 * `fenced` reports a deposed owner's commit.
 */
export type ThreadOut =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: WireError }
  | { id: -1; ok: true; events: DomainEvent[] }
  | { id: -2; ok: true; stats: CommitStats }
  /** A commit was fenced: another node holds one of these shards now (the main thread checks its leases at once). */
  | { id: -3; ok: true; fenced: number[] }
  /**
   * Whether the thread is rebuilding the queues it serves (at boot, or shards it took over): the node is not
   * ready while one is (/health/ready).
   */
  | { id: -4; ok: true; loading: boolean };
