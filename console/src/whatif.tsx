import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { get, post } from './api';
import { Empty, heldText, Pending, Section, TierBadge, When } from './components';
import { bindingHref, bindingName, naturalCompare, percent, plural, rate } from './format';
import { clear, report, usePoll } from './state';
import type { BindingRef, Cluster, WhatIf } from './types';

/** #/whatif: what would happen if these clusters failed now (the API writes nothing). */
export function WhatIfView() {
  const clusters = usePoll('whatif-clusters', () => get<{ items: Cluster[] }>('clusters'), 0);
  const [picked, setPicked] = useState<string[]>([]);
  const [type, setType] = useState('Ready');
  const [status, setStatus] = useState('False');
  const [result, setResult] = useState<WhatIf | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const toggle = (name: string, on: boolean) => setPicked((p) => (on ? [...p.filter((n) => n !== name), name] : p.filter((n) => n !== name)));
  const run = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      setResult(await post<WhatIf>('whatif', { failClusters: picked, condition: { type, status } }, false));
      clear('whatif');
    } catch (error) {
      report('whatif', error);
    } finally {
      setBusy(false);
    }
  };
  const names = (clusters.data?.items ?? []).map((c) => c.metadata.name).sort(naturalCompare);
  return (
    <>
      <Section title="Scenario" id="whatif-scenario">
        {clusters.data ? (
          <form onSubmit={(e) => void run(e)}>
            <fieldset>
              <legend>Clusters that fail</legend>
              {names.length ? (
                <ul class="columns plain">
                  {names.map((n) => (
                    <li key={n}>
                      <label>
                        <input
                          type="checkbox"
                          name="failClusters"
                          value={n}
                          checked={picked.includes(n)}
                          onChange={(e) => toggle(n, e.currentTarget.checked)}
                        />{' '}
                        {n}
                      </label>
                    </li>
                  ))}
                </ul>
              ) : (
                <Empty>No clusters are registered.</Empty>
              )}
            </fieldset>
            <fieldset class="inline">
              <legend>Condition they report</legend>
              <label for="whatif-type">Type</label>
              <input id="whatif-type" value={type} onInput={(e) => setType(e.currentTarget.value)} size={12} />
              <label for="whatif-status">Status</label>
              <select id="whatif-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
                <option>False</option>
                <option>Unknown</option>
                <option>True</option>
              </select>
            </fieldset>
            <p>
              <button type="submit" disabled={busy || picked.length === 0}>
                {busy ? 'Running…' : 'Run what-if'}
              </button>{' '}
              {picked.length === 0 ? <span>Pick at least one cluster.</span> : null}
            </p>
          </form>
        ) : (
          <Pending poll={clusters} what="the clusters" />
        )}
      </Section>
      {result ? <WhatIfResult result={result} /> : null}
    </>
  );
}

const Workload = ({ b }: { b: BindingRef }) => <a href={bindingHref(b)}>{bindingName(b)}</a>;

function WhatIfResult({ result }: { result: WhatIf }) {
  return (
    <Section title="Outcome" id="whatif-outcome">
      <p data-testid="whatif-summary">
        Fleet {result.fleet.unhealthy} unhealthy of {result.fleet.total} ({percent(result.fleet.failureRatio)}): tier <TierBadge tier={result.fleet.tier} /> at{' '}
        {rate(result.fleet.rate)}. {plural(result.counts.evictions, 'eviction')}, {result.counts.blocked} blocked, {result.counts.tolerated} tolerated,{' '}
        {result.counts.alreadyDecided} already decided. Last eviction: {result.eta ? <When iso={result.eta} /> : 'never (held or none)'}
        {result.heldBy ? `; ${heldText(result.heldBy)}` : ''}.
      </p>
      <h4>Taints</h4>
      {result.taints.length ? (
        <Table
          caption="Taints the policies would add"
          head={['Cluster', 'Taint', 'At', 'Policy']}
          rows={result.taints.map((t) => [t.cluster, `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`, <When iso={t.at} />, t.policy])}
        />
      ) : (
        <Empty>No taint would be added.</Empty>
      )}
      {result.untainted.length ? (
        <Table caption="Clusters that would not be tainted" head={['Cluster', 'Why']} rows={result.untainted.map((u) => [u.cluster, u.why])} />
      ) : null}
      <h4>Evictions</h4>
      {result.evictions.length ? (
        <Table
          caption="Evictions, in the order they would run"
          head={['Workload', 'From', 'Due', 'Slot', 'Why', 'New placement']}
          rows={result.evictions.map((e) => [
            <Workload b={e.binding} />,
            e.cluster,
            <When iso={e.dueAt} />,
            <When iso={e.slot} />,
            e.why,
            e.targets.map((t) => `${t.name}${t.replicas !== undefined ? `:${t.replicas}` : ''}`).join(', ') || '—',
          ])}
        />
      ) : (
        <Empty>Nothing would be evicted.</Empty>
      )}
      {result.blocked.length ? (
        <>
          <h4>Blocked</h4>
          <Table
            caption="Evictions that would be blocked, and why"
            head={['Workload', 'From', 'Reason']}
            rows={result.blocked.map((b) => [<Workload b={b.binding} />, b.cluster, b.reason])}
          />
        </>
      ) : null}
      {result.tolerated.length ? (
        <>
          <h4>Tolerated</h4>
          <Table
            caption="Workloads that tolerate the taints"
            head={['Workload', 'On', 'Why']}
            rows={result.tolerated.map((t) => [<Workload b={t.binding} />, t.cluster, t.why])}
          />
        </>
      ) : null}
      {result.alreadyDecided.length ? (
        <>
          <h4>Already decided</h4>
          <Table
            caption="Evictions already in the ledger"
            head={['Workload', 'From', 'State']}
            rows={result.alreadyDecided.map((a) => [<Workload b={a.binding} />, a.cluster, a.state])}
          />
        </>
      ) : null}
    </Section>
  );
}

function Table({ caption, head, rows }: { caption: string; head: string[]; rows: ComponentChildren[][] }) {
  return (
    <div class="scroll">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {head.map((h) => (
              <th scope="col" key={h}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((cells, i) => (
            <tr key={i}>
              {cells.map((cell, j) =>
                j === 0 ? (
                  <th scope="row" key={j}>
                    {cell}
                  </th>
                ) : (
                  <td key={j}>{cell}</td>
                ),
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
