import { get, HttpError, q } from './api';
import { AcknowledgeButton, Badge, Empty, Pending, Section, When } from './components';
import { EventTimeline } from './events';
import { ConditionList } from './fleet';
import { bindingHref, bindingName, mapLimited, plural } from './format';
import { usePoll } from './state';
import type { BindingRef, Condition, FleetEvent, Policy } from './types';
import { policyTaints } from './types';

/** What a shadow policy would have done (events on the policy). */
const FINDINGS = ['WouldTaint', 'WouldEvict'];
const FINDING_LIMIT = 200;

export const policyMode = (p: Policy) => p.status?.mode ?? p.metadata.annotations?.['failover.io/mode'] ?? 'enforce';
const condition = (p: Policy, type: string) => p.status?.conditions?.find((c) => c.type === type);
const exceeded = (p: Policy) => condition(p, 'BlastRadiusExceeded')?.status === 'True';

const policyEvents = (name: string) => get<{ items: FleetEvent[] }>(`events?kind=ClusterTaintPolicy&name=${q(name)}&limit=500`);

/** One policy with its status; the listing's entry when it went meanwhile. */
async function loadPolicy(listed: Policy): Promise<Policy> {
  try {
    return await get<Policy>(`clustertaintpolicies/${q(listed.metadata.name)}`);
  } catch (e) {
    if (e instanceof HttpError && e.status === 404) return listed;
    throw e;
  }
}

interface PoliciesData {
  policies: Policy[];
  /** Findings of the policies in shadow mode, newest first. */
  findings: FleetEvent[];
}

async function loadPolicies(): Promise<PoliciesData> {
  const list = await get<{ items: Policy[] }>('clustertaintpolicies');
  // The listing has no status: each policy is read (6 at a time), and the events of those in shadow mode.
  const policies = await mapLimited(list.items, 6, loadPolicy);
  const shadow = policies.filter((p) => policyMode(p) === 'shadow');
  const events = await mapLimited(shadow, 6, (p) => policyEvents(p.metadata.name));
  const findings = events
    .flatMap((e) => e.items)
    .filter((e) => FINDINGS.includes(e.reason))
    .sort((a, b) => b.time.localeCompare(a.time));
  return { policies, findings };
}

function ModeBadge({ policy }: { policy: Policy }) {
  return policyMode(policy) === 'shadow' ? <Badge tone="info">shadow</Badge> : <Badge tone="muted">enforce</Badge>;
}

function policyConditionTone(c: Condition): 'ok' | 'warn' | 'bad' | 'muted' {
  if (c.status !== 'True') return 'ok';
  return c.type === 'BlastRadiusExceeded' ? 'bad' : 'warn';
}

/** `held/limit`, and what the guard is doing. */
function BlastRadiusCell({ policy }: { policy: Policy }) {
  const b = policy.status?.blastRadius;
  if (!b) return <span>—</span>;
  return (
    <>
      <span data-col="blast-radius">
        {b.held}/{b.limit}
      </span>{' '}
      {exceeded(policy) ? <Badge tone="bad">exceeded</Badge> : b.acknowledgedAt ? <Badge tone="warn">acknowledged</Badge> : null}
      {b.refused?.length ? <div class="small">refused: {b.refused.join(', ')}</div> : null}
    </>
  );
}

/** #/policies: every ClusterTaintPolicy with its mode, conditions and blast radius, and the shadow findings. */
export function PoliciesView() {
  const data = usePoll('policies', loadPolicies, 5000);
  const d = data.data;
  if (!d) return <Pending poll={data} what="the policies" />;
  return (
    <>
      <Section title="ClusterTaintPolicies" id="policies-list">
        {d.policies.length ? (
          <div class="scroll">
            <table data-testid="policies">
              <caption>
                Policies, their mode, their status conditions and their blast radius (clusters where they hold NoExecute or PreferNoExecute taints, of the most
                allowed)
              </caption>
              <thead>
                <tr>
                  <th scope="col">Policy</th>
                  <th scope="col">Mode</th>
                  <th scope="col">Taints</th>
                  <th scope="col">Conditions</th>
                  <th scope="col">Blast radius</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {d.policies.map((p) => (
                  <tr key={p.metadata.name} data-policy={p.metadata.name}>
                    <th scope="row">
                      <a href={`#/policy/${q(p.metadata.name)}`}>{p.metadata.name}</a>
                    </th>
                    <td>
                      <ModeBadge policy={p} /> <small>{p.status?.shape ?? ''}</small>
                    </td>
                    <td>
                      {policyTaints(p)
                        .map((t) => `${t.key}:${t.effect}`)
                        .join(', ') || '—'}
                    </td>
                    <td>
                      <ConditionList conditions={p.status?.conditions} empty="none yet" since={false} tone={policyConditionTone} />
                    </td>
                    <td>
                      <BlastRadiusCell policy={p} />
                    </td>
                    <td>{exceeded(p) ? <AcknowledgeButton policy={p} onDone={data.refresh} /> : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>No ClusterTaintPolicies.</Empty>
        )}
      </Section>
      <Section title="Shadow findings" id="policies-findings">
        <p class="small">
          What the policies in shadow mode would have done (once per match episode): the taints they would have added and the workloads that would have been
          evicted.
        </p>
        <Findings events={d.findings} showPolicy />
      </Section>
    </>
  );
}

function findingTarget(e: FleetEvent) {
  const d = e.details ?? {};
  if (e.reason === 'WouldEvict') {
    const b = d.binding as BindingRef | undefined;
    return b?.name ? <a href={bindingHref(b)}>{bindingName(b)}</a> : <span>{String(d.bindingKey ?? '—')}</span>;
  }
  const t = (d.taint ?? {}) as { key?: string; value?: string; effect?: string };
  return (
    <span>
      {t.key}
      {t.value ? `=${t.value}` : ''}:{t.effect}
      {d.present === true ? ' (already there: it would have taken hold of it)' : ''}
    </span>
  );
}

function Findings({ events, showPolicy = false }: { events: FleetEvent[]; showPolicy?: boolean }) {
  if (!events.length) return <Empty>No shadow findings.</Empty>;
  const shown = events.slice(0, FINDING_LIMIT);
  return (
    <div class="scroll">
      <table data-testid="findings">
        <caption>Shadow findings, newest first{events.length > shown.length ? ` (first ${shown.length} of ${events.length})` : ''}</caption>
        <thead>
          <tr>
            <th scope="col">Recorded</th>
            {showPolicy ? <th scope="col">Policy</th> : null}
            <th scope="col">Finding</th>
            <th scope="col">Cluster</th>
            <th scope="col">Taint or workload</th>
            <th scope="col">Would have acted</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((e, i) => {
            const d = e.details ?? {};
            return (
              <tr key={`${e.time}-${i}`} data-finding={e.reason}>
                <td>
                  <When iso={e.time} />
                </td>
                {showPolicy ? (
                  <td>
                    <a href={`#/policy/${q(e.name)}`}>{e.name}</a>
                  </td>
                ) : null}
                <th scope="row">{e.reason}</th>
                <td>{typeof d.cluster === 'string' ? <a href={`#/cluster/${q(d.cluster)}`}>{d.cluster}</a> : '—'}</td>
                <td>{findingTarget(e)}</td>
                <td>
                  <When iso={typeof d.when === 'string' ? d.when : undefined} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** #/policy/NAME: one policy's status, blast radius, recent taint actions, shadow findings and events. */
export function PolicyView({ name }: { name: string }) {
  const policy = usePoll('policy', () => get<Policy>(`clustertaintpolicies/${q(name)}`), 5000, [name]);
  const events = usePoll('policy-events', () => policyEvents(name), 5000, [name]);
  const p = policy.data;
  const all = events.data?.items ?? [];
  const findings = all.filter((e) => FINDINGS.includes(e.reason)).reverse();
  const others = all.filter((e) => !FINDINGS.includes(e.reason));
  const b = p?.status?.blastRadius;
  return (
    <>
      <Section title="Status" id="policy-status">
        {p ? (
          <>
            <dl class="facts">
              <div>
                <dt>Mode</dt>
                <dd>
                  <ModeBadge policy={p} />
                </dd>
              </div>
              <div>
                <dt>Shape</dt>
                <dd>{p.status?.shape ?? '—'}</dd>
              </div>
              <div>
                <dt>Taints</dt>
                <dd>
                  {policyTaints(p)
                    .map((t) => `${t.key}:${t.effect}`)
                    .join(', ') || '—'}
                </dd>
              </div>
            </dl>
            {p.status?.rules ? <p class="small">{p.status.rules}</p> : null}
            <h4>Conditions</h4>
            <ConditionList conditions={p.status?.conditions} empty="none yet" messages tone={policyConditionTone} />
            {exceeded(p) ? (
              <p class="actions">
                <AcknowledgeButton policy={p} onDone={policy.refresh} />
              </p>
            ) : null}
          </>
        ) : (
          <Pending poll={policy} what="the policy" />
        )}
      </Section>
      {b && p ? (
        <Section title="Blast radius" id="policy-blast-radius">
          <dl class="facts" data-testid="blast-radius">
            <div>
              <dt>Held / limit</dt>
              <dd>
                <BlastRadiusCell policy={p} />
              </dd>
            </div>
            <div>
              <dt>Limit</dt>
              <dd>
                {b.limit} of {plural(b.fleet, 'cluster')} (share {b.maxShare})
              </dd>
            </div>
            <div>
              <dt>Held on</dt>
              <dd>{b.clusters.join(', ') || 'none'}</dd>
            </div>
            <div>
              <dt>Exceeded since</dt>
              <dd>
                <When iso={b.exceededSince} />
              </dd>
            </div>
            <div>
              <dt>Acknowledged</dt>
              <dd>
                <When iso={b.acknowledgedAt} />
              </dd>
            </div>
          </dl>
        </Section>
      ) : null}
      {p?.status?.recentActions?.length ? (
        <Section title="Recent taint actions" id="policy-actions">
          <div class="scroll">
            <table>
              <caption>The policy's latest taint adds and removes, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Cluster</th>
                  <th scope="col">Action</th>
                  <th scope="col">Taint</th>
                  <th scope="col">Rule</th>
                </tr>
              </thead>
              <tbody>
                {[...p.status.recentActions].reverse().map((a, i) => (
                  <tr key={`${a.time}-${i}`}>
                    <td>
                      <When iso={a.time} />
                    </td>
                    <th scope="row">{a.cluster}</th>
                    <td>{a.action}</td>
                    <td>
                      {a.taint.key}:{a.taint.effect}
                    </td>
                    <td>{a.rule ?? '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </Section>
      ) : null}
      <Section title="Shadow findings" id="policy-findings">
        {events.data ? <Findings events={findings} /> : <Pending poll={events} what="the findings" />}
      </Section>
      <Section title="Events" id="policy-events">
        {events.data ? <EventTimeline events={others} caption={`Events of policy ${name}, newest first`} /> : <Pending poll={events} what="the events" />}
      </Section>
    </>
  );
}
