// The dead-letter queue: jobs that ran out of retries, with their last error. Retry or purge one, a
// selection, or everything in a queue (POST /api/v1/jobs/dlq/retry and /purge). A job that is dead-lettered
// while the page is open makes the first page read again.
import { useState } from 'preact/hooks';
import { page, post } from '../api';
import { Action, LoadError, Loading, PageHeader, toast, useAsync } from '../components';
import { relative, shortId } from '../format';
import { useCoalesced, useNow, useOrgEvents, useResync } from '../live';
import { href, navigate } from '../router';
import { can } from '../session';
import type { Job } from '../types';
import { Pager, usePaging } from './jobs';

interface RetryAnswer {
  retried: number;
  job_ids: string[];
  failed: Array<{ id: string; error: string }>;
}

const retryNotice = (r: RetryAnswer): string =>
  r.failed.length === 0 ? `${r.retried} job(s) pending again` : `${r.retried} retried; ${r.failed.length} not: ${r.failed[0]!.error}`;

export function DlqPage({ query }: { query: URLSearchParams }) {
  const now = useNow();
  const queue = query.get('queue');
  const key = query.toString();
  const paging = usePaging(key);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [queueInput, setQueueInput] = useState(queue ?? '');
  const jobs = useAsync(() => {
    const q = new URLSearchParams({ limit: '50' });
    if (queue) q.set('queue_name', queue);
    if (paging.cursor) q.set('cursor', paging.cursor);
    return page<Job>('/api/v1/jobs/dlq', q);
  }, [key, paging.cursor]);
  const reload = useCoalesced(jobs.reload, 500);
  useOrgEvents((e) => {
    if (e.event === 'job.failed' && e.data.status === 'deadletter' && paging.first && (!queue || e.data.queue_name === queue)) reload();
  });
  useResync(jobs.reload);

  const mayWrite = can('dlq:write');
  const items = jobs.data?.items ?? [];
  const after = (ids: string[]) => {
    setSelected((s) => new Set([...s].filter((id) => !ids.includes(id))));
    jobs.reload();
  };
  const retry = async (ids: string[]) => {
    const r = await post<RetryAnswer>('/api/v1/jobs/dlq/retry', { job_ids: ids });
    after(ids);
    toast(retryNotice(r), r.failed.length ? 'error' : 'ok');
  };
  const purge = async (ids: string[]) => {
    const r = await post<{ purged: number }>('/api/v1/jobs/dlq/purge', { job_ids: ids, confirm: true });
    after(ids);
    toast(`${r.purged} job(s) purged`);
  };
  const toggle = (id: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const allSelected = items.length > 0 && items.every((j) => selected.has(j.id));
  const ids = [...selected];

  return (
    <>
      <PageHeader title="Dead letters">
        {mayWrite && ids.length > 0 && (
          <>
            <Action kind="primary" run={() => retry(ids)} testId="retry-selected">
              Retry {ids.length} selected
            </Action>
            <Action kind="danger" confirm={`Delete ${ids.length} dead-lettered job(s) for good?`} run={() => purge(ids)}>
              Purge {ids.length} selected
            </Action>
          </>
        )}
        {mayWrite && queue && items.length > 0 && (
          <>
            <Action
              run={async () => {
                const r = await post<RetryAnswer>('/api/v1/jobs/dlq/retry', { queue_name: queue, limit: 1000 });
                after(r.job_ids);
                toast(retryNotice(r), r.failed.length ? 'error' : 'ok');
              }}
              title="The oldest 1,000 of this queue; workflow jobs are retried with their workflow"
            >
              Retry all in {queue}
            </Action>
            <Action
              kind="danger"
              confirm={`Delete every dead-lettered job of ${queue} for good?`}
              run={async () => {
                const r = await post<{ purged: number }>('/api/v1/jobs/dlq/purge', { queue_name: queue, confirm: true });
                after(items.map((j) => j.id));
                toast(`${r.purged} job(s) purged`);
              }}
            >
              Purge all in {queue}
            </Action>
          </>
        )}
      </PageHeader>
      <form
        class="filters"
        method="post"
        onSubmit={(e) => {
          e.preventDefault();
          navigate('/dlq', { queue: queueInput.trim() });
        }}
      >
        <label>
          Queue
          <input type="text" placeholder="any" value={queueInput} onInput={(e) => setQueueInput(e.currentTarget.value)} />
        </label>
        <button type="submit" class="btn btn-primary">
          Apply
        </button>
        <a class="btn btn-plain" href={href('/dlq')}>
          Clear
        </a>
      </form>
      <section class="panel">
        {jobs.error ? (
          <LoadError error={jobs.error} what="Dead letters" />
        ) : jobs.loading && !jobs.data ? (
          <Loading />
        ) : items.length === 0 ? (
          <p class="muted" data-testid="dlq-empty">
            No dead-lettered jobs{queue ? ` in ${queue}` : ''}.
          </p>
        ) : (
          <table class="table" data-testid="dlq-table">
            <thead>
              <tr>
                {mayWrite && (
                  <th>
                    <input type="checkbox" aria-label="Select all" checked={allSelected} onChange={() => setSelected(allSelected ? new Set() : new Set(items.map((j) => j.id)))} />
                  </th>
                )}
                <th>Job</th>
                <th>Queue</th>
                <th>Last error</th>
                <th class="num">Attempts</th>
                <th>Dead since</th>
                {mayWrite && <th />}
              </tr>
            </thead>
            <tbody>
              {items.map((j) => (
                <tr key={j.id} data-job={j.id}>
                  {mayWrite && (
                    <td>
                      <input type="checkbox" aria-label={`Select ${j.id}`} checked={selected.has(j.id)} onChange={() => toggle(j.id)} />
                    </td>
                  )}
                  <td>
                    <a href={`#/jobs/${j.id}`} title={j.id}>
                      <code>{shortId(j.id)}</code>
                    </a>
                  </td>
                  <td>
                    <a href={href('/dlq', { queue: j.queue_name })}>{j.queue_name}</a>
                  </td>
                  <td class="error-text">{j.last_error ?? '—'}</td>
                  <td class="num">{j.errors.length}</td>
                  <td title={j.updated_at ?? ''}>{relative(j.updated_at, now)}</td>
                  {mayWrite && (
                    <td class="actions">
                      <Action run={() => retry([j.id])} testId="retry-one">
                        Retry
                      </Action>
                      <Action kind="danger" confirm="Delete this dead-lettered job for good?" run={() => purge([j.id])}>
                        Purge
                      </Action>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <Pager paging={paging} next={jobs.data?.next} />
      </section>
    </>
  );
}
