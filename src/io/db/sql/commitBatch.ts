// commitBatch — one journal group in one statement.
//
// Records are first folded per job (an insert followed by a claim in the same group becomes one insert of
// the final row; several updates become one with the errors appended in order), because the data-modifying
// CTEs of one statement share a snapshot and cannot see each other's rows. Then queues, inserts and updates
// go out as multi-row CTEs: one round trip and one implicit transaction, however large the group. Inserts and
// updates travel as one JSON document each (json_to_recordset, times as epoch milliseconds, payloads and results
// nested as they are): one native JSON.stringify instead of a text array per column with every element escaped
// by the driver, which cost the actor thread twice as much (docs/BENCHMARKS.md). On this machine a one-row INSERT per transaction peaks near 6,800/s while 100-row
// statements reach ~65,000 rows/s; this is where group commit gets its numbers.
import type { CommitResult, ErrorEntry, JobRow, JobState, JournalRecord, Progress, QueueState } from '../../../actors/records.js';
import type { Store } from '../store.js';

/**
 * The shards the records belong to, with the epochs this node holds them under. The statement writes nothing
 * unless every one is still this node's under that epoch: `sluice_fence` (migration 0025) takes the node's shared
 * advisory lock, then reads the shard rows with a snapshot newer than the lock. Any change of a shard's owner or
 * epoch takes the previous owner's lock exclusively (a trigger), so a takeover waits for this node's commits in
 * flight, and a commit that starts during a takeover waits for it and then finds the new epoch: the new owner
 * loads the shard's rows only after the old owner's last write. One lock per commit whatever its shards, and no
 * row locks: a commit of many queues used to lock each shard row (a heap write, a WAL record, a MultiXact with
 * two commits in flight). A lease renewal takes no advisory lock and neither waits for commits nor holds them up.
 */
export interface Fence {
  node: string;
  shards: number[];
  epochs: string[];
}

interface Update {
  state: JobState;
  errors: ErrorEntry[];
  result: unknown;
  hasResult: boolean;
  /** Rare changes (a debounced payload, a progress report, a dropped idempotency key, a cleared expiry) in one JSON parameter. */
  extra: { payload?: unknown; progress?: Progress; drop_key?: true; clear_expiry?: true } | null;
  returning: boolean;
  confirm: boolean;
  onlyFrom: string | null;
}

/** Sets the field unless its value is null: json_to_recordset reads a missing key as NULL, so nulls need not travel. */
function put(o: Record<string, unknown>, key: string, v: unknown): void {
  if (v !== null && v !== undefined) o[key] = v;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
/** A time travels as epoch milliseconds (a JSON number) and becomes a timestamptz in the statement. */
const ts = (col: string): string => `to_timestamp(${col} / 1000.0)`;

interface Insert {
  row: JobRow;
  conflictKey: boolean;
  /** The row is this map's own copy (a later record of the group folded into it), not the actor's. */
  own: boolean;
  progress?: Progress;
  /** Claims folded into it: one answered from its actor's row (confirm), one that wants the row (returning). */
  confirm?: boolean;
  returning?: boolean;
}

/**
 * `INSERT INTO jobs … SELECT … FROM json_to_recordset(…)` of these rows, up to its WHERE. A row travels without
 * what it shares with the usual job: its null fields (json_to_recordset reads a missing key as NULL), the values a
 * new job usually has (COALESCE puts them back), and the organization and queue that most rows of the group have
 * (one parameter each). Parsing the document was 30 % of PostgreSQL's CPU under batch enqueues, most of it
 * lexing keys and values that every row repeated; each key a row carries also costs a hash entry per row.
 */
function insertJobs(p1: (v: unknown, type: string) => string, inserts: Insert[]): string {
  const org = mostCommon(inserts, (i) => i.row.organization_id);
  const queue = mostCommon(inserts, (i) => i.row.queue_name);
  const rows = inserts.map(({ row: r, progress }) => {
    const o: Record<string, unknown> = { i: r.id, pl: r.payload, ca: r.created_at };
    if (r.organization_id !== org) o.o = r.organization_id;
    if (r.queue_name !== queue) o.q = r.queue_name;
    if (r.status !== 'pending') o.s = r.status;
    if (r.priority !== 0) o.p = r.priority;
    if (r.retry_count !== 0) o.r = r.retry_count;
    if (r.max_retries !== 3) o.m = r.max_retries;
    if (r.errors.length > 0) o.e = r.errors;
    if (!isEmpty(r.tags)) o.tg = r.tags;
    if (r.timeout_seconds !== 300) o.to = r.timeout_seconds;
    if (r.updated_at !== r.created_at) o.u = r.updated_at;
    if (!r.dependencies_met) o.d = false;
    put(o, 'v', r.result);
    put(o, 'l', r.last_error);
    put(o, 'k', r.idempotency_key);
    put(o, 'sa', r.scheduled_at);
    put(o, 'st', r.started_at);
    put(o, 'c', r.completed_at);
    put(o, 'w', r.assigned_worker_id);
    put(o, 'li', r.lease_id);
    put(o, 'le', r.lease_expires_at);
    put(o, 'wf', r.workflow_id);
    put(o, 'cw', r.completion_webhook);
    put(o, 'cs', r.completion_webhook_secret);
    put(o, 'ck', r.concurrency_key);
    put(o, 'ie', r.idempotency_expires_at);
    put(o, 'dk', r.debounce_key);
    put(o, 'du', r.debounce_until);
    put(o, 'pg', progress);
    put(o, 'xa', r.expires_at);
    return o;
  });
  return `INSERT INTO jobs (id, organization_id, queue_name, status, payload, result, priority, retry_count, max_retries,
        last_error, errors, tags, idempotency_key, timeout_seconds, scheduled_at, created_at, started_at, completed_at,
        updated_at, assigned_worker_id, lease_id, lease_expires_at, workflow_id, dependencies_met, completion_webhook,
        completion_webhook_secret, concurrency_key, idempotency_expires_at, debounce_key, debounce_until, progress, expires_at)
      SELECT i, COALESCE(o, ${p1(org, 'uuid')}), COALESCE(q, ${p1(queue, 'text')}), COALESCE(s, 'pending'), pl, v, COALESCE(p, 0),
        COALESCE(r, 0), COALESCE(m, 3), l, COALESCE(e, '[]'), COALESCE(tg, '{}'), k, COALESCE("to", 300), ${ts('sa')}, ${ts('ca')},
        ${ts('st')}, ${ts('c')}, ${ts('COALESCE(u, ca)')}, w, li, ${ts('le')}, wf, COALESCE(d, true), cw, cs, ck, ${ts('ie')}, dk,
        ${ts('du')}, pg, ${ts('xa')}
      FROM json_to_recordset(${p1(JSON.stringify(rows), 'json')}) AS t(i uuid, o uuid, q text, s text, pl jsonb, v jsonb, p int, r int, m int,
        l text, e jsonb, tg jsonb, k text, "to" int, sa float8, ca float8, st float8, c float8, u float8, w text, li uuid, le float8,
        wf uuid, d bool, cw text, cs text, ck text, ie float8, dk text, du float8, pg jsonb, xa float8)`;
}

/** The value most items have (the first of a tie): rows of a group mostly share their organization and queue. */
function mostCommon<T>(items: readonly T[], key: (item: T) => string): string {
  const first = key(items[0]!);
  let counts: Map<string, number> | null = null;
  for (let n = 1; n < items.length; n++) {
    const k = key(items[n]!);
    if (counts === null) {
      if (k === first) continue;
      counts = new Map([[first, n]]);
    }
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  if (counts === null) return first;
  let best = first;
  for (const [k, c] of counts) if (c > counts.get(best)!) best = k;
  return best;
}

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

export async function commitBatch(store: Store, records: readonly JournalRecord[], fence: Fence | null = null): Promise<CommitResult> {
  const queues = new Map<string, { organization_id: string; name: string; state: QueueState | null }>();
  const inserts = new Map<string, Insert>();
  const usage = new Map<string, { organization_id: string; day: string; jobs_created: number }>();
  const updates = new Map<string, Update>();

  for (const rec of records) {
    if (rec.kind === 'queue') {
      queues.set(`${rec.organization_id}/${rec.name}`, rec);
    } else if (rec.kind === 'usage') {
      usage.set(`${rec.organization_id}/${rec.day}`, rec);
    } else if (rec.kind === 'insert') {
      // The record's row is the actor's: it is copied only when a later record of the group folds into it.
      inserts.set(rec.job.id, { row: rec.job, conflictKey: rec.conflictKey, own: false });
    } else {
      const ins = inserts.get(rec.id);
      if (ins) {
        if (!ins.own) {
          ins.row = { ...ins.row, errors: [...ins.row.errors] };
          ins.own = true;
        }
        Object.assign(ins.row, rec.state);
        if (rec.errors) ins.row.errors.push(...rec.errors);
        if (rec.result !== undefined) ins.row.result = rec.result;
        if (rec.payload !== undefined) ins.row.payload = rec.payload;
        if (rec.progress !== undefined) ins.progress = rec.progress;
        if (rec.dropKey) ins.row.idempotency_key = null;
        if (rec.clearExpiry) ins.row.expires_at = null;
        if (rec.confirm) ins.confirm = true;
        if (rec.returning) ins.returning = true;
        continue;
      }
      const prev = updates.get(rec.id);
      const extra = rec.payload !== undefined || rec.progress !== undefined || rec.dropKey || rec.clearExpiry
        ? {
            ...prev?.extra,
            ...(rec.payload !== undefined ? { payload: rec.payload } : {}),
            ...(rec.progress !== undefined ? { progress: rec.progress } : {}),
            ...(rec.dropKey ? { drop_key: true as const } : {}),
            ...(rec.clearExpiry ? { clear_expiry: true as const } : {}),
          }
        : (prev?.extra ?? null);
      updates.set(rec.id, {
        extra,
        state: rec.state,
        errors: [...(prev?.errors ?? []), ...(rec.errors ?? [])],
        result: rec.result !== undefined ? rec.result : prev?.result,
        hasResult: rec.result !== undefined || (prev?.hasResult ?? false),
        returning: (rec.returning ?? false) || (prev?.returning ?? false),
        confirm: (rec.confirm ?? false) || (prev?.confirm ?? false),
        // The first write of the group is the one that must find the row in the expected state.
        onlyFrom: prev ? prev.onlyFrom : (rec.onlyFrom?.join(',') ?? null),
      });
    }
  }

  const params: unknown[] = [];
  const p = (v: unknown[], type: string): string => {
    params.push(v);
    return `$${params.length}::${type}[]`;
  };
  const p1 = (v: unknown, type: string): string => {
    params.push(v);
    return `$${params.length}::${type}`;
  };
  // Job ids (the actors' own rows: always UUIDs) as one array literal: the driver's array encoding quotes and
  // escapes each element (2-3 % of the node's allocations in claim → complete).
  let idsParam: string | null = null;
  const ids = (): string => (idsParam ??= p1(`{${[...updates.keys()].join(',')}}`, 'uuid[]'));
  const ctes: string[] = [];
  const selects: string[] = [];
  /** Appended to every write's condition: true when there is no fence, else the fence's verdict. */
  let guard = '';
  if (fence !== null) {
    ctes.push(`fenced AS MATERIALIZED (SELECT sluice_fence(${p1(fence.node, 'uuid')}, ${p(fence.shards, 'int')}, ${p(fence.epochs, 'bigint')}) AS ok)`);
    guard = ' AND (SELECT ok FROM fenced)';
    selects.push(`SELECT 'f' AS k, NULL::uuid AS id, NULL::json AS row FROM fenced WHERE NOT ok`);
  }

  // A queue row has one writer, its actor, so its state is written whole: upserted, or deleted.
  const kept = [...queues.values()].filter((q) => q.state !== null);
  const dropped = [...queues.values()].filter((q) => q.state === null);
  if (kept.length > 0) {
    const col = <T>(f: (q: QueueState) => T, type: string) => p(kept.map((q) => f(q.state!)), type);
    ctes.push(`q AS (
      INSERT INTO queues (organization_id, name, paused, paused_reason, max_retries, lease_duration_secs, created_at, updated_at,
        concurrency_per_key, max_concurrency, rate_limit_jobs, rate_limit_per_seconds, paused_at)
      SELECT * FROM unnest(${p(kept.map((q) => q.organization_id), 'uuid')}, ${p(kept.map((q) => q.name), 'text')},
        ${col((q) => q.paused, 'bool')}, ${col((q) => q.paused_reason, 'text')}, ${col((q) => q.max_retries, 'int')},
        ${col((q) => q.lease_duration_secs, 'int')}, ${col((q) => iso(q.created_at), 'timestamptz')},
        ${col((q) => iso(q.updated_at), 'timestamptz')}, ${col((q) => q.concurrency_per_key, 'int')},
        ${col((q) => q.max_concurrency, 'int')}, ${col((q) => q.rate_limit?.jobs ?? null, 'int')},
        ${col((q) => q.rate_limit?.per_seconds ?? null, 'int')}, ${col((q) => iso(q.paused_at), 'timestamptz')})
      WHERE true${guard}
      ON CONFLICT (organization_id, name) DO UPDATE SET paused = EXCLUDED.paused, paused_reason = EXCLUDED.paused_reason,
        max_retries = EXCLUDED.max_retries, lease_duration_secs = EXCLUDED.lease_duration_secs,
        updated_at = EXCLUDED.updated_at, concurrency_per_key = EXCLUDED.concurrency_per_key,
        max_concurrency = EXCLUDED.max_concurrency, rate_limit_jobs = EXCLUDED.rate_limit_jobs,
        rate_limit_per_seconds = EXCLUDED.rate_limit_per_seconds, paused_at = EXCLUDED.paused_at)`);
  }
  if (dropped.length > 0) {
    ctes.push(`qd AS (
      DELETE FROM queues WHERE (organization_id, name) IN (
        SELECT * FROM unnest(${p(dropped.map((q) => q.organization_id), 'uuid')}, ${p(dropped.map((q) => q.name), 'text')}))${guard})`);
  }

  if (usage.size > 0) {
    const us = [...usage.values()];
    ctes.push(`ud AS (
      INSERT INTO usage_daily (organization_id, day, jobs_created)
      SELECT * FROM unnest(${p(us.map((u) => u.organization_id), 'uuid')}, ${p(us.map((u) => u.day), 'date')},
        ${p(us.map((u) => u.jobs_created), 'int')})
      WHERE true${guard}
      ON CONFLICT (organization_id, day) DO UPDATE SET jobs_created = EXCLUDED.jobs_created)`);
  }

  // Keyed inserts that may take a key over (see `fr` below); they read `upd`, which must then return its rows.
  const keyed = [...inserts.values()].filter((i) => i.conflictKey && i.row.idempotency_key !== null).map((i) => i.row);
  let returning = false;
  if (updates.size > 0) {
    const us = [...updates].map(([id, u]) => {
      const st = u.state;
      // Usual values stay out, as in insertJobs (COALESCE below).
      const o: Record<string, unknown> = { i: id, s: st.status, u: st.updated_at };
      if (st.priority !== 0) o.p = st.priority;
      if (st.retry_count !== 0) o.r = st.retry_count;
      if (!st.dependencies_met) o.d = false;
      // h and t are only ever tested (CASE WHEN): missing reads as NULL, which is false there.
      if (u.hasResult) o.h = true;
      if (u.returning) {
        o.t = true;
        returning = true;
      } else if (u.confirm) {
        o.cf = true;
        returning = true;
      }
      put(o, 'l', st.last_error);
      put(o, 'sa', st.scheduled_at);
      put(o, 'st', st.started_at);
      put(o, 'c', st.completed_at);
      put(o, 'w', st.assigned_worker_id);
      put(o, 'li', st.lease_id);
      put(o, 'le', st.lease_expires_at);
      put(o, 'v', u.result);
      if (u.errors.length > 0) o.e = u.errors;
      put(o, 'o', u.onlyFrom);
      put(o, 'x', u.extra);
      return o;
    });
    // The ids again as an array: the planner estimates json_to_recordset at 100 rows whatever it holds, and with
    // stale statistics (a table filled within the last minute) it then chose a hash join over a scan of the whole
    // table for every commit; `j.id = ANY (ids)` makes the primary key the way in, whatever the estimates.
    // Rows asked for come back as json text (row_to_json), not jsonb: PostgreSQL builds the text directly, at about
    // half the cost per row of building a jsonb and printing it, and the driver parses either with JSON.parse.
    ctes.push(`upd AS (
      UPDATE jobs j SET status = u.s, priority = COALESCE(u.p, 0), retry_count = COALESCE(u.r, 0), last_error = u.l, scheduled_at = ${ts('u.sa')},
        started_at = ${ts('u.st')}, completed_at = ${ts('u.c')}, updated_at = ${ts('u.u')}, assigned_worker_id = u.w, lease_id = u.li,
        lease_expires_at = ${ts('u.le')}, dependencies_met = COALESCE(u.d, true),
        result = CASE WHEN u.h THEN u.v ELSE j.result END,
        payload = COALESCE(u.x -> 'payload', j.payload),
        progress = COALESCE(u.x -> 'progress', j.progress),
        idempotency_key = CASE WHEN u.x ? 'drop_key' THEN NULL ELSE j.idempotency_key END,
        expires_at = CASE WHEN u.x ? 'clear_expiry' THEN NULL ELSE j.expires_at END,
        errors = CASE WHEN u.e IS NULL THEN j.errors ELSE j.errors || u.e END
      FROM json_to_recordset(${p1(JSON.stringify(us), 'json')}) AS u(i uuid, s text, p int, r int, l text, sa float8, st float8, c float8,
        u float8, w text, li uuid, le float8, h bool, v jsonb, e jsonb, t bool, cf bool, o text, d bool, x jsonb)
      WHERE j.id = ANY (${ids()}) AND j.id = u.i AND (u.o IS NULL OR j.status = ANY (string_to_array(u.o, ',')))${guard}
      ${returning || keyed.length > 0 ? `RETURNING j.id, CASE WHEN u.t THEN row_to_json(j) WHEN u.cf THEN '{}'::json END AS row` : ''})`);
    // Only the rows asked for come back (claims): a completion's answer is the actor's, not the row's.
    if (returning) selects.push(`SELECT 'u' AS k, id, row FROM upd WHERE row IS NOT NULL`);
  }

  // A keyed insert takes its key over from a row whose idempotency window is over (idempotency_expires_at), in this
  // same statement: `fr` clears the old row's key, and `ins` reads `fr` (and `upd`, where the actor dropped a live
  // job's key itself) before inserting, which makes both run first, so the unique index no longer sees the old key.
  // Rows this group also updates are left to `upd`: one statement must not modify a row twice.
  let takeOver = '';
  if (keyed.length > 0) {
    ctes.push(`fr AS (
      UPDATE jobs j SET idempotency_key = NULL
      FROM unnest(${p(keyed.map((r) => r.organization_id), 'uuid')}, ${p(keyed.map((r) => r.idempotency_key), 'text')},
        ${p(keyed.map((r) => iso(r.created_at)), 'timestamptz')}) AS k(org, ik, ca)
      WHERE j.organization_id = k.org AND j.idempotency_key = k.ik AND j.idempotency_expires_at <= k.ca
        AND j.id <> ALL (${ids()})${guard}
      RETURNING j.id)`);
    takeOver = ` AND (SELECT count(*) FROM fr) >= 0${updates.size > 0 ? ' AND (SELECT count(*) FROM upd) >= 0' : ''}`;
  }

  // Inserts go out in two parts. A job enqueued with an idempotency key may lose its key to an existing row:
  // its insert is an ON CONFLICT DO NOTHING, and the ids it returns say which rows went in. A job without one cannot
  // conflict (its id is new, and the key index is its only arbiter), so it is a plain insert whose rows are known to
  // be in once the statement succeeds: no speculative insertion (8 % of the WAL of an insert) and no row back per job,
  // only the rows of jobs claimed within the group (row_to_json, for the claim's reply).
  let insertShape = '';
  /** Plain inserts whose claims asked for a confirmation only: `{}` once the statement has succeeded. */
  const confirmed: string[] = [];
  if (inserts.size > 0) {
    const keyedIns: Insert[] = [];
    const plainIns: Insert[] = [];
    let claimedPlain = false;
    for (const i of inserts.values()) {
      if (i.conflictKey) keyedIns.push(i);
      else {
        plainIns.push(i);
        // A claim answered from its actor's row needs none back: the statement's success confirms the insert.
        if (i.row.status === 'processing' && (i.returning || !i.confirm)) claimedPlain = true;
        else if (i.confirm) confirmed.push(i.row.id);
      }
    }
    if (keyedIns.length > 0) {
      ctes.push(`ins AS (${insertJobs(p1, keyedIns)}
      WHERE true${guard}${takeOver}
      ON CONFLICT (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
      RETURNING id, CASE WHEN status = 'processing' THEN row_to_json(jobs) END AS row)`);
      selects.push(`SELECT 'i' AS k, id, row FROM ins`);
      insertShape += 'i';
    }
    if (plainIns.length > 0) {
      // Unreferenced, a data-modifying CTE still runs.
      ctes.push(`insp AS (${insertJobs(p1, plainIns)}
      WHERE true${guard}${claimedPlain ? `
      RETURNING id, CASE WHEN status = 'processing' THEN row_to_json(jobs) END AS row` : ''})`);
      if (claimedPlain) selects.push(`SELECT 'i' AS k, id, row FROM insp WHERE row IS NOT NULL`);
      insertShape += claimedPlain ? 'o' : 'p';
    }
  }

  if (selects.length === 0) selects.push(`SELECT NULL::text AS k, NULL::uuid AS id, NULL::json AS row WHERE false`);
  const sql = `WITH ${ctes.join(',\n')}\n${selects.join('\nUNION ALL\n')}`;
  // One shape of statement per combination of CTEs present: each is prepared once per connection. Letters: fenced,
  // queues upserted, deleted, usage, key takeover, keyed inserts, plain inserts (o: returning claimed rows), updates
  // (r: returning claimed rows).
  const shape = `commit_${fence !== null ? 'f' : ''}${kept.length > 0 ? 'q' : ''}${dropped.length > 0 ? 'd' : ''}${usage.size > 0 ? 'n' : ''}${keyed.length > 0 ? 'k' : ''}${insertShape}${updates.size > 0 ? (returning ? 'r' : 'u') : ''}`;
  const result = await store.query<{ k: string; id: string; row: Record<string, unknown> | null }>(sql, params, shape);

  const out: CommitResult = { rows: new Map(), inserted: new Set() };
  if (result.some((r) => r.k === 'f')) throw new FencedError(fence!.shards);
  for (const r of result) {
    if (r.k === 'i') out.inserted.add(r.id);
    if (r.row) out.rows.set(r.id, r.row);
  }
  for (const id of confirmed) if (!out.rows.has(id)) out.rows.set(id, {});
  return out;
}

/** The commit wrote nothing: at least one of its shards is no longer this node's (another holds a newer epoch). */
export class FencedError extends Error {
  constructor(readonly shards: number[]) {
    super(`deposed: shard(s) ${shards.join(', ')} are no longer this node's`);
    this.name = 'FencedError';
  }
}
