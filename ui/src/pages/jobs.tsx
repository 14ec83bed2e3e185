// The job browser: the filters of GET /api/v1/jobs (queue, status, tags, creation window) kept in the URL,
// cursor pages, and rows that change status as their events arrive. On the first page a new matching job
// makes the page read again (coalesced), so new work shows up at the top without a reload.
import { useState } from 'preact/hooks';
import { page } from '../api';
import { LoadError, Loading, PageHeader, StatusBadge, useAsync } from '../components';
import { relative, shortId } from '../format';
import { useCoalesced, useNow, useOrgEvents, useResync } from '../live';
import { href, navigate } from '../router';
import { JOB_STATUSES, type Job } from '../types';

/** The API's query from the page's (the URL uses `queue` and `tag=a,b` for brevity). */
export function apiQuery(q: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams();
  const queue = q.get('queue');
  if (queue) out.set('queue_name', queue);
  const status = q.get('status');
  if (status) out.set('status', status);
  for (const t of (q.get('tag') ?? '').split(/[\s,]+/).filter(Boolean)) out.append('tag', t);
  for (const k of ['created_after', 'created_before'] as const) {
    const v = q.get(k);
    if (v) out.set(k, new Date(v).toISOString());
  }
  out.set('limit', q.get('limit') ?? '50');
  return out;
}

function Filters({ query, base }: { query: URLSearchParams; base: string }) {
  const [form, setForm] = useState(() => Object.fromEntries(query.entries()) as Record<string, string>);
  const field = (k: string) => ({ value: form[k] ?? '', onInput: (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value }) });
  return (
    <form
      class="filters"
      method="post"
      onSubmit={(e) => {
        e.preventDefault();
        navigate(base, form);
      }}
    >
      <label>
        Queue
        <input type="text" placeholder="any" {...field('queue')} />
      </label>
      {base === '/jobs' && (
        <label>
          Status
          <select {...field('status')} onChange={field('status').onInput}>
            <option value="">any</option>
            {JOB_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      )}
      <label title="key, or key:value; several separated by spaces: all must match">
        Tags
        <input type="text" placeholder="env:prod" {...field('tag')} />
      </label>
      <label>
        Created after
        <input type="datetime-local" step="1" {...field('created_after')} />
      </label>
      <label>
        Created before
        <input type="datetime-local" step="1" {...field('created_before')} />
      </label>
      <label>
        Per page
        <select {...field('limit')} value={form.limit ?? '50'} onChange={field('limit').onInput}>
          {['20', '50', '100'].map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" class="btn btn-primary">
        Apply
      </button>
      <a class="btn btn-plain" href={href(base)}>
        Clear
      </a>
    </form>
  );
}

/** Cursor paging: the cursors of the pages before this one, to go back. */
export function usePaging(key: string) {
  const [state, set] = useState<{ key: string; stack: string[] }>({ key, stack: [] });
  const stack = state.key === key ? state.stack : [];
  return {
    cursor: stack[stack.length - 1] ?? null,
    first: stack.length === 0,
    next: (c: string) => set({ key, stack: [...stack, c] }),
    prev: () => set({ key, stack: stack.slice(0, -1) }),
    reset: () => set({ key, stack: [] }),
  };
}

export function Pager({ paging, next }: { paging: ReturnType<typeof usePaging>; next: string | null | undefined }) {
  return (
    <div class="pager">
      <button type="button" class="btn btn-plain" disabled={paging.first} onClick={paging.prev}>
        ← Newer
      </button>
      <button type="button" class="btn btn-plain" disabled={!next} onClick={() => next && paging.next(next)}>
        Older →
      </button>
    </div>
  );
}

export function JobsPage({ query }: { query: URLSearchParams }) {
  const now = useNow();
  const key = query.toString();
  const paging = usePaging(key);
  const jobs = useAsync(() => {
    const q = apiQuery(query);
    if (paging.cursor) q.set('cursor', paging.cursor);
    return page<Job>('/api/v1/jobs', q);
  }, [key, paging.cursor]);
  const reload = useCoalesced(jobs.reload, 500);
  const [flash, setFlash] = useState<Record<string, number>>({});
  const queue = query.get('queue');
  const status = query.get('status');

  useOrgEvents((e) => {
    if (!e.event.startsWith('job.') || !e.data.job_id) return;
    const id = e.data.job_id;
    const st = e.data.status as Job['status'] | undefined;
    if (jobs.data?.items.some((j) => j.id === id)) {
      jobs.update((p) => ({ ...p, items: p.items.map((j) => (j.id === id && st ? { ...j, status: st, updated_at: e.created_at } : j)) }));
      setFlash((f) => ({ ...f, [id]: Date.now() }));
    } else if (e.event === 'job.created' && paging.first && (!queue || e.data.queue_name === queue) && (!status || st === status)) {
      reload();
    }
  });
  useResync(jobs.reload);

  return (
    <>
      <PageHeader title="Jobs" />
      <Filters key={key} query={query} base="/jobs" />
      <section class="panel">
        {jobs.error ? (
          <LoadError error={jobs.error} what="Jobs" />
        ) : jobs.loading && !jobs.data ? (
          <Loading />
        ) : jobs.data!.items.length === 0 ? (
          <p class="muted">No jobs match.</p>
        ) : (
          <table class="table" data-testid="jobs-table">
            <thead>
              <tr>
                <th>Job</th>
                <th>Queue</th>
                <th>Status</th>
                <th class="num">Priority</th>
                <th class="num">Attempts</th>
                <th>Tags</th>
                <th>Created</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              {jobs.data!.items.map((j) => (
                <tr key={j.id} data-job={j.id} class={now - (flash[j.id] ?? 0) < 1500 ? 'flash' : ''}>
                  <td>
                    <a href={`#/jobs/${j.id}`} title={j.id}>
                      <code>{shortId(j.id)}</code>
                    </a>
                  </td>
                  <td>
                    <a href={href('/jobs', { queue: j.queue_name })}>{j.queue_name}</a>
                  </td>
                  <td data-testid="job-row-status">
                    <StatusBadge status={j.status} />
                  </td>
                  <td class="num">{j.priority}</td>
                  <td class="num">
                    {j.retry_count}/{j.max_retries}
                  </td>
                  <td>
                    {Object.entries(j.tags).map(([k, v]) => (
                      <span key={k} class="tag">
                        {v ? `${k}:${v}` : k}
                      </span>
                    ))}
                  </td>
                  <td title={j.created_at}>{relative(j.created_at, now)}</td>
                  <td title={j.updated_at ?? ''}>{relative(j.updated_at, now)}</td>
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
