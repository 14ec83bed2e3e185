// Workflows: the list, and one workflow drawn as its dependency graph (dag.ts) with each job's status. Job
// events of the workflow's jobs recolour their boxes as they arrive; workflow events re-read it.
import { useMemo } from 'preact/hooks';
import { enc, get, page, post } from '../api';
import { Action, LoadError, Loading, PageHeader, StatusBadge, useAsync } from '../components';
import { layoutDag, DEFAULT_BOX } from '../dag';
import { dateTime, relative, shortId } from '../format';
import { useCoalesced, useNow, useOrgEvents, useResync } from '../live';
import { href, navigate } from '../router';
import { can } from '../session';
import type { JobStatus, Workflow } from '../types';
import { Pager, usePaging } from './jobs';

const WORKFLOW_STATUSES = ['running', 'completed', 'failed', 'cancelled'];

export function WorkflowsPage({ query }: { query: URLSearchParams }) {
  const now = useNow();
  const status = query.get('status');
  const key = query.toString();
  const paging = usePaging(key);
  const list = useAsync(() => {
    const q = new URLSearchParams({ limit: '50' });
    if (status) q.set('status', status);
    if (paging.cursor) q.set('cursor', paging.cursor);
    return page<Workflow>('/api/v1/workflows', q);
  }, [key, paging.cursor]);
  const reload = useCoalesced(list.reload, 500);
  useOrgEvents((e) => {
    if (e.event.startsWith('workflow.')) reload();
  });
  useResync(list.reload);
  return (
    <>
      <PageHeader title="Workflows">
        <select aria-label="Status" value={status ?? ''} onChange={(e) => navigate('/workflows', { status: e.currentTarget.value })}>
          <option value="">any status</option>
          {WORKFLOW_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </PageHeader>
      <section class="panel">
        {list.error ? (
          <LoadError error={list.error} what="Workflows" />
        ) : !list.data ? (
          <Loading />
        ) : list.data.items.length === 0 ? (
          <p class="muted">No workflows{status ? ` ${status}` : ''}.</p>
        ) : (
          <table class="table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Status</th>
                <th class="num">Jobs</th>
                <th>Created</th>
                <th>Finished</th>
              </tr>
            </thead>
            <tbody>
              {list.data.items.map((w) => (
                <tr key={w.id}>
                  <td>
                    <a href={`#/workflows/${w.id}`}>{w.name}</a> <code class="muted">{shortId(w.id)}</code>
                  </td>
                  <td>
                    <StatusBadge status={w.status} />
                  </td>
                  <td class="num">{w.job_count}</td>
                  <td title={dateTime(w.created_at)}>{relative(w.created_at, now)}</td>
                  <td>{dateTime(w.completed_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <Pager paging={paging} next={list.data?.next} />
      </section>
    </>
  );
}

function Graph({ jobs }: { jobs: NonNullable<Workflow['jobs']> }) {
  const box = DEFAULT_BOX;
  const layout = useMemo(() => layoutDag(jobs.map((j) => ({ id: j.name, deps: j.depends_on }))), [jobs.map((j) => `${j.name}<${j.depends_on.join(',')}`).join(';')]);
  const byName = new Map(jobs.map((j) => [j.name, j]));
  return (
    <div class="graph-scroll">
      <svg class="graph" width={layout.width} height={layout.height} viewBox={`0 0 ${layout.width} ${layout.height}`} role="img" aria-label="Dependency graph of the workflow's jobs" data-testid="workflow-graph">
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" class="arrow" />
          </marker>
        </defs>
        {layout.edges.map((e) => (
          <path key={`${e.from}>${e.to}`} d={e.d} class={`edge edge-${byName.get(e.from)?.status ?? 'unknown'}`} marker-end="url(#arrow)" />
        ))}
        {layout.nodes.map((n) => {
          const j = byName.get(n.id)!;
          const status: JobStatus | 'blocked' | 'unknown' = j.status === 'pending' && !j.dependencies_met ? 'blocked' : (j.status ?? 'unknown');
          return (
            <g key={n.id} class={`node node-${status}`} transform={`translate(${n.x},${n.y})`} data-node={n.id} data-status={status} onClick={() => navigate(`/jobs/${j.id}`)}>
              <title>{`${j.name} (${j.queue_name}): ${status}`}</title>
              <rect width={box.w} height={box.h} rx="8" />
              <text x="10" y="20" class="node-name">
                {j.name.length > 20 ? `${j.name.slice(0, 19)}…` : j.name}
              </text>
              <text x="10" y="37" class="node-status">
                {status === 'deadletter' ? 'dead letter' : status} · {j.queue_name.length > 12 ? `${j.queue_name.slice(0, 11)}…` : j.queue_name}
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}

export function WorkflowPage({ id }: { id: string }) {
  const flow = useAsync(() => get<Workflow>(`/api/v1/workflows/${enc(id)}`), [id]);
  const reload = useCoalesced(flow.reload, 300);
  useOrgEvents((e) => {
    const jobs = flow.data?.jobs;
    if (e.event.startsWith('workflow.') && e.data.workflow_id === id) return reload();
    if (!jobs || !e.event.startsWith('job.') || typeof e.data.status !== 'string') return;
    if (!jobs.some((j) => j.id === e.data.job_id)) return;
    const status = e.data.status as JobStatus;
    flow.update((w) => ({ ...w, jobs: w.jobs!.map((j) => (j.id === e.data.job_id ? { ...j, status } : j)) }));
    // A job that completed may release its children: read which ones.
    if (status === 'completed' || status === 'deadletter' || status === 'cancelled') reload();
  });
  useResync(flow.reload);
  if (flow.error && !flow.data) return <LoadError error={flow.error} what="Workflow" />;
  const w = flow.data;
  if (!w) return <Loading />;
  const mayWrite = can('jobs:write');
  return (
    <>
      <PageHeader
        title={
          <>
            Workflow {w.name} <StatusBadge status={w.status} />
          </>
        }
      >
        {mayWrite && (w.status === 'running' || w.status === 'failed') && (
          <Action kind="danger" confirm="Cancel every unfinished job of this workflow?" run={() => post(`/api/v1/workflows/${enc(w.id)}/cancel`).then(flow.reload)} done="Workflow cancelled">
            Cancel
          </Action>
        )}
        {mayWrite && (w.status === 'failed' || w.status === 'cancelled') && (
          <Action kind="primary" run={() => post(`/api/v1/workflows/${enc(w.id)}/retry`).then(flow.reload)} done="Workflow running again">
            Retry
          </Action>
        )}
      </PageHeader>
      <section class="panel">
        <Graph jobs={w.jobs ?? []} />
        <p class="legend muted">
          {['blocked', 'pending', 'scheduled', 'processing', 'completed', 'deadletter', 'cancelled'].map((s) => (
            <span key={s} class={`legend-item node-${s}`}>
              <i /> {s === 'deadletter' ? 'dead letter' : s}
            </span>
          ))}
        </p>
      </section>
      <section class="panel">
        <table class="table">
          <thead>
            <tr>
              <th>Job</th>
              <th>Queue</th>
              <th>Status</th>
              <th>Depends on</th>
            </tr>
          </thead>
          <tbody>
            {(w.jobs ?? []).map((j) => (
              <tr key={j.id}>
                <td>
                  <a href={`#/jobs/${j.id}`}>{j.name}</a>
                </td>
                <td>
                  <a href={href('/jobs', { queue: j.queue_name })}>{j.queue_name}</a>
                </td>
                <td>{j.status === 'pending' && !j.dependencies_met ? <span class="badge status-blocked">blocked</span> : <StatusBadge status={j.status} />}</td>
                <td>{j.depends_on.join(', ') || '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <p class="muted">
          Created {dateTime(w.created_at)}
          {w.completed_at && `, finished ${dateTime(w.completed_at)}`}.
        </p>
      </section>
    </>
  );
}
