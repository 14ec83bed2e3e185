// The organization at a glance: every queue with its counts, throughput and oldest pending age, job totals,
// and worker health. One org event stream drives it: an event naming a queue re-reads that queue's stats
// (at most once a second per burst), and a last read a minute after the queue goes quiet lets the
// one-minute throughput drain to its true value.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { all, enc, get, post } from '../api';
import { Action, LoadError, Loading, PageHeader, Stat, useAsync } from '../components';
import { count, duration } from '../format';
import { useCoalesced, useNow, useOrgEvents, useResync } from '../live';
import { href } from '../router';
import { can } from '../session';
import type { JobStats, Queue, QueueStats } from '../types';
import { useWorkers, workerHealth } from './workers';

const THROUGHPUT_WINDOW_MS = 61_000;
const PARALLEL_READS = 4;

interface Seen {
  stats: QueueStats;
  /** Page clock when the stats were read: the oldest pending age goes on growing from there. */
  at: number;
}

/** Per-queue stats, re-read for the queues marked dirty. */
function useQueueStats(names: string[] | undefined) {
  const [stats, setStats] = useState<Record<string, Seen>>({});
  const dirty = useRef(new Set<string>());
  const drains = useRef(new Map<string, ReturnType<typeof setTimeout>>());
  const flush = useCoalesced(async () => {
    const batch = [...dirty.current];
    dirty.current.clear();
    for (let i = 0; i < batch.length; i += PARALLEL_READS) {
      const read = await Promise.all(
        batch.slice(i, i + PARALLEL_READS).map((name) =>
          get<QueueStats>(`/api/v1/queues/${enc(name)}/stats`).then(
            (s) => [name, s] as const,
            () => [name, null] as const,
          ),
        ),
      );
      setStats((prev) => {
        const next = { ...prev };
        for (const [name, s] of read) {
          if (s) next[name] = { stats: s, at: Date.now() };
          else delete next[name];
        }
        return next;
      });
    }
  }, 1000);
  const mark = (name: string, drain: boolean) => {
    dirty.current.add(name);
    flush();
    if (!drain) return;
    clearTimeout(drains.current.get(name));
    drains.current.set(
      name,
      setTimeout(() => mark(name, false), THROUGHPUT_WINDOW_MS),
    );
  };
  useEffect(() => {
    for (const n of names ?? []) dirty.current.add(n);
    flush();
  }, [names]);
  useEffect(() => () => drains.current.forEach((t) => clearTimeout(t)), []);
  return { stats, mark };
}

export function Overview() {
  const now = useNow();
  const readsQueues = can('queues:read');
  const readsJobs = can('jobs:read');
  const queues = useAsync(() => (readsQueues ? all<Queue>('/api/v1/queues', 500) : Promise.resolve({ items: [], truncated: false })), []);
  const names = useMemo(() => queues.data?.items.map((q) => q.name), [queues.data]);
  const { stats, mark } = useQueueStats(names);
  const totals = useAsync(() => (readsJobs ? get<JobStats>('/api/v1/jobs/stats') : Promise.resolve(null)), []);
  const workers = useWorkers();
  const reloadQueues = useCoalesced(queues.reload, 1000);
  const reloadTotals = useCoalesced(totals.reload, 1000);

  useOrgEvents((e) => {
    const q = e.data.queue_name;
    if (typeof q === 'string') {
      if (names && !names.includes(q)) reloadQueues();
      else mark(q, true);
    }
    if (e.event.startsWith('job.')) reloadTotals();
    if (e.event === 'queue.paused' || e.event === 'queue.resumed') reloadQueues();
  });
  useResync(() => {
    queues.reload();
    totals.reload();
    for (const n of names ?? []) mark(n, false);
  });

  if (!readsQueues) {
    return (
      <div class="panel empty">
        <h2>Overview</h2>
        <p>This key may not read queues (queues:read). {readsJobs && <a href="#/jobs">Browse jobs</a>}</p>
      </div>
    );
  }
  if (queues.error && !queues.data) return <LoadError error={queues.error} what="Queues" />;
  const list = queues.data?.items ?? [];
  const health = workerHealth(workers.data?.items ?? [], now);
  const counts = totals.data?.counts;
  const mayWrite = can('queues:write');
  return (
    <>
      <PageHeader title="Overview" />
      <section class="stats">
        <Stat label="pending" value={count(counts?.pending)} />
        <Stat label="scheduled" value={count(counts?.scheduled)} hint="delayed, or waiting for a retry" />
        <Stat label="processing" value={count(counts?.processing)} />
        <Stat label="dead letters" value={count(counts?.deadletter)} tone={counts && counts.deadletter > 0 ? 'bad' : undefined} />
        <Stat label="completed (kept)" value={count(counts?.completed)} hint="until the plan's retention removes them" />
        {readsJobs && (
          <Stat
            label={`workers healthy · stale`}
            value={
              <a href="#/workers">
                {health.healthy} · {health.stale}
              </a>
            }
            tone={health.stale > 0 ? 'warn' : undefined}
            hint="stale: no heartbeat for a minute"
          />
        )}
      </section>
      <section class="panel">
        <h2>Queues</h2>
        {queues.loading && !queues.data ? (
          <Loading />
        ) : list.length === 0 ? (
          <p class="muted">No queues yet: they appear with their first job.</p>
        ) : (
          <table class="table" data-testid="queues-table">
            <thead>
              <tr>
                <th>Queue</th>
                <th class="num">Pending</th>
                <th class="num">Scheduled</th>
                <th class="num">Processing</th>
                <th class="num">Dead letters</th>
                <th class="num" title="jobs completed in the last 60 seconds">Done /min</th>
                <th class="num" title="failed attempts (retries and dead letters) in the last 60 seconds">Failed /min</th>
                <th class="num">Oldest pending</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.map((q) => {
                const seen = stats[q.name];
                const s = seen?.stats;
                const c = s ?? q.counts;
                const age = seen && seen.stats.oldest_pending_age_seconds !== null ? seen.stats.oldest_pending_age_seconds + (now - seen.at) / 1000 : null;
                const paused = s?.paused ?? q.paused;
                return (
                  <tr key={q.name} data-queue={q.name}>
                    <td>
                      <a href={`#/queues/${enc(q.name)}`}>{q.name}</a> {paused && <span class="badge status-paused">paused</span>}
                    </td>
                    <td class="num">
                      <a href={href('/jobs', { queue: q.name, status: 'pending' })}>{count(c.pending)}</a>
                    </td>
                    <td class="num">{count(c.scheduled)}</td>
                    <td class="num">{count(c.processing)}</td>
                    <td class={`num ${c.deadletter > 0 ? 'bad' : ''}`}>
                      <a href={href('/dlq', { queue: q.name })}>{count(c.deadletter)}</a>
                    </td>
                    <td class="num">{s ? count(s.throughput_last_minute.completed) : '—'}</td>
                    <td class={`num ${s && s.throughput_last_minute.failed > 0 ? 'warn' : ''}`}>{s ? count(s.throughput_last_minute.failed) : '—'}</td>
                    <td class={`num ${age !== null && age > 300 ? 'warn' : ''}`}>{age === null ? '—' : duration(age)}</td>
                    <td class="actions">
                      {mayWrite &&
                        (paused ? (
                          <Action run={() => post(`/api/v1/queues/${enc(q.name)}/resume`).then(() => mark(q.name, false))} done={`${q.name} resumed`}>
                            Resume
                          </Action>
                        ) : (
                          <Action run={() => post(`/api/v1/queues/${enc(q.name)}/pause`).then(() => mark(q.name, false))} done={`${q.name} paused`}>
                            Pause
                          </Action>
                        ))}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
        {queues.data?.truncated && <p class="muted">Showing the first {list.length} queues.</p>}
      </section>
    </>
  );
}
