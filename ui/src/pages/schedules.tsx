// Cron schedules: next fire time, pause/resume, a manual trigger, and each schedule's run history. A
// `schedule.triggered` event re-reads what it touched.
import { all, enc, get, page, post } from '../api';
import { Action, Json, LoadError, Loading, PageHeader, useAsync } from '../components';
import { dateTime, relative, shortId } from '../format';
import { useCoalesced, useNow, useOrgEvents, useResync } from '../live';
import { can } from '../session';
import type { Schedule, ScheduleRun } from '../types';
import { Pager, usePaging } from './jobs';

function ScheduleActions({ s, changed }: { s: Schedule; changed: () => void }) {
  if (!can('jobs:write')) return null;
  return (
    <>
      {s.paused ? (
        <Action run={() => post(`/api/v1/schedules/${s.id}/resume`).then(changed)} done={`${s.name} resumed`}>
          Resume
        </Action>
      ) : (
        <Action run={() => post(`/api/v1/schedules/${s.id}/pause`).then(changed)} done={`${s.name} paused`}>
          Pause
        </Action>
      )}
      <Action kind="primary" run={() => post<{ job?: { id: string } }>(`/api/v1/schedules/${s.id}/trigger`).then((r) => (changed(), r))} done={(r: { job?: { id: string } }) => `Triggered: job ${r.job ? shortId(r.job.id) : ''}`}>
        Trigger now
      </Action>
    </>
  );
}

function NextRun({ s, now }: { s: Schedule; now: number }) {
  if (s.paused) return <span class="badge status-paused">paused</span>;
  return <span title={dateTime(s.next_run_at)}>{relative(s.next_run_at, now)}</span>;
}

export function SchedulesPage() {
  const now = useNow();
  const list = useAsync(() => all<Schedule>('/api/v1/schedules', 500), []);
  const reload = useCoalesced(list.reload, 500);
  useOrgEvents((e) => {
    if (e.event === 'schedule.triggered') reload();
  });
  useResync(list.reload);
  if (list.error && !list.data) return <LoadError error={list.error} what="Schedules" />;
  const items = list.data?.items ?? [];
  return (
    <>
      <PageHeader title="Schedules" />
      <section class="panel">
        {list.loading && !list.data ? (
          <Loading />
        ) : items.length === 0 ? (
          <p class="muted">No schedules. Create them with POST /api/v1/schedules.</p>
        ) : (
          <table class="table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Cron</th>
                <th>Time zone</th>
                <th>Queue</th>
                <th>Next fire</th>
                <th>Last run</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {items.map((s) => (
                <tr key={s.id}>
                  <td>
                    <a href={`#/schedules/${s.id}`}>{s.name}</a>
                  </td>
                  <td>
                    <code>{s.cron_expression}</code>
                  </td>
                  <td>{s.timezone}</td>
                  <td>
                    <a href={`#/queues/${enc(s.queue_name)}`}>{s.queue_name}</a>
                  </td>
                  <td>
                    <NextRun s={s} now={now} />
                  </td>
                  <td title={dateTime(s.last_run_at)}>{relative(s.last_run_at, now)}</td>
                  <td class="actions">
                    <ScheduleActions s={s} changed={list.reload} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

export function SchedulePage({ id }: { id: string }) {
  const now = useNow();
  const schedule = useAsync(() => get<Schedule>(`/api/v1/schedules/${enc(id)}`), [id]);
  const paging = usePaging(id);
  const runs = useAsync(() => {
    const q = new URLSearchParams({ limit: '50' });
    if (paging.cursor) q.set('cursor', paging.cursor);
    return page<ScheduleRun>(`/api/v1/schedules/${enc(id)}/runs`, q);
  }, [id, paging.cursor]);
  const changed = () => {
    schedule.reload();
    runs.reload();
  };
  const reload = useCoalesced(changed, 500);
  useOrgEvents((e) => {
    if (e.event === 'schedule.triggered' && e.data.schedule_id === id) reload();
  });
  useResync(changed);
  if (schedule.error && !schedule.data) return <LoadError error={schedule.error} what="Schedule" />;
  const s = schedule.data;
  if (!s) return <Loading />;
  return (
    <>
      <PageHeader title={<>Schedule {s.name}</>}>
        <ScheduleActions s={s} changed={changed} />
      </PageHeader>
      <section class="panel">
        <dl class="fields">
          <dt>Cron</dt>
          <dd>
            <code>{s.cron_expression}</code> (second minute hour day month weekday)
          </dd>
          <dt>Time zone</dt>
          <dd>{s.timezone}</dd>
          <dt>Queue</dt>
          <dd>
            <a href={`#/queues/${enc(s.queue_name)}`}>{s.queue_name}</a>
          </dd>
          <dt>Next fire</dt>
          <dd>
            <NextRun s={s} now={now} /> {!s.paused && s.next_run_at && <span class="muted">({dateTime(s.next_run_at)})</span>}
          </dd>
          <dt>Last run</dt>
          <dd>{dateTime(s.last_run_at)}</dd>
          <dt>Priority</dt>
          <dd>{s.priority}</dd>
        </dl>
        <h2>Payload template</h2>
        <Json value={s.payload_template} />
      </section>
      <section class="panel">
        <h2>Run history</h2>
        {runs.error ? (
          <LoadError error={runs.error} what="Runs" />
        ) : !runs.data ? (
          <Loading />
        ) : runs.data.items.length === 0 ? (
          <p class="muted">It has not run yet.</p>
        ) : (
          <table class="table">
            <thead>
              <tr>
                <th>Triggered</th>
                <th>For fire time</th>
                <th>Kind</th>
                <th>Outcome</th>
                <th>Job</th>
              </tr>
            </thead>
            <tbody>
              {runs.data.items.map((r) => (
                <tr key={r.id}>
                  <td>{dateTime(r.triggered_at)}</td>
                  <td>{r.manual ? '—' : dateTime(r.scheduled_for)}</td>
                  <td>{r.manual ? 'manual' : 'cron'}</td>
                  <td>{r.status === 'enqueued' ? <span class="badge status-completed">enqueued</span> : <span class="badge status-deadletter" title={r.error ?? ''}>failed: {r.error}</span>}</td>
                  <td>{r.job_id ? <a href={`#/jobs/${r.job_id}`}><code>{shortId(r.job_id)}</code></a> : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <Pager paging={paging} next={runs.data?.next} />
      </section>
    </>
  );
}
