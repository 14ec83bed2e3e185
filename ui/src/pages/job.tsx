// One job: payload, result, error history, and its status live over the job's own stream
// (GET /api/v1/events/jobs/:id), which starts with the current state and ends once the job is finished.
// Each event is followed by a read of the job, so the times and the error history stay whole.
import { useState } from 'preact/hooks';
import { del, enc, get, post } from '../api';
import { Action, Json, LoadError, Loading, PageHeader, StatusBadge, useAsync } from '../components';
import { dateTime, relative } from '../format';
import { useCoalesced, useNow, useStream } from '../live';
import { href } from '../router';
import { can } from '../session';
import { LIVE_STATUSES, type Explanation, type Job } from '../types';

export function JobPage({ id }: { id: string }) {
  const now = useNow();
  const job = useAsync(() => get<Job>(`/api/v1/jobs/${enc(id)}`), [id]);
  // Why it does not run, read again with the job (each event of its stream rereads both).
  const why = useAsync(() => get<Explanation>(`/api/v1/jobs/${enc(id)}/explain`), [id, job.data?.status, job.data?.updated_at]);
  const reread = useCoalesced(job.reload, 300);
  /** Bumped after a retry: a finished job's stream has ended, the revived job needs a new one. */
  const [life, setLife] = useState(0);
  const [streaming, setStreaming] = useState(false);
  useStream(
    job.data ? `/api/v1/events/jobs/${enc(id)}` : null,
    (e) => {
      setStreaming(true);
      if (e.event === 'job.status' && e.data.job) {
        job.update(() => e.data.job as Job);
      } else if (typeof e.data.status === 'string') {
        const status = e.data.status as Job['status'];
        job.update((j) => ({ ...j, status }));
        reread();
      }
      const done = typeof e.data.status === 'string' && !LIVE_STATUSES.has(e.data.status);
      if (done) setStreaming(false);
      return done;
    },
    () => setStreaming(false),
    life,
  );

  if (job.error && !job.data) return <LoadError error={job.error} what="Job" />;
  const j = job.data;
  if (!j) return <Loading />;
  const mayWrite = can('jobs:write');
  const retried = () => {
    job.reload();
    setLife((n) => n + 1);
  };
  return (
    <>
      <PageHeader
        title={
          <>
            Job <code class="id">{j.id}</code> <span data-testid="job-status">
              <StatusBadge status={j.status} />
            </span>{' '}
            {streaming && <span class="live live-live">live</span>}
          </>
        }
      >
        {mayWrite && LIVE_STATUSES.has(j.status) && (
          <Action kind="danger" confirm="Cancel this job? A worker holding it is told to stop (JOB_CANCELLED)." run={() => del(`/api/v1/jobs/${enc(j.id)}`).then(() => job.reload())} done="Cancelled">
            Cancel
          </Action>
        )}
        {mayWrite && (j.status === 'deadletter' || j.status === 'cancelled') && !j.workflow_id && (
          <Action kind="primary" run={() => post(`/api/v1/jobs/${enc(j.id)}/retry`).then(retried)} done="Pending again, with a fresh retry budget">
            Retry
          </Action>
        )}
      </PageHeader>
      {(j.status === 'pending' || j.status === 'scheduled') && why.data && why.data.reasons.length > 0 && (
        <section class="panel" data-testid="job-explain">
          <h2>Why it is not running</h2>
          <ul>
            {why.data.reasons.map((r) => (
              <li key={r.reason}>
                <code>{r.reason}</code> {r.message}
              </li>
            ))}
          </ul>
        </section>
      )}
      <section class="panel">
        <dl class="fields">
          <dt>Queue</dt>
          <dd>
            <a href={`#/queues/${enc(j.queue_name)}`}>{j.queue_name}</a>
          </dd>
          <dt>Priority</dt>
          <dd>{j.priority}</dd>
          <dt>Concurrency key</dt>
          <dd>{j.concurrency_key ?? '—'}</dd>
          <dt>Progress</dt>
          <dd data-testid="job-progress">{j.progress ? `${j.progress.progress}%${j.progress.message ? ` — ${j.progress.message}` : ''}` : '—'}</dd>
          <dt>Attempts</dt>
          <dd>
            {j.retry_count} retries of {j.max_retries}
          </dd>
          <dt>Worker</dt>
          <dd>{j.assigned_worker_id ?? '—'}</dd>
          <dt>Created</dt>
          <dd>{dateTime(j.created_at)}</dd>
          <dt>Runs at</dt>
          <dd>{j.scheduled_at ? `${dateTime(j.scheduled_at)} (${relative(j.scheduled_at, now)})` : '—'}</dd>
          <dt>Started</dt>
          <dd>{dateTime(j.started_at)}</dd>
          <dt>Lease expires</dt>
          <dd>{j.status === 'processing' && j.lease_expires_at ? relative(j.lease_expires_at, now) : '—'}</dd>
          <dt>Finished</dt>
          <dd>{dateTime(j.completed_at)}</dd>
          <dt>Timeout</dt>
          <dd>{j.timeout_seconds} s</dd>
          <dt>Idempotency key</dt>
          <dd>{j.idempotency_key ?? '—'}</dd>
          <dt>Workflow</dt>
          <dd>{j.workflow_id ? <a href={`#/workflows/${j.workflow_id}`}>{j.workflow_id}</a> : '—'}</dd>
          <dt>Tags</dt>
          <dd>
            {Object.keys(j.tags).length === 0
              ? '—'
              : Object.entries(j.tags).map(([k, v]) => (
                  <a key={k} class="tag" href={href('/jobs', { tag: v ? `${k}:${v}` : k })}>
                    {v ? `${k}:${v}` : k}
                  </a>
                ))}
          </dd>
          <dt>Completion webhook</dt>
          <dd>{j.completion_webhook ?? '—'}</dd>
        </dl>
      </section>
      <div class="columns">
        <section class="panel">
          <h2>Payload</h2>
          <Json value={j.payload} />
        </section>
        <section class="panel">
          <h2>Result</h2>
          <Json value={j.result ?? undefined} />
        </section>
      </div>
      <section class="panel">
        <h2>Error history</h2>
        {j.errors.length === 0 ? (
          <p class="muted">No failed attempts.</p>
        ) : (
          <table class="table" data-testid="job-errors">
            <thead>
              <tr>
                <th class="num">Attempt</th>
                <th>When</th>
                <th>Error</th>
              </tr>
            </thead>
            <tbody>
              {j.errors.map((e, i) => (
                <tr key={i}>
                  <td class="num">{e.attempt}</td>
                  <td>{dateTime(e.at)}</td>
                  <td class="error-text">{e.error}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
