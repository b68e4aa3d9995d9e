import { useState } from 'preact/hooks';
import { get, q } from './api';
import { byTrouble, clusterTrouble, FleetBanner, loadHealth, loadPause, loadQueues, loadRefusingPolicies, queueSize, queueText, whyUnhealthy } from './banner';
import { HistoryChart } from './chart';
import { ActionButton, Badge, Empty, Pending, ResumeButton, Section, TierBadge, When } from './components';
import { percent, plural, rate } from './format';
import { usePoll } from './state';
import type { Cluster, ClusterQueue, Condition, Fleet, History, Taint, TaintHolder } from './types';

export function FleetView() {
  const fleet = usePoll('fleet', () => get<Fleet>('fleet'), 2000);
  const clusters = usePoll('clusters', () => get<{ items: Cluster[] }>('clusters'), 2000);
  const health = usePoll('healthz', loadHealth, 5000);
  const refusing = usePoll('fleet-guards', loadRefusingPolicies, 5000);
  const queues = usePoll('fleet-queues', loadQueues, 2000);
  const history = usePoll('history', () => get<History>('fleet/history?minutes=60'), 10000);
  // Who paused: read while paused (again when it changes), not otherwise; an answer read for the other state is no answer.
  const paused = fleet.data?.paused ?? false;
  const pauseRead = usePoll('fleet-pause', async () => ({ paused, record: paused ? await loadPause() : null }), paused ? 10000 : 0, [paused]);
  const pause = { ...pauseRead, data: pauseRead.data?.paused === paused ? pauseRead.data.record : undefined };
  const refresh = () => {
    fleet.refresh();
    clusters.refresh();
    queues.refresh();
  };
  return (
    <>
      <FleetBanner
        fleet={fleet}
        clusters={clusters}
        health={health}
        refusing={refusing}
        queues={queues}
        pause={pause}
        onResumed={refresh}
        onAcknowledged={() => {
          refusing.refresh();
          refresh();
        }}
      />
      <Section title="Fleet state" id="fleet-state">
        {fleet.data ? <FleetSummary fleet={fleet.data} onChange={refresh} /> : <Pending poll={fleet} what="the fleet" />}
      </Section>
      <Section title="Evictions and tier, last hour" id="fleet-history">
        {history.data ? <HistoryChart history={history.data} /> : <Pending poll={history} what="the history" />}
      </Section>
      <Section title="Clusters" id="fleet-clusters">
        {clusters.data ? (
          <ClusterTable clusters={clusters.data.items} unhealthy={fleet.data?.unhealthyClusters} queues={queues.data} onChange={refresh} />
        ) : (
          <Pending poll={clusters} what="the clusters" />
        )}
      </Section>
    </>
  );
}

export function FleetSummary({ fleet, onChange }: { fleet: Fleet; onChange: () => void }) {
  return (
    <>
      <dl class="facts" data-testid="fleet-summary">
        <div>
          <dt>Tier</dt>
          <dd>
            <TierBadge tier={fleet.tier} />
          </dd>
        </div>
        <div>
          <dt>Eviction rate</dt>
          <dd>{rate(fleet.rate)}</dd>
        </div>
        <div>
          <dt>Clusters</dt>
          <dd>
            {fleet.unhealthy} unhealthy of {fleet.total} ({percent(fleet.failureRatio)}); {fleet.faulty} tainted NoExecute or PreferNoExecute
          </dd>
        </div>
        <div>
          <dt>Evictions</dt>
          <dd data-testid="eviction-switch">
            {!fleet.failoverEnabled ? (
              <Badge tone="bad">gate off (FAILOVER_ENABLED=false)</Badge>
            ) : fleet.paused ? (
              <Badge tone="warn">paused</Badge>
            ) : (
              <Badge tone="ok">running</Badge>
            )}
          </dd>
        </div>
        <div>
          <dt>Waiting</dt>
          <dd>
            {fleet.pending} pending, {fleet.scheduled} scheduled
          </dd>
        </div>
        <div>
          <dt>Mode</dt>
          <dd>
            {fleet.mode} ({fleet.status}
            {fleet.reason ? `: ${fleet.reason}` : ''})
          </dd>
        </div>
      </dl>
      <PauseResume paused={fleet.paused} waiting={fleet.pending + fleet.scheduled} onChange={onChange} />
    </>
  );
}

export function PauseResume({ paused, waiting, onChange }: { paused: boolean; waiting?: number; onChange: () => void }) {
  return (
    <p class="actions">
      {paused ? (
        <ResumeButton waiting={waiting} onDone={onChange} />
      ) : (
        <ActionButton
          label="Pause evictions"
          path="failover/pause"
          confirmText="Pause evictions? No workload is evicted from any cluster, drains included, until someone resumes them."
          onDone={onChange}
          describe={() => 'Evictions paused'}
        />
      )}
    </p>
  );
}

function conditionTone(c: Condition): 'ok' | 'warn' | 'bad' {
  if (c.type === 'Ready') return c.status === 'True' ? 'ok' : c.status === 'False' ? 'bad' : 'warn';
  return c.status === 'False' ? 'ok' : 'warn';
}

/**
 * Conditions as badges with their reason: `messages` adds each message, `since` the transition time (a
 * cluster's list shows it; a policy's table row does not).
 */
export function ConditionList({
  conditions,
  empty = 'none reported',
  messages = false,
  since = true,
  tone = conditionTone,
}: {
  conditions: Condition[] | undefined;
  empty?: string;
  messages?: boolean;
  since?: boolean;
  /** A condition's badge colour (a cluster's by default). */
  tone?: (c: Condition) => 'ok' | 'warn' | 'bad' | 'muted';
}) {
  if (!conditions?.length) return <span>{empty}</span>;
  return (
    <ul class="plain">
      {conditions.map((c) => (
        <li key={c.type}>
          <Badge tone={tone(c)}>
            {c.type}={c.status}
          </Badge>{' '}
          {c.reason ?? ''} {messages && c.message ? <div class="small">{c.message}</div> : null}
          {since && c.lastTransitionTime ? (
            <small>
              since <When iso={c.lastTransitionTime} />
            </small>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

export function holderText(holder: TaintHolder | undefined): string {
  if (!holder) return 'held by: unknown';
  const who = [...holder.policies.map((p) => `policy ${p}`), ...(holder.manual ? ['set by hand'] : [])];
  return who.length ? `held by ${who.join(', ')}` : 'no holder';
}

/** NoExecute evicts now; PreferNoExecute evicts workloads that ask for failover; NoSchedule keeps new placements off; PreferNoSchedule only steers them away. */
export function effectTone(effect: string): 'bad' | 'warn' | 'info' | 'muted' {
  return effect === 'NoExecute' ? 'bad' : effect === 'PreferNoExecute' ? 'warn' : effect === 'PreferNoSchedule' ? 'muted' : 'info';
}

export function TaintList({ cluster }: { cluster: Cluster }) {
  const taints: Taint[] = cluster.spec.taints ?? [];
  if (!taints.length) return <span>none</span>;
  const holders = cluster.status?.taintHolders ?? [];
  return (
    <ul class="plain">
      {taints.map((t) => (
        <li key={`${t.key}:${t.effect}`} data-testid="taint">
          <Badge tone={effectTone(t.effect)}>
            {t.key}
            {t.value ? `=${t.value}` : ''}:{t.effect}
          </Badge>{' '}
          <small>
            since <When iso={t.timeAdded} />, {holderText(holders.find((h) => h.key === t.key && h.effect === t.effect))}
          </small>
        </li>
      ))}
    </ul>
  );
}

/** Rows per page of the cluster list: a fleet of thousands renders (and re-renders every poll) one page at a time. */
export const PAGE_SIZE = 100;

function ClusterTable({
  clusters,
  unhealthy,
  queues,
  onChange,
}: {
  clusters: Cluster[];
  unhealthy: string[] | undefined;
  queues: Map<string, ClusterQueue> | undefined;
  onChange: () => void;
}) {
  const [filter, setFilter] = useState('');
  const [onlyTrouble, setOnlyTrouble] = useState(false);
  const [page, setPage] = useState(0);
  if (!clusters.length) return <Empty>No clusters are registered.</Empty>;
  const words = filter.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const all = clusters.map((c) => ({ c, t: clusterTrouble(c, unhealthy, queues) }));
  const trouble = all.filter(({ t }) => t.rank < 2).length;
  const rows = all
    .filter(({ c, t }) => {
      if (onlyTrouble && t.rank === 2) return false;
      if (!words.length) return true;
      const text = [
        c.metadata.name,
        ...Object.entries(c.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`),
        ...(c.spec.taints ?? []).map((x) => `${x.key}:${x.effect}`),
        t.unhealthy ? `unhealthy ${whyUnhealthy(t)}` : 'healthy',
        t.draining ? 'draining' : '',
      ]
        .join(' ')
        .toLowerCase();
      return words.every((w) => text.includes(w));
    })
    .sort((a, b) => byTrouble(a.t, b.t));
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
  const current = Math.min(page, pages - 1);
  const first = current * PAGE_SIZE;
  const shown = rows.slice(first, first + PAGE_SIZE);
  const filtered = rows.length !== clusters.length;
  const what =
    pages > 1
      ? `Clusters ${first + 1}–${first + shown.length} of ${filtered ? `the ${rows.length} that match (of ${clusters.length})` : clusters.length}`
      : filtered
        ? `${rows.length} of ${plural(clusters.length, 'cluster')}`
        : `All ${plural(clusters.length, 'cluster')}`;
  return (
    <>
      <div class="filters" role="search" aria-label="Filter the clusters">
        <label for="cluster-filter">Filter clusters</label>
        <input
          id="cluster-filter"
          type="search"
          value={filter}
          onInput={(e) => {
            setFilter(e.currentTarget.value);
            setPage(0);
          }}
          autocomplete="off"
          spellcheck={false}
        />
        <label>
          <input
            type="checkbox"
            checked={onlyTrouble}
            onChange={(e) => {
              setOnlyTrouble(e.currentTarget.checked);
              setPage(0);
            }}
          />{' '}
          Only clusters in trouble ({trouble})
        </label>
      </div>
      {rows.length ? (
        <div class="scroll">
          <table data-testid="clusters">
            <caption>
              {what}, trouble first (unhealthy or faulty, then draining): their state, conditions and taints (who holds each taint, and since when)
            </caption>
            <thead>
              <tr>
                <th scope="col">Cluster</th>
                <th scope="col">State</th>
                <th scope="col">Conditions</th>
                <th scope="col">Taints</th>
                <th scope="col">Last heartbeat</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {shown.map(({ c, t }) => {
                const name = c.metadata.name;
                return (
                  <tr key={name} data-cluster={name}>
                    <th scope="row">
                      <a href={`#/cluster/${q(name)}`}>{name}</a>
                    </th>
                    <td data-col="state">
                      {t.unhealthy ? <Badge tone="bad">{whyUnhealthy(t)}</Badge> : null}
                      {t.unhealthy && t.draining ? ' ' : null}
                      {t.draining ? <Badge tone="warn">draining</Badge> : null}
                      {t.rank === 2 ? <Badge tone="ok">healthy</Badge> : null}
                      {t.draining || queueSize(t.queue) > 0 ? (
                        <div class="small">
                          {t.cordoned ? 'cordoned; ' : ''}
                          {queueText(t.queue)}
                        </div>
                      ) : null}
                    </td>
                    <td>
                      <ConditionList conditions={c.status?.conditions} />
                    </td>
                    <td>
                      <TaintList cluster={c} />
                      {c.spec.taints?.length ? (
                        <a href={`#/cluster/${q(name)}`} class="why">
                          Why is {name} tainted?
                        </a>
                      ) : null}
                    </td>
                    <td>{c.status?.lastHeartbeatTime ? <When iso={c.status.lastHeartbeatTime} /> : 'never reported'}</td>
                    <td>
                      <ClusterActions name={name} cordoned={t.cordoned} onChange={onChange} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {pages > 1 ? <Pager page={current} pages={pages} onPage={setPage} /> : null}
        </div>
      ) : (
        <Empty>No cluster matches{onlyTrouble ? ' among those in trouble' : ''}.</Empty>
      )}
    </>
  );
}

/** Previous and next page of the cluster list, and where it is. */
function Pager({ page, pages, onPage }: { page: number; pages: number; onPage: (page: number) => void }) {
  return (
    <nav class="pager" aria-label="Pages of the cluster list" data-testid="cluster-pages">
      <button type="button" onClick={() => onPage(0)} disabled={page === 0}>
        First page
      </button>
      <button type="button" onClick={() => onPage(page - 1)} disabled={page === 0}>
        Previous page
      </button>
      <span aria-live="polite">
        Page {page + 1} of {pages}
      </span>
      <button type="button" onClick={() => onPage(page + 1)} disabled={page >= pages - 1}>
        Next page
      </button>
      <button type="button" onClick={() => onPage(pages - 1)} disabled={page >= pages - 1}>
        Last page
      </button>
    </nav>
  );
}

export function ClusterActions({ name, cordoned, onChange }: { name: string; cordoned: boolean; onChange: () => void }) {
  return (
    <span class="actions">
      {cordoned ? (
        <ActionButton
          label={`Uncordon ${name}`}
          path={`clusters/${q(name)}/uncordon`}
          confirmText={`Uncordon ${name}? Its cordon taint goes (workloads may be placed there again) and the drain's waiting evictions are abandoned.`}
          onDone={onChange}
          describe={(r) => {
            const { abandoned = 0, abandonedAtSlot = 0 } = r as { abandoned?: number; abandonedAtSlot?: number };
            return `Uncordoned ${name}: ${plural(abandoned + abandonedAtSlot, 'drain eviction')} abandoned`;
          }}
        />
      ) : (
        <ActionButton
          label={`Drain ${name}`}
          path={`clusters/${q(name)}/drain`}
          confirmText={`Drain ${name}? It is cordoned (nothing new is placed there) and its workloads are evicted at the fleet's rate.`}
          onDone={onChange}
          describe={(r) => {
            const { planned = 0, alreadyDecided = 0 } = r as { planned?: number; alreadyDecided?: number };
            return `Draining ${name}: ${plural(planned, 'eviction')} planned${alreadyDecided ? ` (${alreadyDecided} already decided)` : ''}`;
          }}
        />
      )}
    </span>
  );
}
