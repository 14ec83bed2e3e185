// The window of a bounded queue actor (QUEUE_WINDOW): of the ready jobs of a queue — or of one concurrency-key
// lane — the actor holds the head of the claim order and leaves the rest in the store ("paged out").
//
// Invariant: every held ready job comes before `bound` in claim order and every paged-out one after it, so the
// head of the held jobs is the head of the whole queue, and claims stay exact. `bound` null: nothing is paged out
// (everything ready is held). A job that becomes ready after the bound (an enqueue behind a long backlog, a retry,
// a release) is written but not held; the window is refilled from the store, strictly after the bound, when it
// runs low, and trimmed back to its size when jobs before the bound pile up (higher priorities).

/** A place in claim order: higher priority first, then the older id (UUIDv7: creation order). */
export interface Position {
  priority: number;
  id: string;
}

/** Before every job: the bound of a window that holds nothing yet (an actor rebuilt, before its first page). */
export const START: Position = { priority: Infinity, id: '' };

export interface Win {
  /** The lane's concurrency key (null: jobs without one, or the whole queue when it uses no keys). */
  readonly key: string | null;
  /** Ready jobs held (in the heap of the queue or of the lane). */
  held: number;
  /** Ready jobs in the store after `bound`, not held. */
  paged: number;
  bound: Position | null;
  /**
   * The count is not known yet (a rebuild counts the ready jobs without a key after reading the window): `paged`
   * is ESTIMATE plus the changes since, and becomes exact when the count comes (`counted`) or a refill finds the end.
   */
  estimated: boolean;
}

export const ESTIMATE = 2 ** 50;

export const newWin = (key: string | null): Win => ({ key, held: 0, paged: 0, bound: null, estimated: false });

/** The job comes after the position in claim order. */
export const after = (job: Position, p: Position): boolean => job.priority < p.priority || (job.priority === p.priority && job.id > p.id);

/** Where a refill reads from: the window's lane, and the position it starts after (null: from the start). */
export interface Refill {
  /** false: the whole queue in claim order (a queue without keys); true: the lane of `key` only. */
  keyed: boolean;
  key: string | null;
  after: Position | null;
  limit: number;
}
