// Messages between the main thread and actor threads. Both directions travel in arrays (one post per turn).
import type { DomainEvent } from '../actors/records.js';
import type { WireError } from '../errors.js';

export type OrgOp = 'admit' | 'releaseJobs' | 'jobsFinished' | 'reserve' | 'counted' | 'setPlan' | 'resetUsage' | 'usage';

/** The actor key of an organization's quota actor: '' is never a queue name. */
export const ORG_ACTOR = '';

export type Op =
  | OrgOp
  | 'enqueue'
  | 'claim'
  | 'complete'
  | 'fail'
  | 'heartbeat'
  | 'cancel'
  | 'priority'
  | 'revive'
  | 'release'
  | 'unclaim'
  | 'createQueue'
  | 'pause'
  | 'resume'
  | 'configure'
  | 'deleteQueue';

export interface Ask {
  t: 'ask';
  /** 0: a tell, answered by nobody. */
  id: number;
  org: string;
  queue: string;
  op: Op;
  args: unknown;
}

export type ThreadIn = Ask | { t: 'tick'; id: number } | { t: 'stop'; id: number };

/** Group commits of one thread since its last report: one entry per commit (records, milliseconds). */
export interface CommitStats {
  records: number[];
  ms: number[];
  failed: number;
}

/** id 0 is the thread's boot report; `events` carries what committed groups published; `stats` feeds /metrics. */
export type ThreadOut =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: WireError }
  | { id: -1; ok: true; events: DomainEvent[] }
  | { id: -2; ok: true; stats: CommitStats };
