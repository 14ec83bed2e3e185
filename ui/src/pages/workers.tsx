// Registered workers and whether they still heartbeat. Registrations and deregistrations arrive as events;
// heartbeats do not (one event per worker every few seconds would crowd every stream), so this list alone is
// read again on a slow timer, 30 s, while a page that shows worker health is open.
import { useEffect } from 'preact/hooks';
import { all } from '../api';
import { LoadError, Loading, PageHeader, useAsync, type Async } from '../components';
import { dateTime, relative } from '../format';
import { useCoalesced, useNow, useOrgEvents, useResync } from '../live';
import { can } from '../session';
import { STALE_AFTER_S, type Worker } from '../types';

const HEARTBEAT_REREAD_MS = 30_000;

export function useWorkers(): Async<{ items: Worker[]; truncated: boolean } | null> {
  const readable = can('jobs:read');
  const workers = useAsync(() => (readable ? all<Worker>('/api/v1/workers', 1000) : Promise.resolve(null)), []);
  const reload = useCoalesced(workers.reload, 500);
  useOrgEvents((e) => {
    if (e.event.startsWith('worker.')) reload();
  });
  useResync(reload);
  useEffect(() => {
    if (!readable) return;
    const t = setInterval(workers.reload, HEARTBEAT_REREAD_MS);
    return () => clearInterval(t);
  }, []);
  return workers;
}

export const isStale = (w: Worker, now: number): boolean => now - Date.parse(w.last_heartbeat_at) > STALE_AFTER_S * 1000;

export function workerHealth(workers: Worker[], now: number): { healthy: number; stale: number } {
  const stale = workers.filter((w) => isStale(w, now)).length;
  return { healthy: workers.length - stale, stale };
}

export function WorkersPage() {
  const now = useNow();
  const workers = useWorkers();
  if (workers.error && !workers.data) return <LoadError error={workers.error} what="Workers" />;
  const list = workers.data?.items ?? [];
  const { healthy, stale } = workerHealth(list, now);
  return (
    <>
      <PageHeader title="Workers">
        <span class="muted">
          {healthy} healthy · {stale} stale (no heartbeat for {STALE_AFTER_S} s)
        </span>
      </PageHeader>
      <section class="panel">
        {workers.loading && !workers.data ? (
          <Loading />
        ) : list.length === 0 ? (
          <p class="muted">No registered workers. Workers may claim without registering; registered ones are listed here.</p>
        ) : (
          <table class="table">
            <thead>
              <tr>
                <th>Worker</th>
                <th>Health</th>
                <th>Queue</th>
                <th>Host</th>
                <th class="num">Concurrency</th>
                <th>Last heartbeat</th>
                <th>Registered</th>
              </tr>
            </thead>
            <tbody>
              {list.map((w) => (
                <tr key={w.worker_id}>
                  <td>
                    <code>{w.worker_id}</code>
                  </td>
                  <td>{isStale(w, now) ? <span class="badge status-stale">stale</span> : <span class="badge status-healthy">healthy</span>}</td>
                  <td>{w.queue_name ? <a href={`#/queues/${encodeURIComponent(w.queue_name)}`}>{w.queue_name}</a> : '—'}</td>
                  <td>{w.hostname ?? '—'}</td>
                  <td class="num">{w.max_concurrency ?? '—'}</td>
                  <td title={dateTime(w.last_heartbeat_at)}>{relative(w.last_heartbeat_at, now)}</td>
                  <td>{dateTime(w.registered_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {workers.data?.truncated && <p class="muted">Showing the first {list.length} workers.</p>}
      </section>
    </>
  );
}
