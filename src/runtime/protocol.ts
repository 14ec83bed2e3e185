// Messages between the main thread and actor threads. Both directions travel in arrays (one post per turn).
import type { WireError } from '../errors.js';

export type Op =
  | 'enqueue'
  | 'claim'
  | 'complete'
  | 'fail'
  | 'heartbeat'
  | 'cancel'
  | 'priority'
  | 'revive'
  | 'createQueue'
  | 'pause'
  | 'resume'
  | 'configure'
  | 'deleteQueue';

export interface Ask {
  t: 'ask';
  id: number;
  org: string;
  queue: string;
  op: Op;
  args: unknown;
}

export type ThreadIn = Ask | { t: 'tick'; id: number } | { t: 'stop'; id: number };

/** id 0 is the thread's boot report. */
export type ThreadOut = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WireError };
