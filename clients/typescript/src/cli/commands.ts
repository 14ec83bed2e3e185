// The commands of `sluice`. Each is a path ("jobs list"), its options, and a run function that prints a table
// (or --json) and returns an exit code. Every request goes through the SDK client.
import fs from 'node:fs';
import { createInterface } from 'node:readline';
import { SluiceClient } from '../client.js';
import { QuotaExceededError, RateLimitedError, SluiceError } from '../errors.js';
import { sleep } from '../http.js';
import type { Paginator } from '../pagination.js';
import type { BulkItem, EventEnvelope, Job, JobDefinition, JobStatus, Permission, PlanTier } from '../types.js';
import { resolveConfig, UsageError } from './config.js';
import { json, keyValues, Progress, table, truncate, when, type Cell } from './output.js';

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  placeholder?: string;
  description: string;
}

export interface Ctx {
  positionals: string[];
  values: Record<string, string | boolean | string[] | undefined>;
  json: boolean;
}

export interface Command {
  path: string;
  /** Other paths that run it (`admin key create` for `keys create`). */
  aliases?: string[];
  usage: string;
  summary: string;
  details?: string;
  options?: Record<string, OptionSpec>;
  /** [min, max] positionals. */
  args?: [number, number];
  run(ctx: Ctx): Promise<number | void>;
}

const out = (s: string): void => void process.stdout.write(s);
const err = (s: string): void => void process.stderr.write(s);

const JOB_STATUSES = ['pending', 'scheduled', 'processing', 'completed', 'deadletter', 'cancelled'];
const PERMISSIONS = ['*', 'jobs:read', 'jobs:write', 'queues:read', 'queues:write', 'dlq:read', 'dlq:write'];
const PLANS = ['free', 'starter', 'pro', 'enterprise'];

function str(ctx: Ctx, name: string): string | undefined {
  const v = ctx.values[name];
  return typeof v === 'string' ? v : undefined;
}

/** A repeatable option's values; `split` also splits each on commas (not for tags, whose values may hold one). */
function list(ctx: Ctx, name: string, split = true): string[] {
  const v = ctx.values[name];
  const all = Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
  return (split ? all.flatMap((s) => s.split(',')) : all).map((s) => s.trim()).filter(Boolean);
}

function int(ctx: Ctx, name: string, min: number, max: number): number | undefined {
  const v = str(ctx, name);
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got "${v}"`);
  return Number(v);
}

function oneOf<T extends string>(ctx: Ctx, name: string, allowed: readonly string[]): T | undefined {
  const v = str(ctx, name);
  if (v !== undefined && !allowed.includes(v)) throw new UsageError(`--${name} must be one of ${allowed.join(', ')}, got "${v}"`);
  return v as T | undefined;
}

/** `30s`, `10m`, `2h`, `7d` → milliseconds. */
function duration(name: string, v: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(v);
  if (!m) throw new UsageError(`--${name} must be a duration such as 30s, 10m, 2h or 7d, got "${v}"`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms' | 's' | 'm' | 'h' | 'd'];
}

/** An ISO 8601 time, or a duration meaning that long ago (`older`) or from now. */
function instant(name: string, v: string, direction: 'ago' | 'ahead'): string {
  if (/^\d+(ms|s|m|h|d)$/.test(v)) {
    const ms = duration(name, v);
    return new Date(Date.now() + (direction === 'ago' ? -ms : ms)).toISOString();
  }
  if (Number.isNaN(Date.parse(v)) || !/^\d{4}-\d{2}-\d{2}T/.test(v)) throw new UsageError(`--${name} must be an ISO 8601 time (2030-01-01T12:00:00Z) or a duration (7d)`);
  return v;
}

function parseJson(what: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${what} is not valid JSON: ${(e as Error).message}`);
  }
}

function payloadOf(what: string, text: string): Record<string, unknown> {
  const v = parseJson(what, text);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new UsageError(`${what} must be a JSON object`);
  return v as Record<string, unknown>;
}

function connect(ctx: Ctx, need: 'key' | 'admin' = 'key'): SluiceClient {
  const cfg = resolveConfig(
    { url: str(ctx, 'url'), 'api-key': str(ctx, 'api-key'), 'admin-key': str(ctx, 'admin-key'), profile: str(ctx, 'profile') },
    process.env,
  );
  for (const w of cfg.warnings) err(`sluice: warning: ${w}\n`);
  if (need === 'key' && !cfg.apiKey) throw new UsageError('no API key: pass --api-key, set SLUICE_API_KEY, or add a profile to ~/.config/sluice/config.json');
  if (need === 'admin' && !cfg.adminKey) throw new UsageError('no admin key: pass --admin-key, set SLUICE_ADMIN_KEY, or add admin_key to the profile');
  try {
    return new SluiceClient({ url: cfg.url, apiKey: cfg.apiKey ?? '', adminKey: cfg.adminKey ?? '', userAgent: 'sluice-cli/0.1' });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/** `--limit N` items (paging as needed) or `--all`; one page of 20 by default. */
async function collect<T>(ctx: Ctx, make: (pageSize: number) => Paginator<T>): Promise<{ items: T[]; more: boolean }> {
  const all = ctx.values.all === true;
  const limit = int(ctx, 'limit', 1, 1_000_000) ?? 20;
  const items: T[] = [];
  let more = false;
  for await (const page of make(all ? 100 : Math.min(100, limit)).pages()) {
    for (const item of page.items) {
      if (!all && items.length >= limit) {
        more = true;
        break;
      }
      items.push(item);
    }
    if (more || (!all && items.length >= limit)) {
      more ||= page.nextCursor !== null;
      break;
    }
  }
  return { items, more };
}

function moreHint(ctx: Ctx, more: boolean): void {
  if (more && !ctx.json) err('(more results: raise --limit or pass --all)\n');
}

/** Asks before a change that cannot be undone, unless --yes. Refuses when nobody can answer. */
async function confirm(ctx: Ctx, question: string): Promise<boolean> {
  if (ctx.values.yes === true) return true;
  if (!process.stdin.isTTY) throw new UsageError(`${question.replace(/\?$/, '')}: pass --yes to confirm (stdin is not a terminal)`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await new Promise<string>((resolve) => rl.question(`${question} [y/N] `, resolve));
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

function progress(ctx: Ctx, label: string, total: number | null): Progress {
  const forced = ctx.values.progress === true ? true : ctx.values['no-progress'] === true ? false : undefined;
  return new Progress(process.stderr, label, total, forced ?? process.stderr.isTTY === true);
}

const PROGRESS_OPTIONS: Record<string, OptionSpec> = {
  progress: { type: 'boolean', description: 'draw the progress bar even when stderr is not a terminal' },
  'no-progress': { type: 'boolean', description: 'never draw the progress bar' },
};

const PAGE_OPTIONS: Record<string, OptionSpec> = {
  limit: { type: 'string', placeholder: 'n', description: 'show at most n (default 20)' },
  all: { type: 'boolean', description: 'every page' },
};

function jobRows(jobs: Job[]): string {
  return table(
    ['ID', 'QUEUE', 'STATUS', 'PRI', 'RETRIES', 'CREATED', 'LAST ERROR'],
    jobs.map((j) => [j.id, j.queue_name, j.status, j.priority, `${j.retry_count}/${j.max_retries}`, when(j.created_at), truncate(j.last_error, 40)]),
  );
}

function printJob(ctx: Ctx, j: Job): void {
  if (ctx.json) return out(json(j));
  const { payload, result, errors, ...rest } = j;
  out(keyValues({ ...rest, payload, result, errors: errors.length ? errors : null }));
}

// ---- enqueue ---------------------------------------------------------------------------------------------

const ENQUEUE_OPTIONS: Record<string, OptionSpec> = {
  payload: { type: 'string', short: 'd', placeholder: 'json', description: 'the payload, a JSON object (or give it as the second argument)' },
  priority: { type: 'string', placeholder: 'n', description: '-100…100, higher first' },
  'idempotency-key': { type: 'string', placeholder: 'key', description: 'the same key again returns the existing job' },
  delay: { type: 'string', placeholder: 'duration', description: 'claimable after 30s, 10m, 2h…' },
  at: { type: 'string', placeholder: 'time', description: 'claimable at this ISO 8601 time' },
  'max-retries': { type: 'string', placeholder: 'n', description: '0…100' },
  timeout: { type: 'string', placeholder: 'secs', description: 'lease / processing timeout, 5…3600' },
  tag: { type: 'string', multiple: true, placeholder: 'k=v', description: 'a tag (k=v, or k alone)' },
  webhook: { type: 'string', placeholder: 'url', description: 'completion callback URL' },
  file: { type: 'string', short: 'f', placeholder: 'path', description: 'NDJSON job definitions, one per line ("-": stdin)' },
  ...PROGRESS_OPTIONS,
};

async function enqueue(ctx: Ctx): Promise<number> {
  const [queue, inline] = ctx.positionals;
  const file = str(ctx, 'file');
  const given = inline !== undefined || str(ctx, 'payload') !== undefined;
  // Many jobs only when asked (--file), or when nothing names a single job (no queue, no payload): a script
  // that runs `sluice enqueue q` with some stdin must not have that stdin read as jobs.
  if (file !== undefined || (queue === undefined && !given)) {
    if (given) throw new UsageError('give either a payload or --file, not both');
    if (file === undefined && process.stdin.isTTY) throw new UsageError('usage: sluice enqueue <queue> [payload-json] | [<queue>] --file <ndjson|->');
    return enqueueNdjson(ctx, queue, file ?? '-');
  }
  if (!queue) throw new UsageError('usage: sluice enqueue <queue> [payload-json] [options]');
  if (inline !== undefined && str(ctx, 'payload') !== undefined) throw new UsageError('give the payload once: as an argument or with --payload');
  const payload = payloadOf('the payload', inline ?? str(ctx, 'payload') ?? '{}');
  if (str(ctx, 'delay') !== undefined && str(ctx, 'at') !== undefined) throw new UsageError('give --delay or --at, not both');
  const tags = Object.fromEntries(
    list(ctx, 'tag', false).map((t) => {
      const i = t.indexOf('=');
      return i < 0 ? [t, ''] : [t.slice(0, i), t.slice(i + 1)];
    }),
  );
  const def: JobDefinition = { queue_name: queue, payload };
  const priority = int(ctx, 'priority', -100, 100);
  if (priority !== undefined) def.priority = priority;
  const key = str(ctx, 'idempotency-key');
  if (key !== undefined) def.idempotency_key = key;
  const delay = str(ctx, 'delay');
  if (delay !== undefined) def.scheduled_at = new Date(Date.now() + duration('delay', delay));
  const at = str(ctx, 'at');
  if (at !== undefined) def.scheduled_at = instant('at', at, 'ahead');
  const retries = int(ctx, 'max-retries', 0, 100);
  if (retries !== undefined) def.max_retries = retries;
  const timeout = int(ctx, 'timeout', 5, 3600);
  if (timeout !== undefined) def.timeout_seconds = timeout;
  if (Object.keys(tags).length > 0) def.tags = tags;
  const webhook = str(ctx, 'webhook');
  if (webhook !== undefined) def.completion_webhook = webhook;
  const job = await connect(ctx).jobs.enqueue(def);
  if (ctx.json) out(json(job));
  else out(`${job.created ? 'enqueued' : 'exists  '} ${job.id}  queue=${job.queue_name} status=${job.status}${job.scheduled_at ? ` at=${job.scheduled_at}` : ''}\n`);
  return 0;
}

/** One job definition per line, sent 100 at a time through the bulk route. */
async function enqueueNdjson(ctx: Ctx, queue: string | undefined, file: string): Promise<number> {
  const client = connect(ctx);
  let input: NodeJS.ReadableStream;
  let size: number | null = null;
  if (file === '-') input = process.stdin;
  else {
    try {
      size = fs.statSync(file).size;
    } catch (e) {
      throw new UsageError(`cannot read ${file}: ${(e as Error).message}`);
    }
    input = fs.createReadStream(file);
  }
  const bar = progress(ctx, 'enqueue', size);
  let bytes = 0;
  let lineNo = 0;
  let batch: Array<{ line: number; item: BulkItem }> = [];
  const jobs: Array<{ line: number; id: string; created: boolean }> = [];
  const failures: Array<{ line: number; code: string; message: string }> = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const items = batch;
    batch = [];
    for (;;) {
      try {
        const r = await client.jobs.enqueueBulk(items.map((b) => b.item));
        for (const s of r.succeeded) jobs.push({ line: items[s.index]!.line, id: s.id, created: s.created });
        for (const f of r.failed) failures.push({ line: items[f.index]!.line, code: f.error.code, message: f.error.message });
        break;
      } catch (e) {
        // A rate-limited request did nothing on the service: wait as told and send the same batch again.
        if (e instanceof RateLimitedError && e.retryAfter !== null) {
          await sleep(e.retryAfter * 1000 + 50);
          continue;
        }
        if (e instanceof SluiceError && (e.status === 422 || e.status === 413 || e instanceof QuotaExceededError)) {
          for (const b of items) failures.push({ line: b.line, code: e.code, message: e.message });
          break;
        }
        throw e;
      }
    }
    bar.update(jobs.length + failures.length, size === null ? null : size);
  };
  const rl = createInterface({ input, crlfDelay: Infinity });
  for await (const raw of rl) {
    lineNo++;
    bytes += Buffer.byteLength(raw) + 1;
    const line = raw.trim();
    if (line === '') continue;
    let def: unknown;
    try {
      def = JSON.parse(line);
    } catch (e) {
      failures.push({ line: lineNo, code: 'BAD_JSON', message: (e as Error).message });
      continue;
    }
    if (def === null || typeof def !== 'object' || Array.isArray(def)) {
      failures.push({ line: lineNo, code: 'BAD_LINE', message: 'a line must be a JSON object: a job definition' });
      continue;
    }
    const item = { ...(queue !== undefined ? { queue_name: queue } : {}), ...(def as BulkItem) };
    if (item.queue_name === undefined) {
      failures.push({ line: lineNo, code: 'BAD_LINE', message: 'no queue_name (give one on the line or as the first argument)' });
      continue;
    }
    batch.push({ line: lineNo, item });
    if (batch.length === 100) await flush();
    if (size !== null) bar.update(bytes, size);
    else bar.update(jobs.length + failures.length + batch.length);
  }
  await flush();
  bar.finish();
  if (jobs.length + failures.length === 0) throw new UsageError(file === '-' ? 'nothing to enqueue: no payload given and nothing on stdin' : `${file} holds no job definitions`);
  failures.sort((a, b) => a.line - b.line);
  const created = jobs.filter((j) => j.created).length;
  if (ctx.json) {
    out(json({ total: jobs.length + failures.length, created, existing: jobs.length - created, failed: failures.length, jobs, failures }));
  } else {
    for (const f of failures) err(`line ${f.line}: ${f.code}: ${f.message}\n`);
    out(`enqueued ${created}${jobs.length > created ? `, ${jobs.length - created} existed already` : ''}${failures.length ? `, ${failures.length} failed` : ''}\n`);
  }
  return failures.length > 0 ? 1 : 0;
}

// ---- dlq -------------------------------------------------------------------------------------------------

/** The DLQ job ids a retry or purge acts on: the ids given, or every dead letter matching the filters. */
async function dlqTargets(ctx: Ctx, client: SluiceClient, olderThan?: string): Promise<string[]> {
  if (ctx.positionals.length > 0) {
    if (str(ctx, 'queue') !== undefined || olderThan !== undefined) throw new UsageError('give job ids or filters, not both');
    return ctx.positionals;
  }
  if (str(ctx, 'queue') === undefined && ctx.values.all !== true) throw new UsageError('give job ids, --queue <name>, or --all (every dead letter)');
  const ids: string[] = [];
  const cutoff = olderThan === undefined ? null : Date.parse(olderThan);
  for await (const j of client.dlq.list({ queue_name: str(ctx, 'queue'), limit: 100 })) {
    if (cutoff !== null && !(j.completed_at !== null && Date.parse(j.completed_at) < cutoff)) continue;
    ids.push(j.id);
  }
  return ids;
}

function describeTargets(ctx: Ctx, n: number, olderThan?: string): string {
  const scope = ctx.positionals.length > 0 ? '' : str(ctx, 'queue') !== undefined ? ` of queue ${str(ctx, 'queue')}` : ' of every queue';
  return `${n} dead-lettered job${n === 1 ? '' : 's'}${scope}${olderThan ? ` dead-lettered before ${olderThan}` : ''}`;
}

async function dlqRetry(ctx: Ctx): Promise<number> {
  const client = connect(ctx);
  const ids = await dlqTargets(ctx, client);
  if (ids.length === 0) {
    if (ctx.json) out(json({ retried: 0, job_ids: [], failed: [] }));
    else out('nothing to retry\n');
    return 0;
  }
  if (!(await confirm(ctx, `Retry ${describeTargets(ctx, ids.length)}?`))) {
    err('aborted\n');
    return 1;
  }
  const bar = progress(ctx, 'retry', ids.length);
  const retried: string[] = [];
  const failed: Array<{ id: string; error: string }> = [];
  for (let i = 0; i < ids.length; i += 100) {
    const r = await client.dlq.retry({ job_ids: ids.slice(i, i + 100) });
    retried.push(...r.job_ids);
    failed.push(...r.failed);
    bar.update(Math.min(ids.length, i + 100));
  }
  bar.finish();
  if (ctx.json) out(json({ retried: retried.length, job_ids: retried, failed }));
  else {
    for (const f of failed) err(`${f.id}: ${f.error}\n`);
    out(`retried ${retried.length}${failed.length ? `, ${failed.length} not retried` : ''}\n`);
  }
  return failed.length > 0 ? 1 : 0;
}

async function dlqPurge(ctx: Ctx): Promise<number> {
  const client = connect(ctx);
  const olderThan = str(ctx, 'older-than') === undefined ? undefined : instant('older-than', str(ctx, 'older-than')!, 'ago');
  const ids = await dlqTargets(ctx, client, olderThan);
  if (ids.length === 0) {
    if (ctx.json) out(json({ purged: 0 }));
    else out('nothing to purge\n');
    return 0;
  }
  if (!(await confirm(ctx, `Delete ${describeTargets(ctx, ids.length, olderThan)} for good?`))) {
    err('aborted\n');
    return 1;
  }
  const bar = progress(ctx, 'purge', ids.length);
  let purged = 0;
  for (let i = 0; i < ids.length; i += 100) {
    purged += (await client.dlq.purge({ job_ids: ids.slice(i, i + 100), confirm: true })).purged;
    bar.update(Math.min(ids.length, i + 100));
  }
  bar.finish();
  if (ctx.json) out(json({ purged }));
  else out(`purged ${purged}\n`);
  return 0;
}

// ---- tail ------------------------------------------------------------------------------------------------

function eventLine(e: EventEnvelope): string {
  const { job_id, queue_name, status, ...rest } = e.data as Record<string, unknown>;
  const extra = Object.keys(rest).length > 0 ? truncate(JSON.stringify(rest), 120) : '';
  return `${when(e.created_at)}  ${e.event.padEnd(19)} ${String(queue_name ?? '-').padEnd(16)} ${String(job_id ?? '-').padEnd(36)} ${String(status ?? '-').padEnd(10)} ${extra}`.trimEnd() + '\n';
}

async function tail(ctx: Ctx): Promise<number> {
  const client = connect(ctx);
  const count = int(ctx, 'count', 1, Number.MAX_SAFE_INTEGER);
  const ctl = new AbortController();
  const stop = () => ctl.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let seen = 0;
  try {
    const events = list(ctx, 'event');
    const stream = client.events.stream({
      queue: str(ctx, 'queue'),
      ...(events.length > 0 ? { events } : {}),
      signal: ctl.signal,
      // Notices go to stderr in both modes: stdout carries only events.
      onOpen: (n) => err(n === 0 ? `listening on ${client.url} (Ctrl-C to stop)\n` : 'reconnected (events sent meanwhile are not replayed)\n'),
      onReconnect: ({ delayMs, error }) =>
        err(`connection lost (${error instanceof Error ? error.message : String(error)}); reconnecting in ${Math.round(delayMs)} ms\n`),
    });
    for await (const e of stream) {
      out(ctx.json ? `${JSON.stringify(e)}\n` : eventLine(e));
      if (count !== undefined && ++seen >= count) break;
    }
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  return 0;
}

// ---- the table -------------------------------------------------------------------------------------------

export const COMMANDS: Command[] = [
  {
    path: 'enqueue',
    usage: '<queue> [payload-json] | [<queue>] --file <ndjson|->',
    summary: 'Enqueue one job, or many from NDJSON (--file, or stdin piped into `sluice enqueue`)',
    details:
      'Many: each line is a job definition such as {"payload": {...}, "idempotency_key": "…", "priority": 10}; queue_name defaults\n' +
      'to the first argument. `--file -` reads stdin, and so does `sluice enqueue` with no argument. Lines go 100 per request;\n' +
      'a progress bar is drawn on stderr when it is a terminal.\n' +
      'Lines the service refuses are listed on stderr (exit 1); the others are enqueued.',
    options: ENQUEUE_OPTIONS,
    args: [0, 2],
    run: enqueue,
  },
  {
    path: 'jobs get',
    usage: '<id>',
    summary: 'Show a job',
    args: [1, 1],
    run: async (ctx) => printJob(ctx, await connect(ctx).jobs.get(ctx.positionals[0]!)),
  },
  {
    path: 'jobs list',
    usage: '[options]',
    summary: 'List jobs, newest first',
    options: {
      queue: { type: 'string', short: 'q', placeholder: 'name', description: 'only this queue' },
      status: { type: 'string', placeholder: 'status', description: JOB_STATUSES.join(', ') },
      tag: { type: 'string', multiple: true, placeholder: 'k[:v]', description: 'has this tag (all must match)' },
      ...PAGE_OPTIONS,
    },
    run: async (ctx) => {
      const client = connect(ctx);
      const status = oneOf<JobStatus>(ctx, 'status', JOB_STATUSES);
      const { items, more } = await collect(ctx, (limit) =>
        client.jobs.list({ queue_name: str(ctx, 'queue'), ...(status ? { status } : {}), tag: list(ctx, 'tag', false), limit }),
      );
      out(ctx.json ? json(items) : jobRows(items));
      moreHint(ctx, more);
    },
  },
  {
    path: 'jobs cancel',
    usage: '<id>...',
    summary: 'Cancel jobs',
    args: [1, 1000],
    run: async (ctx) => {
      const client = connect(ctx);
      const done = [];
      for (const id of ctx.positionals) done.push(await client.jobs.cancel(id));
      out(ctx.json ? json(done) : done.map((d) => `cancelled ${d.id}\n`).join(''));
    },
  },
  {
    path: 'jobs explain',
    usage: '<id>',
    summary: 'Why a job is not running: every reason that holds now',
    args: [1, 1],
    run: async (ctx) => {
      const e = await connect(ctx).jobs.explain(ctx.positionals[0]!);
      if (ctx.json) return out(json(e));
      const head = `${e.id}  ${e.status} in ${e.queue_name}\n`;
      if (e.reasons.length === 0) return out(head + (e.running ? 'running now\n' : 'nothing holds it\n'));
      out(head + e.reasons.map((r) => `- ${r.reason}: ${r.message}\n`).join(''));
    },
  },
  {
    path: 'jobs retry',
    usage: '<id>...',
    summary: 'Retry dead-lettered or cancelled jobs (retry count reset)',
    args: [1, 1000],
    run: async (ctx) => {
      const client = connect(ctx);
      const done = [];
      for (const id of ctx.positionals) done.push(await client.jobs.retry(id));
      out(ctx.json ? json(done) : done.map((d) => `retried ${d.id}  status=${d.status}\n`).join(''));
    },
  },
  {
    path: 'queues list',
    usage: '[options]',
    summary: 'List queues with their job counts',
    options: PAGE_OPTIONS,
    run: async (ctx) => {
      const client = connect(ctx);
      const { items, more } = await collect(ctx, (limit) => client.queues.list({ limit }));
      if (ctx.json) out(json(items));
      else {
        out(
          table(
            ['NAME', 'PAUSED', 'PENDING', 'SCHEDULED', 'PROCESSING', 'COMPLETED', 'DEADLETTER'],
            items.map((q) => [q.name, q.paused ? 'yes' : 'no', q.counts?.pending, q.counts?.scheduled, q.counts?.processing, q.counts?.completed, q.counts?.deadletter]),
          ),
        );
      }
      moreHint(ctx, more);
    },
  },
  {
    path: 'queues stats',
    usage: '<name>',
    summary: "A queue's counts, oldest pending age and last-minute throughput",
    args: [1, 1],
    run: async (ctx) => {
      const s = await connect(ctx).queues.stats(ctx.positionals[0]!);
      out(ctx.json ? json(s) : keyValues(s));
    },
  },
  {
    path: 'queues pause',
    usage: '<name>',
    summary: 'Pause a queue (claims get nothing until resumed)',
    options: { reason: { type: 'string', placeholder: 'text', description: 'why, shown with the queue' } },
    args: [1, 1],
    run: async (ctx) => {
      const q = await connect(ctx).queues.pause(ctx.positionals[0]!, str(ctx, 'reason'));
      out(ctx.json ? json(q) : `paused ${q.name}\n`);
    },
  },
  {
    path: 'queues resume',
    usage: '<name>',
    summary: 'Resume a paused queue',
    args: [1, 1],
    run: async (ctx) => {
      const q = await connect(ctx).queues.resume(ctx.positionals[0]!);
      out(ctx.json ? json(q) : `resumed ${q.name}\n`);
    },
  },
  {
    path: 'dlq list',
    usage: '[options]',
    summary: 'List dead-lettered jobs with their last error',
    options: { queue: { type: 'string', short: 'q', placeholder: 'name', description: 'only this queue' }, ...PAGE_OPTIONS },
    run: async (ctx) => {
      const client = connect(ctx);
      const { items, more } = await collect(ctx, (limit) => client.dlq.list({ queue_name: str(ctx, 'queue'), limit }));
      if (ctx.json) out(json(items));
      else out(table(['ID', 'QUEUE', 'ATTEMPTS', 'DEAD SINCE', 'LAST ERROR'], items.map((j) => [j.id, j.queue_name, j.retry_count + 1, when(j.completed_at), truncate(j.last_error, 60)])));
      moreHint(ctx, more);
    },
  },
  {
    path: 'dlq retry',
    usage: '[<id>...] [--queue <name> | --all] [--yes]',
    summary: 'Retry dead-lettered jobs: the ids given, or every one of a queue (asks first)',
    options: {
      queue: { type: 'string', short: 'q', placeholder: 'name', description: 'every dead letter of this queue' },
      all: { type: 'boolean', description: 'every dead letter of every queue' },
      yes: { type: 'boolean', short: 'y', description: 'do not ask' },
      ...PROGRESS_OPTIONS,
    },
    args: [0, 10_000],
    run: dlqRetry,
  },
  {
    path: 'dlq purge',
    usage: '[<id>...] [--queue <name> | --all] [--older-than <7d|time>] [--yes]',
    summary: 'Delete dead-lettered jobs for good (asks first)',
    options: {
      queue: { type: 'string', short: 'q', placeholder: 'name', description: 'the dead letters of this queue' },
      all: { type: 'boolean', description: 'the dead letters of every queue' },
      'older-than': { type: 'string', placeholder: 'age|time', description: 'only those dead-lettered before (7d, 12h, or an ISO time)' },
      yes: { type: 'boolean', short: 'y', description: 'do not ask' },
      ...PROGRESS_OPTIONS,
    },
    args: [0, 10_000],
    run: dlqPurge,
  },
  {
    path: 'workers list',
    usage: '[options]',
    summary: 'List registered workers',
    options: PAGE_OPTIONS,
    run: async (ctx) => {
      const client = connect(ctx);
      const { items, more } = await collect(ctx, (limit) => client.workers.list({ limit }));
      if (ctx.json) out(json(items));
      else out(table(['ID', 'QUEUE', 'HOST', 'CONCURRENCY', 'LAST HEARTBEAT'], items.map((w) => [w.id, w.queue_name, w.hostname, w.max_concurrency, when(w.last_heartbeat_at)])));
      moreHint(ctx, more);
    },
  },
  {
    path: 'schedules list',
    usage: '[options]',
    summary: 'List schedules',
    options: PAGE_OPTIONS,
    run: async (ctx) => {
      const client = connect(ctx);
      const { items, more } = await collect(ctx, (limit) => client.schedules.list({ limit }));
      if (ctx.json) out(json(items));
      else {
        out(
          table(
            ['ID', 'NAME', 'CRON', 'TIMEZONE', 'QUEUE', 'PAUSED', 'NEXT RUN'],
            items.map((s) => [s.id, s.name, s.cron_expression, s.timezone, s.queue_name, s.paused ? 'yes' : 'no', when(s.next_run_at)]),
          ),
        );
      }
      moreHint(ctx, more);
    },
  },
  {
    path: 'schedules trigger',
    usage: '<id>',
    summary: "Run a schedule now (enqueues its job)",
    args: [1, 1],
    run: async (ctx) => {
      const run = await connect(ctx).schedules.trigger(ctx.positionals[0]!);
      out(ctx.json ? json(run) : `triggered ${run.schedule_id}: job ${run.job.id} in ${run.job.queue_name}\n`);
    },
  },
  {
    path: 'tail',
    usage: '[--queue <name>] [--event <name>]...',
    summary: 'Print live events (SSE) until Ctrl-C',
    details: 'Events: job.created, job.started, job.completed, job.failed, job.cancelled, queue.paused, …; `job.*` takes a family.\n--json prints one envelope {id, event, created_at, data} per line.',
    options: {
      queue: { type: 'string', short: 'q', placeholder: 'name', description: 'only events of this queue' },
      event: { type: 'string', short: 'e', multiple: true, placeholder: 'name', description: 'only these events (comma-separated or repeated)' },
      count: { type: 'string', short: 'n', placeholder: 'n', description: 'stop after n events' },
    },
    run: tail,
  },
  {
    path: 'admin org create',
    usage: '--name <name> --slug <slug> [--plan <tier>] [--owner-email <address>]',
    summary: 'Create an organization and its first API key (admin key needed)',
    options: {
      name: { type: 'string', placeholder: 'name', description: 'display name' },
      slug: { type: 'string', placeholder: 'slug', description: '2–63 of a-z 0-9 -' },
      plan: { type: 'string', placeholder: 'tier', description: PLANS.join(', ') + ' (default free)' },
      'owner-email': { type: 'string', placeholder: 'address', description: 'where email login codes go' },
    },
    run: async (ctx) => {
      const name = str(ctx, 'name');
      const slug = str(ctx, 'slug');
      if (!name || !slug) throw new UsageError('--name and --slug are required');
      const plan = oneOf<PlanTier>(ctx, 'plan', PLANS);
      const owner = str(ctx, 'owner-email');
      const r = await connect(ctx, 'admin').admin.organizations.create({ name, slug, ...(plan ? { plan } : {}), ...(owner ? { owner_email: owner } : {}) });
      if (ctx.json) return out(json(r));
      out(keyValues({ organization: r.organization.id, slug: r.organization.slug, plan: r.organization.plan, api_key: r.api_key.key }));
      err('the API key is shown this once: store it now\n');
    },
  },
  {
    path: 'keys create',
    aliases: ['admin key create'],
    usage: '--name <name> [--permissions <p,…>]',
    summary: "Create an API key of the key's organization",
    options: {
      name: { type: 'string', placeholder: 'name', description: 'what it is for' },
      permissions: { type: 'string', multiple: true, placeholder: 'p,…', description: `${PERMISSIONS.join(', ')} (default *)` },
    },
    run: async (ctx) => {
      const name = str(ctx, 'name');
      if (!name) throw new UsageError('--name is required');
      const perms = list(ctx, 'permissions');
      const bad = perms.filter((p) => !PERMISSIONS.includes(p));
      if (bad.length) throw new UsageError(`unknown permission ${bad.join(', ')} (known: ${PERMISSIONS.join(', ')})`);
      const k = await connect(ctx).apiKeys.create(name, perms.length ? (perms as Permission[]) : undefined);
      if (ctx.json) return out(json(k));
      out(keyValues({ id: k.id, name: k.name, permissions: k.permissions.join(','), key: k.key }));
      err('the key is shown this once: store it now\n');
    },
  },
  {
    path: 'keys list',
    aliases: ['admin key list'],
    usage: '[options]',
    summary: 'List API keys (never their values)',
    options: PAGE_OPTIONS,
    run: async (ctx) => {
      const client = connect(ctx);
      const { items, more } = await collect(ctx, (limit) => client.apiKeys.list({ limit }));
      if (ctx.json) out(json(items));
      else out(table(['ID', 'NAME', 'PREFIX', 'PERMISSIONS', 'STATUS', 'LAST USED'], items.map((k) => [k.id, k.name, k.key_prefix, k.permissions.join(','), k.status, when(k.last_used_at)] as Cell[])));
      moreHint(ctx, more);
    },
  },
  {
    path: 'keys revoke',
    aliases: ['admin key revoke'],
    usage: '<id>',
    summary: 'Revoke an API key (it and its tokens stop working at once)',
    args: [1, 1],
    run: async (ctx) => {
      const k = await connect(ctx).apiKeys.revoke(ctx.positionals[0]!);
      out(ctx.json ? json(k) : `revoked ${k.id} (${k.name})\n`);
    },
  },
];
