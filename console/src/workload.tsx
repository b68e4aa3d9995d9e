import { useState } from 'preact/hooks';
import { get, HttpError, q } from './api';
import { Empty, Pending, Section, When } from './components';
import { EventTimeline } from './events';
import { bindingHref, bindingName } from './format';
import { StateBadge } from './queue';
import { usePoll } from './state';
import type { Binding, BindingRef, FleetEvent, LedgerRow, Why } from './types';

interface WorkloadData {
  binding: Binding;
  why: Why | undefined;
  evictions: LedgerRow[];
  events: FleetEvent[];
}

const same = (a: BindingRef, ns: string | undefined, name: string) => a.name === name && (a.namespace ?? '') === (ns ?? '');

async function loadWorkload(ns: string | undefined, name: string): Promise<WorkloadData> {
  const path = ns ? `resourcebindings/${q(ns)}/${q(name)}` : `clusterresourcebindings/${q(name)}`;
  const full = ns ? `${ns}/${name}` : name;
  const kind = ns ? 'ResourceBinding' : 'ClusterResourceBinding';
  const [binding, why] = await Promise.all([
    get<Binding>(path),
    get<Why>(`${path}/why`).catch((e: unknown) => {
      if (e instanceof HttpError && e.status === 404) return undefined;
      throw e;
    }),
  ]);
  if (why) return { binding, why, evictions: why.evictions, events: why.events };
  // Without the /why endpoint: the ledger and the events, filtered here.
  const [ledger, events] = await Promise.all([
    get<{ items: LedgerRow[] }>('evictions'),
    get<{ items: FleetEvent[] }>(`events?kind=${kind}&name=${q(full)}&limit=200`),
  ]);
  return { binding, why: undefined, evictions: ledger.items.filter((r) => same(r.binding, ns, name)), events: events.items };
}

/** #/workload/NS/NAME (or #/workload/NAME for a ClusterResourceBinding). */
export function WorkloadView({ ns, name }: { ns: string | undefined; name: string }) {
  const data = usePoll('workload', () => loadWorkload(ns, name), 2000, [ns, name]);
  const w = data.data;
  if (!w) return <Pending poll={data} what={`the workload ${ns ? `${ns}/${name}` : name}`} />;
  const spec = w.binding.spec;
  const health = new Map((w.binding.status?.aggregatedStatus ?? []).map((s) => [s.clusterName, s.health ?? 'Unknown']));
  const tasks = w.why?.gracefulEvictionTasks ?? spec.gracefulEvictionTasks ?? [];
  return (
    <>
      {w.why?.explanation.length ? (
        <Section title="Why it is where it is" id="workload-why">
          <ul>
            {w.why.explanation.map((line, i) => (
              <li key={i}>{line}</li>
            ))}
          </ul>
        </Section>
      ) : null}
      <Section title="Placement" id="workload-placement">
        <p>
          {spec.resource ? `${spec.resource.kind} ${spec.resource.name} (${spec.resource.apiVersion})` : 'resource unknown'}, {spec.replicas ?? 0} replicas.
        </p>
        {spec.clusters?.length ? (
          <div class="scroll">
            <table>
              <caption>Clusters the workload is placed on</caption>
              <thead>
                <tr>
                  <th scope="col">Cluster</th>
                  <th scope="col">Replicas</th>
                  <th scope="col">Health</th>
                </tr>
              </thead>
              <tbody>
                {spec.clusters.map((c) => (
                  <tr key={c.name}>
                    <th scope="row">
                      <a href={`#/cluster/${q(c.name)}`}>{c.name}</a>
                    </th>
                    <td>{c.replicas ?? '—'}</td>
                    <td>{health.get(c.name) ?? 'not reported'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>Not placed on any cluster.</Empty>
        )}
        {spec.placement || spec.failover ? (
          <details>
            <summary>Placement and failover settings</summary>
            <pre>{JSON.stringify({ placement: spec.placement, failover: spec.failover }, null, 2)}</pre>
          </details>
        ) : null}
      </Section>
      <Section title="Graceful-eviction tasks" id="workload-tasks">
        {tasks.length ? (
          <div class="scroll">
            <table data-testid="eviction-tasks">
              <caption>Old copies waiting to be removed once the new copy is healthy</caption>
              <thead>
                <tr>
                  <th scope="col">From cluster</th>
                  <th scope="col">Purge mode</th>
                  <th scope="col">Reason</th>
                  <th scope="col">Producer</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {tasks.map((t) => (
                  <tr key={t.fromCluster}>
                    <th scope="row">{t.fromCluster}</th>
                    <td>{t.purgeMode ?? '—'}</td>
                    <td>{t.reason ?? '—'}</td>
                    <td>{t.producer ?? '—'}</td>
                    <td>
                      <When iso={t.creationTimestamp} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>No graceful-eviction tasks.</Empty>
        )}
      </Section>
      <Section title="Eviction history" id="workload-evictions">
        {w.evictions.length ? (
          <div class="scroll">
            <table data-testid="eviction-history">
              <caption>Evictions decided for this workload</caption>
              <thead>
                <tr>
                  <th scope="col">From cluster</th>
                  <th scope="col">State</th>
                  <th scope="col">Why</th>
                  <th scope="col">Decided</th>
                  <th scope="col">Executed</th>
                  <th scope="col">Message</th>
                </tr>
              </thead>
              <tbody>
                {w.evictions.map((r) => (
                  <tr key={`${r.cluster}-${r.decidedAt ?? ''}`}>
                    <th scope="row">{r.cluster}</th>
                    <td>
                      <StateBadge state={r.state} />
                    </td>
                    <td>{[r.reason, r.why].filter(Boolean).join(': ')}</td>
                    <td>
                      <When iso={r.decidedAt} />
                    </td>
                    <td>
                      <When iso={r.executedAt} />
                    </td>
                    <td>{r.message ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>No evictions recorded.</Empty>
        )}
      </Section>
      <Section title="Timeline" id="workload-timeline">
        <EventTimeline events={w.events} caption={`Events of ${ns ? `${ns}/${name}` : name}, newest first`} />
      </Section>
    </>
  );
}

/** #/workload: pick a workload by name, or from the list. */
export function WorkloadPicker() {
  const list = usePoll('workloads', () => get<{ items: Binding[] }>('resourcebindings'), 0);
  const [value, setValue] = useState('');
  const open = (e: Event) => {
    e.preventDefault();
    const [a, b] = value.trim().split('/');
    if (!a) return;
    location.hash = bindingHref(b ? { kind: 'ResourceBinding', namespace: a, name: b } : { kind: 'ClusterResourceBinding', name: a });
  };
  const items = list.data?.items ?? [];
  return (
    <>
      <Section title="Open a workload" id="workload-open">
        <form onSubmit={open} class="inline">
          <label for="workload-name">Binding (namespace/name, or name of a ClusterResourceBinding)</label>
          <input id="workload-name" value={value} onInput={(e) => setValue(e.currentTarget.value)} autocomplete="off" spellcheck={false} />
          <button type="submit">Open</button>
        </form>
      </Section>
      <Section title="ResourceBindings" id="workload-list">
        {list.data ? (
          items.length ? (
            <ul class="columns">
              {items.slice(0, 500).map((b) => {
                const ref = { kind: 'ResourceBinding' as const, namespace: b.metadata.namespace, name: b.metadata.name };
                return (
                  <li key={bindingName(ref)}>
                    <a href={bindingHref(ref)}>{bindingName(ref)}</a>
                  </li>
                );
              })}
            </ul>
          ) : (
            <Empty>No ResourceBindings.</Empty>
          )
        ) : (
          <Pending poll={list} what="the bindings" />
        )}
      </Section>
    </>
  );
}
