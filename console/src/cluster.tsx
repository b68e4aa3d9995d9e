import { get, q } from './api';
import { clusterTrouble, CORDON_KEY, isSilent, whyUnhealthy } from './banner';
import { Empty, Pending, Section, When } from './components';
import { EventTimeline } from './events';
import { ClusterActions, ConditionList, holderText, TaintList } from './fleet';
import { usePoll } from './state';
import type { Cluster, FleetEvent } from './types';

/** #/cluster/NAME: why a cluster is tainted: who holds each taint, the policy windows, and its events. */
export function ClusterView({ name }: { name: string }) {
  const cluster = usePoll('cluster', () => get<Cluster>(`clusters/${q(name)}`), 2000, [name]);
  const events = usePoll('cluster-events', () => get<{ items: FleetEvent[] }>(`events?kind=Cluster&name=${q(name)}&limit=200`), 4000, [name]);
  const c = cluster.data;
  return (
    <>
      <Section title="Conditions and taints" id="cluster-state">
        {c ? (
          <>
            <h4>Conditions</h4>
            <ConditionList conditions={c.status?.conditions} />
            <SilentHint cluster={c} />
            <h4>Taints</h4>
            <TaintList cluster={c} />
            <p class="actions">
              <ClusterActions name={name} cordoned={(c.spec.taints ?? []).some((t) => t.key === CORDON_KEY)} onChange={cluster.refresh} />
            </p>
          </>
        ) : (
          <Pending poll={cluster} what="the cluster" />
        )}
      </Section>
      {c ? (
        <Section title="Why: taint holders and policy windows" id="cluster-why">
          <TaintWhy cluster={c} />
        </Section>
      ) : null}
      <Section title="Events" id="cluster-events">
        {events.data ? (
          <EventTimeline events={events.data.items} caption={`Events of cluster ${name}, newest first`} />
        ) : (
          <Pending poll={events} what="the events" />
        )}
      </Section>
    </>
  );
}

/** A cluster silent or Unknown (never reported, Ready=Unknown, no Ready condition): what to do. */
function SilentHint({ cluster }: { cluster: Cluster }) {
  const t = clusterTrouble(cluster, undefined, undefined);
  if (!isSilent(t)) return null;
  return (
    <p data-testid="silent-hint">
      {cluster.metadata.name} has no Ready=True report ({whyUnhealthy(t)}): start the cluster's reporter, or <code>npm start -- --simulate</code> locally.
    </p>
  );
}

function TaintWhy({ cluster }: { cluster: Cluster }) {
  const holders = cluster.status?.taintHolders ?? [];
  const windows = cluster.status?.policyWindows ?? [];
  const taints = cluster.spec.taints ?? [];
  return (
    <>
      {taints.length ? (
        <div class="scroll">
          <table>
            <caption>Taints of {cluster.metadata.name}, who holds them and since when</caption>
            <thead>
              <tr>
                <th scope="col">Taint</th>
                <th scope="col">Added</th>
                <th scope="col">Held by</th>
              </tr>
            </thead>
            <tbody>
              {taints.map((t) => (
                <tr key={`${t.key}:${t.effect}`}>
                  <th scope="row">
                    {t.key}
                    {t.value ? `=${t.value}` : ''}:{t.effect}
                  </th>
                  <td>
                    <When iso={t.timeAdded} />
                  </td>
                  <td>{holderText(holders.find((h) => h.key === t.key && h.effect === t.effect))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <Empty>{cluster.metadata.name} has no taints.</Empty>
      )}
      {windows.length ? (
        <div class="scroll">
          <table>
            <caption>Taint policies watching {cluster.metadata.name}</caption>
            <thead>
              <tr>
                <th scope="col">Policy</th>
                <th scope="col">Conditions match</th>
                <th scope="col">Since</th>
              </tr>
            </thead>
            <tbody>
              {windows.map((w) => (
                <tr key={w.policy}>
                  <th scope="row">{w.policy}</th>
                  <td>{w.matched ? 'yes' : 'no'}</td>
                  <td>
                    <When iso={w.since} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
