// An entry of the actor's heaps (heap.ts): a job, the version it had when pushed (a later change makes the entry
// stale, skipped when it surfaces), and what the heap orders by.
import type { LiveJob } from './queue-actor.js';

export interface Entry {
  job: LiveJob;
  ver: number;
  /** The time it is due at (scheduled, lease and expiry heaps); in a ready heap, its id's order (readyEntry). */
  at: number;
  /** Ready heaps: the job's priority when pushed. A heap's keys must not change under it: a priority change pushes a new entry, and the old one, stale, keeps its place. */
  p?: number;
}

/**
 * An entry of a ready heap: the job's priority now, and its id's first 16 hex digits as a number. Ids are lowercase
 * UUID text in creation order (ids.ts); the number is the value of that prefix rounded to a double, which keeps
 * their order (rounding is monotone), so a different number decides without reading the strings and an equal one
 * falls back to them. A pop compares ~2 log n pairs: fields of the entry, not strings behind two pointers.
 */
export const readyEntry = (job: LiveJob): Entry => {
  const id = job.id;
  const order = (parseInt(id.slice(0, 8), 16) * 65536 + parseInt(id.slice(9, 13), 16)) * 65536 + parseInt(id.slice(14, 18), 16);
  return { job, ver: job.ver, at: Number.isNaN(order) ? 0 : order, p: job.priority };
};

/** Claim order: higher priority first, then the older id (readyEntry). */
export const readyOrder = (a: Entry, b: Entry): boolean =>
  a.p !== b.p ? a.p! > b.p! : a.at !== b.at ? a.at < b.at : a.job.id < b.job.id;
