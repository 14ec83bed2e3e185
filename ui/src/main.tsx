// The Sluice dashboard: a client of the public API, signed in with an API key exchanged for a JWT held in
// memory. Pages are chosen by the hash route; live updates come over SSE (live.ts).
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './style.css';
import { serverVersion } from './api';
import { Toasts } from './components';
import { orgEvents, useLiveStatus } from './live';
import { DlqPage } from './pages/dlq';
import { JobPage } from './pages/job';
import { JobsPage } from './pages/jobs';
import { Overview } from './pages/overview';
import { QueuePage } from './pages/queue';
import { SchedulePage, SchedulesPage } from './pages/schedules';
import { SignIn } from './pages/signin';
import { WebhookPage, WebhooksPage } from './pages/webhooks';
import { WorkersPage } from './pages/workers';
import { WorkflowPage, WorkflowsPage } from './pages/workflows';
import { href, navigate, useRoute, type Route } from './router';
import { can, signOut, useSession, type Session } from './session';

const NAV: Array<{ path: string; label: string; permission: string; section: string }> = [
  { path: '/', label: 'Overview', permission: 'queues:read', section: '' },
  { path: '/jobs', label: 'Jobs', permission: 'jobs:read', section: 'jobs' },
  { path: '/dlq', label: 'Dead letters', permission: 'dlq:read', section: 'dlq' },
  { path: '/workers', label: 'Workers', permission: 'jobs:read', section: 'workers' },
  { path: '/schedules', label: 'Schedules', permission: 'jobs:read', section: 'schedules' },
  { path: '/workflows', label: 'Workflows', permission: 'jobs:read', section: 'workflows' },
  { path: '/webhooks', label: 'Webhooks', permission: '*', section: 'webhooks' },
];

function page(route: Route) {
  const [section, id] = route.path;
  switch (section) {
    case undefined:
      return <Overview />;
    case 'queues':
      return id ? <QueuePage name={id} /> : <Overview />;
    case 'jobs':
      return id ? <JobPage id={id} /> : <JobsPage query={route.query} />;
    case 'dlq':
      return <DlqPage query={route.query} />;
    case 'workers':
      return <WorkersPage />;
    case 'schedules':
      return id ? <SchedulePage id={id} /> : <SchedulesPage />;
    case 'workflows':
      return id ? <WorkflowPage id={id} /> : <WorkflowsPage query={route.query} />;
    case 'webhooks':
      return id ? <WebhookPage id={id} /> : <WebhooksPage />;
    default:
      return (
        <div class="panel empty">
          <h2>No such page</h2>
          <p>
            <a href="#/">Back to the overview</a>
          </p>
        </div>
      );
  }
}

function LiveBadge() {
  const status = useLiveStatus();
  const label = { off: 'not live', connecting: 'connecting…', live: 'live', down: 'reconnecting…' }[status];
  return (
    <span class={`live live-${status}`} data-testid="live-status" title="Updates arrive over the server's event stream">
      {label}
    </span>
  );
}

function JumpToJob() {
  const [value, set] = useState('');
  return (
    <form
      class="jump"
      method="post"
      onSubmit={(e) => {
        e.preventDefault();
        const id = value.trim();
        if (id) navigate(`/jobs/${encodeURIComponent(id)}`);
        set('');
      }}
    >
      <input type="search" placeholder="Go to job id…" aria-label="Go to job id" value={value} onInput={(e) => set(e.currentTarget.value)} />
    </form>
  );
}

function Shell({ session }: { session: Session }) {
  const route = useRoute();
  const section = route.path[0] ?? '';
  const me = session.me;
  const readOnly = !me.permissions.some((p) => p === '*' || p.endsWith(':write'));
  return (
    <div class="shell">
      <header class="topbar">
        <a class="brand" href="#/">
          Sluice
        </a>
        <nav>
          {NAV.filter((n) => can(n.permission)).map((n) => (
            <a key={n.path} href={href(n.path)} class={section === n.section ? 'active' : ''}>
              {n.label}
            </a>
          ))}
        </nav>
        <div class="spacer" />
        <JumpToJob />
        <LiveBadge />
        <span class="who" title={`organization ${me.organization_id}\npermissions: ${me.permissions.join(', ')}`}>
          {readOnly ? 'read-only' : me.permissions.includes('*') ? 'full access' : me.permissions.join(' ')}
        </span>
        <button type="button" class="btn btn-plain" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main>{page(route)}</main>
      <footer class="footer muted">
        Sluice {serverVersion} · organization <code>{me.organization_id}</code>
      </footer>
    </div>
  );
}

function App() {
  const session = useSession();
  const signedIn = session !== null;
  useEffect(() => {
    // One organization stream for the whole app, while signed in with a key that may read jobs.
    if (signedIn && can('jobs:read')) orgEvents.start();
    else orgEvents.stop();
  }, [signedIn]);
  return (
    <>
      {session ? <Shell session={session} /> : <SignIn />}
      <Toasts />
    </>
  );
}

render(<App />, document.getElementById('app')!);
