// When a worker asks for more jobs (both transports): not each time one slot frees while others are about to,
// but once the free slots are worth a claim, so that a claim carries several jobs.

/**
 * How long free slots below the claim threshold wait for more slots to free before they are claimed anyway
 * (so that long handlers do not leave a few slots idle).
 */
export const CLAIM_LINGER_MS = 20;

/** Free slots worth a claim while handlers run: a quarter of the concurrency (at least 1). */
export function claimThreshold(concurrency: number): number {
  return Math.max(1, Math.ceil(concurrency / 4));
}

/**
 * Claim cycles a REST worker keeps going at once: its slots split into lanes, each refilled by the claim riding on
 * its own batch acknowledgement, so one lane's round trip overlaps the other's handlers and commit. Two measured
 * best (docs/BENCHMARKS.md): three or four lanes split the same slots into smaller batches and gained nothing.
 */
export const CLAIM_LANES = 2;

/** Jobs one claim asks for at most (the service's CLAIM_MAX, src/app/jobs.ts): a worker's whole prefetch in one answer. */
export const CLAIM_MAX = 500;
/**
 * What services before CLAIM_MAX took in one claim. Such a service refuses a larger limit with a 422 on `limit`
 * (or `claim.limit`), having changed nothing: the worker then claims at most this many from there on.
 */
export const CLAIM_MAX_BEFORE = 100;

/** Whether `details` (a 422's) refuse a claim's limit. */
export function refusesLimit(details: ReadonlyArray<{ field: string }>): boolean {
  return details.some((d) => d.field === 'limit' || d.field === 'claim.limit');
}
