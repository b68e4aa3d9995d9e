import './app.css';
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { loadHealth } from './banner';
import { BudgetsView } from './budgets';
import { ClusterView } from './cluster';
import { FailbackView } from './failback';
import { FleetView } from './fleet';
import { PoliciesView, PolicyView } from './policies';
import { QueueView } from './queue';
import { alerts, authMode, notice, setToken, token, useTokenMissing } from './state';
import { WhatIfView } from './whatif';
import { WorkloadPicker, WorkloadView } from './workload';

type Route =
  | { view: 'fleet' }
  | { view: 'queue' }
  | { view: 'budgets' }
  | { view: 'failback' }
  | { view: 'policies' }
  | { view: 'policy'; name: string }
  | { view: 'whatif' }
  | { view: 'workload'; ns?: string; name?: string }
  | { view: 'cluster'; name: string };

function parseHash(hash: string): Route {
  const parts = hash
    .replace(/^#\/?/, '')
    .split('/')
    .filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  switch (parts[0]) {
    case 'queue':
      return { view: 'queue' };
    case 'budgets':
      return { view: 'budgets' };
    case 'failback':
      return { view: 'failback' };
    case 'policies':
      return { view: 'policies' };
    case 'policy':
      return parts[1] ? { view: 'policy', name: parts[1] } : { view: 'policies' };
    case 'whatif':
      return { view: 'whatif' };
    case 'workload':
      return parts.length >= 3
        ? { view: 'workload', ns: parts[1], name: parts[2] }
        : parts.length === 2
          ? { view: 'workload', name: parts[1] }
          : { view: 'workload' };
    case 'cluster':
      return parts[1] ? { view: 'cluster', name: parts[1] } : { view: 'fleet' };
    default:
      return { view: 'fleet' };
  }
}

function title(route: Route): string {
  switch (route.view) {
    case 'fleet':
      return 'Fleet';
    case 'queue':
      return 'Eviction queue';
    case 'budgets':
      return 'Disruption budgets';
    case 'failback':
      return 'Failback';
    case 'policies':
      return 'Taint policies';
    case 'policy':
      return `Policy ${route.name}`;
    case 'whatif':
      return 'What if clusters fail?';
    case 'workload':
      return route.name ? `Workload ${route.ns ? `${route.ns}/` : ''}${route.name}` : 'Workload';
    case 'cluster':
      return `Cluster ${route.name}`;
  }
}

const NAV: Array<{ href: string; label: string; view: Route['view'] }> = [
  { href: '#/fleet', label: 'Fleet', view: 'fleet' },
  { href: '#/queue', label: 'Eviction queue', view: 'queue' },
  { href: '#/budgets', label: 'Budgets', view: 'budgets' },
  { href: '#/failback', label: 'Failback', view: 'failback' },
  { href: '#/policies', label: 'Policies', view: 'policies' },
  { href: '#/workload', label: 'Workload', view: 'workload' },
  { href: '#/whatif', label: 'What-if', view: 'whatif' },
];

function TokenForm() {
  const current = token.use();
  const mode = authMode.use();
  const missing = useTokenMissing();
  const [draft, setDraft] = useState('');
  return (
    <form
      class="token"
      onSubmit={(e) => {
        e.preventDefault();
        setToken(draft.trim());
        setDraft('');
        notice.set(draft.trim() ? 'Admin token saved for this tab' : 'Admin token cleared');
      }}
    >
      <label for="admin-token">Admin token</label>
      <input id="admin-token" type="password" autocomplete="off" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
      <button type="submit">{current ? 'Replace token' : 'Use token'}</button>
      {current ? (
        <>
          <span class="token-state">Token set (kept in this tab only){mode === 'none' ? '; the server needs none (AUTH_MODE=none)' : ''}.</span>
          <button
            type="button"
            onClick={() => {
              setToken('');
              notice.set('Admin token cleared');
            }}
          >
            Forget token
          </button>
        </>
      ) : missing ? (
        <span class="token-state" id="token-needed" data-testid="token-state">
          Read-only: the server asks for the admin token{mode === 'required' ? ' (AUTH_MODE=required)' : ''}.
        </span>
      ) : mode === 'none' ? (
        <span class="token-state" data-testid="token-state">
          No token needed: the server runs with AUTH_MODE=none.
        </span>
      ) : (
        <span class="token-state" data-testid="token-state">
          No token: actions go without one (until the server asks for it).
        </span>
      )}
    </form>
  );
}

/** Reads the auth mode (GET /api/healthz) when the page opens and every 30 s; the Fleet page reads it more often. */
function useAuthMode(): void {
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      try {
        await loadHealth();
      } catch {
        // The server does not answer now: the buttons keep what they knew (and a 401 still teaches them).
      }
      if (live) timer = setTimeout(() => void read(), 30_000);
    };
    void read();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, []);
}

function Alerts() {
  const list = Object.entries(alerts.use());
  return (
    <div role="alert" class={list.length ? 'alerts' : 'alerts empty-region'}>
      {list.length ? (
        <ul>
          {list.map(([source, message]) => (
            <li key={source}>{message}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

function Notice() {
  const text = notice.use();
  return (
    <p role="status" class="notice" data-testid="notice">
      {text}
    </p>
  );
}

function App() {
  const [route, setRoute] = useState<Route>(() => parseHash(location.hash));
  const heading = useRef<HTMLHeadingElement>(null);
  const first = useRef(true);
  useAuthMode();
  useEffect(() => {
    const onHash = () => setRoute(parseHash(location.hash));
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  const name = title(route);
  const key = `${route.view}:${'name' in route ? (route.name ?? '') : ''}:${'ns' in route ? (route.ns ?? '') : ''}`;
  useEffect(() => {
    document.title = `${name} · cluster-failover console`;
    // After a navigation, move the focus to the new view's heading (not on the first load).
    if (!first.current) heading.current?.focus();
    first.current = false;
  }, [key]);
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header>
        <h1>cluster-failover console</h1>
        <nav aria-label="Views">
          <ul>
            {NAV.map((n) => (
              <li key={n.href}>
                <a href={n.href} aria-current={route.view === n.view || (route.view === 'policy' && n.view === 'policies') ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <TokenForm />
      </header>
      <main id="main" tabIndex={-1}>
        <Alerts />
        <Notice />
        <h2 ref={heading} tabIndex={-1}>
          {name}
        </h2>
        <View key={key} route={route} />
      </main>
    </>
  );
}

function View({ route }: { route: Route }) {
  switch (route.view) {
    case 'fleet':
      return <FleetView />;
    case 'queue':
      return <QueueView />;
    case 'budgets':
      return <BudgetsView />;
    case 'failback':
      return <FailbackView />;
    case 'policies':
      return <PoliciesView />;
    case 'policy':
      return <PolicyView name={route.name} />;
    case 'whatif':
      return <WhatIfView />;
    case 'workload':
      return route.name ? <WorkloadView ns={route.ns} name={route.name} /> : <WorkloadPicker />;
    case 'cluster':
      return <ClusterView name={route.name} />;
  }
}

render(<App />, document.getElementById('app')!);
