// The two halves of the jobs table's read indexes (migration 0027): live jobs (jobs_live_list, jobs_live_org,
// jobs_live_failed) and finished ones (jobs_done_status, jobs_done_queue, jobs_done_updated). A query may use a
// partial index only when its WHERE implies the index's predicate, which the planner proves from constants, not
// parameters: reads write these predicates out literally, and a read over both halves is a UNION ALL of one part
// per half.
import type { JobStatus } from '../../actors/records.js';

export const LIVE_STATUSES: readonly JobStatus[] = ['pending', 'scheduled', 'processing'];
export const DONE_STATUSES: readonly JobStatus[] = ['completed', 'deadletter', 'cancelled'];
const among = (statuses: readonly JobStatus[]) => `status IN (${statuses.map((s) => `'${s}'`).join(', ')})`;
export const LIVE = among(LIVE_STATUSES);
export const DONE = among(DONE_STATUSES);
