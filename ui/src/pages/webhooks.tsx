// Outgoing webhooks (permission `*`): endpoints with their state, and one endpoint's recent deliveries with a
// test button. Deliveries are not events themselves; an event the endpoint subscribes to re-reads them a
// moment later, when the delivery has had time to be attempted.
import { all, enc, get, page, post } from '../api';
import { Action, LoadError, Loading, PageHeader, StatusBadge, toast, useAsync } from '../components';
import { dateTime, relative } from '../format';
import { useCoalesced, useNow, useOrgEvents, useResync } from '../live';
import type { Delivery, Webhook } from '../types';

function State({ w }: { w: Webhook }) {
  if (!w.enabled) return <span class="badge status-cancelled">{w.last_status === 'auto_disabled' ? 'auto-disabled' : 'disabled'}</span>;
  if (w.last_status === 'failed') return <span class="badge status-deadletter">failing ({w.failure_count})</span>;
  return <span class="badge status-completed">{w.last_status === 'success' ? 'healthy' : 'enabled'}</span>;
}

interface TestAnswer {
  status: string;
  response_status: number | null;
  error: string | null;
}

export function WebhooksPage() {
  const list = useAsync(() => all<Webhook>('/api/v1/outgoing-webhooks', 500), []);
  useResync(list.reload);
  if (list.error && !list.data) return <LoadError error={list.error} what="Webhooks" />;
  const items = list.data?.items ?? [];
  return (
    <>
      <PageHeader title="Outgoing webhooks" />
      <section class="panel">
        {!list.data ? (
          <Loading />
        ) : items.length === 0 ? (
          <p class="muted">No endpoints. Create them with POST /api/v1/outgoing-webhooks.</p>
        ) : (
          <table class="table">
            <thead>
              <tr>
                <th>Name</th>
                <th>URL</th>
                <th>Events</th>
                <th>State</th>
                <th>Signed</th>
              </tr>
            </thead>
            <tbody>
              {items.map((w) => (
                <tr key={w.id}>
                  <td>
                    <a href={`#/webhooks/${w.id}`}>{w.name}</a>
                  </td>
                  <td class="url">{w.url}</td>
                  <td>{w.events.join(', ')}</td>
                  <td>
                    <State w={w} />
                  </td>
                  <td>{w.has_secret ? 'yes' : 'no'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

export function WebhookPage({ id }: { id: string }) {
  const now = useNow();
  const hook = useAsync(() => get<Webhook>(`/api/v1/outgoing-webhooks/${enc(id)}`), [id]);
  const deliveries = useAsync(() => page<Delivery>(`/api/v1/outgoing-webhooks/${enc(id)}/deliveries`, new URLSearchParams({ limit: '100' })), [id]);
  const reread = () => {
    hook.reload();
    deliveries.reload();
  };
  const later = useCoalesced(reread, 2000);
  useOrgEvents((e) => {
    if (hook.data?.enabled && hook.data.events.includes(e.event)) later();
  });
  useResync(reread);
  if (hook.error && !hook.data) return <LoadError error={hook.error} what="Webhook" />;
  const w = hook.data;
  if (!w) return <Loading />;
  return (
    <>
      <PageHeader
        title={
          <>
            Webhook {w.name} <State w={w} />
          </>
        }
      >
        <Action
          kind="primary"
          run={async () => {
            const r = await post<TestAnswer>(`/api/v1/outgoing-webhooks/${enc(id)}/test`);
            reread();
            toast(r.status === 'success' ? `Test delivered (HTTP ${r.response_status})` : `Test failed: ${r.error ?? `HTTP ${r.response_status}`}`, r.status === 'success' ? 'ok' : 'error');
          }}
          testId="webhook-test"
        >
          Send test
        </Action>
      </PageHeader>
      <section class="panel">
        <dl class="fields">
          <dt>URL</dt>
          <dd class="url">{w.url}</dd>
          <dt>Events</dt>
          <dd>{w.events.join(', ')}</dd>
          <dt>Signed</dt>
          <dd>{w.has_secret ? 'yes (X-Queue-Signature)' : 'no'}</dd>
          <dt>Consecutive failed deliveries</dt>
          <dd>{w.failure_count} (disabled automatically at 20)</dd>
          <dt>Created</dt>
          <dd>{dateTime(w.created_at)}</dd>
        </dl>
      </section>
      <section class="panel">
        <h2>Recent deliveries</h2>
        {deliveries.error ? (
          <LoadError error={deliveries.error} what="Deliveries" />
        ) : !deliveries.data ? (
          <Loading />
        ) : deliveries.data.items.length === 0 ? (
          <p class="muted">Nothing delivered yet.</p>
        ) : (
          <table class="table" data-testid="deliveries">
            <thead>
              <tr>
                <th>When</th>
                <th>Event</th>
                <th>Outcome</th>
                <th class="num">Attempts</th>
                <th class="num">HTTP</th>
                <th>Error</th>
              </tr>
            </thead>
            <tbody>
              {deliveries.data.items.map((d) => (
                <tr key={d.id}>
                  <td title={dateTime(d.created_at)}>{relative(d.created_at, now)}</td>
                  <td>{d.event}</td>
                  <td>
                    <span class={`badge status-${d.status === 'success' ? 'completed' : d.status === 'pending' ? 'processing' : 'deadletter'}`}>{d.status}</span>
                  </td>
                  <td class="num">{d.attempts}</td>
                  <td class="num">{d.response_status ?? '—'}</td>
                  <td class="error-text">{d.error ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
