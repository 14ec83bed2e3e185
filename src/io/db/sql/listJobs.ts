// listJobs — one page of an organization's jobs, newest first: ORDER BY created_at DESC, id DESC, with the
// page boundary as a keyset `(created_at, id) < (last)` rather than an offset, so rows inserted meanwhile
// (always newer) never shift a page. `cursor_at` is created_at to the microsecond, the key the next cursor
// carries. The page is merged from parts that each read one index range newest first (../jobHalves.ts): live jobs
// from jobs_live_list (a queue) or jobs_live_org, finished ones from jobs_done_queue (a queue) or jobs_done_status
// (a status, or one range per status). Tag filters may use the partial GIN index jobs_tags, which the planner
// may use only because the query repeats its predicate `tags <> '{}'` (a tag filter implies it anyway).
import type { JobStatus } from '../../../actors/records.js';
import type { Row, Store } from '../store.js';
import { DONE, DONE_STATUSES, LIVE } from '../jobHalves.js';

export interface JobFilter {
  queueName: string | null;
  status: JobStatus | null;
  /** Tag keys that must be present. */
  tagKeys: string[];
  /** Tag key → value that must match. */
  tagValues: Record<string, string>;
  /** Exclusive bounds on created_at. */
  createdAfter: Date | null;
  createdBefore: Date | null;
}

/** The sort key of a row: created_at as ISO 8601 with microseconds, and the id. */
export type JobKey = [at: string, id: string];

export const CURSOR_AT = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export async function listJobs(
  store: Store,
  organizationId: string,
  filter: JobFilter,
  after: JobKey | null,
  limit: number,
): Promise<Row[]> {
  const params: unknown[] = [organizationId];
  const p = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  const where = ['organization_id = $1'];
  if (filter.queueName !== null) where.push(`queue_name = ${p(filter.queueName)}`);
  if (filter.status !== null) where.push(`status = ${p(filter.status)}`);
  const tagged = filter.tagKeys.length > 0 || Object.keys(filter.tagValues).length > 0;
  if (tagged) where.push(`tags <> '{}'::jsonb`);
  for (const key of filter.tagKeys) where.push(`tags ? ${p(key)}`);
  if (Object.keys(filter.tagValues).length > 0) where.push(`tags @> ${p(JSON.stringify(filter.tagValues))}::jsonb`);
  if (filter.createdAfter !== null) where.push(`created_at > ${p(filter.createdAfter.toISOString())}::timestamptz`);
  if (filter.createdBefore !== null) where.push(`created_at < ${p(filter.createdBefore.toISOString())}::timestamptz`);
  if (after !== null) where.push(`(created_at, id) < (${p(after[0])}::timestamptz, ${p(after[1])}::uuid)`);
  const lim = p(limit + 1);
  const part = (...more: string[]): string =>
    `(SELECT * FROM jobs WHERE ${[...where, ...more].join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ${lim})`;
  const parts: string[] = [];
  const done = filter.status !== null && DONE_STATUSES.includes(filter.status);
  if (filter.status === null || !done) parts.push(part(LIVE));
  if (filter.status === null || done) {
    if (filter.status !== null || filter.queueName !== null) parts.push(part(DONE));
    else for (const s of DONE_STATUSES) parts.push(part(DONE, `status = '${s}'`));
  }
  return store.query(
    `SELECT *, ${CURSOR_AT} AS cursor_at FROM (${parts.join('\n UNION ALL ')}) j
      ORDER BY created_at DESC, id DESC
      LIMIT ${lim}`,
    params,
  );
}
