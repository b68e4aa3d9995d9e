import { get, q } from './api';
import { HistoryChart } from './chart';
import { ActionButton, Badge, Empty, Loading, Section, TierBadge, When } from './components';
import { percent, rate } from './format';
import { usePoll } from './state';
import type { Cluster, Condition, Fleet, History, Taint, TaintHolder } from './types';

export function FleetView() {
  const fleet = usePoll('fleet', () => get<Fleet>('fleet'), 2000);
  const clusters = usePoll('clusters', () => get<{ items: Cluster[] }>('clusters'), 2000);
  const history = usePoll('history', () => get<History>('fleet/history?minutes=60'), 10000);
  const refresh = () => {
    fleet.refresh();
    clusters.refresh();
  };
  return (
    <>
      <Section title="Fleet state" id="fleet-state">
        {fleet.data ? <FleetSummary fleet={fleet.data} onChange={refresh} /> : <Loading what="the fleet" />}
      </Section>
      <Section title="Evictions and tier, last hour" id="fleet-history">
        {history.data ? <HistoryChart history={history.data} /> : history.error ? <Empty>The history is not available.</Empty> : <Loading what="the history" />}
      </Section>
      <Section title="Clusters" id="fleet-clusters">
        {clusters.data ? <ClusterTable clusters={clusters.data.items} onChange={refresh} /> : <Loading what="the clusters" />}
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
      <PauseResume paused={fleet.paused} onChange={onChange} />
    </>
  );
}

export function PauseResume({ paused, onChange }: { paused: boolean; onChange: () => void }) {
  return (
    <p class="actions">
      {paused ? (
        <ActionButton label="Resume evictions" path="failover/resume" onDone={onChange} describe={() => 'Evictions resumed'} />
      ) : (
        <ActionButton label="Pause evictions" path="failover/pause" onDone={onChange} describe={() => 'Evictions paused'} />
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

function ClusterTable({ clusters, onChange }: { clusters: Cluster[]; onChange: () => void }) {
  if (!clusters.length) return <Empty>No clusters are registered.</Empty>;
  return (
    <div class="scroll">
      <table>
        <caption>Every cluster with its conditions and taints (who holds each taint, and since when)</caption>
        <thead>
          <tr>
            <th scope="col">Cluster</th>
            <th scope="col">Conditions</th>
            <th scope="col">Taints</th>
            <th scope="col">Last heartbeat</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {clusters.map((c) => {
            const name = c.metadata.name;
            const cordoned = (c.spec.taints ?? []).some((t) => t.key === 'cluster.karmada.io/unschedulable');
            return (
              <tr key={name} data-cluster={name}>
                <th scope="row">
                  <a href={`#/cluster/${q(name)}`}>{name}</a>
                </th>
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
                <td>
                  <When iso={c.status?.lastHeartbeatTime} />
                </td>
                <td>
                  <ClusterActions name={name} cordoned={cordoned} onChange={onChange} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

export function ClusterActions({ name, cordoned, onChange }: { name: string; cordoned: boolean; onChange: () => void }) {
  return (
    <span class="actions">
      {cordoned ? (
        <ActionButton
          label={`Uncordon ${name}`}
          path={`clusters/${q(name)}/uncordon`}
          onDone={onChange}
          describe={(r) => `Uncordoned ${name}: ${(r as { abandoned?: number }).abandoned ?? 0} drain evictions abandoned`}
        />
      ) : (
        <ActionButton
          label={`Drain ${name}`}
          path={`clusters/${q(name)}/drain`}
          confirmText={`Drain ${name}? Its workloads will be evicted at the fleet's rate.`}
          onDone={onChange}
          describe={(r) => `Draining ${name}: ${(r as { planned?: number }).planned ?? 0} evictions planned`}
        />
      )}
    </span>
  );
}
