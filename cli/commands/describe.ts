import { flag, UsageError } from '../args';
import { ApiError } from '../client';
import { Context } from '../context';
import { yamlOf } from '../output';
import { age, cell, list, relative, table } from '../tables';
import { Binding, bindingKeyName, bindingName, BindingRef, Budget, Cluster, Event, Eviction, ItemList, Policy, policyTaints, WhyAnswer } from '../types';
import { bindingPath, blastRadiusText, budgetRef, EVICTION_HEADERS, evictionRows, maxInFlightText, policyMode, selectorText, waitingRows } from './get';

const RECENT_EVENTS = 20;

/** `Label:   value` lines, aligned like kubectl describe. */
const fields = (rows: Array<[string, string]>) => {
  const width = Math.max(...rows.map(([k]) => k.length)) + 2;
  return rows.map(([k, v]) => `${`${k}:`.padEnd(width)}${v}`).join('\n') + '\n';
};

/** A titled section; its table (or a `<none>`) indented by two spaces. */
const section = (title: string, body: string | undefined) => {
  if (!body || body.trim() === '') return `${title}:\n  <none>\n`;
  return `${title}:\n${body
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n')}\n`;
};

const when = (iso: string | null | undefined) => (iso ? `${iso} (${relative(iso)})` : '<none>');

/** Events as kubectl describe shows them: AGE, TYPE, REASON, MESSAGE. */
function eventTable(events: Event[]): string | undefined {
  if (events.length === 0) return undefined;
  return table(
    ['AGE', 'TYPE', 'REASON', 'MESSAGE'],
    events.map((e) => [age(e.time), e.type, e.reason, cell(e.message)]),
  );
}

const DESCRIBABLE = 'cluster NAME, binding NAMESPACE/NAME, policy NAME or budget NAMESPACE/NAME';

export async function describe(ctx: Context): Promise<void> {
  if (ctx.output !== 'table') throw new UsageError('describe prints text only; use "get ... -o json|yaml" for the objects');
  const [what, name, ...extra] = ctx.args;
  if (!what) throw new UsageError(`describe needs a resource: ${DESCRIBABLE}`);
  if (!name) throw new UsageError(`describe ${what} needs a name`);
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const kind = what.toLowerCase();
  const namespace = flag(ctx.parsed, 'namespace');
  const noNamespace = () => {
    if (namespace !== undefined) throw new UsageError(`flag --namespace does not apply to "describe ${kind}" (it is cluster-scoped)`);
  };
  if (['cluster', 'clusters'].includes(kind)) {
    noNamespace();
    process.stdout.write(await describeCluster(ctx, name));
  } else if (['binding', 'bindings', 'rb', 'resourcebinding', 'crb', 'clusterresourcebinding'].includes(kind))
    process.stdout.write(await describeBinding(ctx, name, namespace));
  else if (['policy', 'policies', 'ctp', 'clustertaintpolicy', 'clustertaintpolicies'].includes(kind)) {
    noNamespace();
    process.stdout.write(await describePolicy(ctx, name));
  } else if (['budget', 'budgets', 'fb', 'failoverbudget', 'failoverbudgets'].includes(kind)) process.stdout.write(await describeBudget(ctx, name, namespace));
  else throw new UsageError(`cannot describe "${what}"; use ${DESCRIBABLE}`);
}

async function describeCluster(ctx: Context, name: string): Promise<string> {
  const path = encodeURIComponent(name);
  const [cluster, events, evictions] = await Promise.all([
    ctx.client.get<Cluster>(`clusters/${path}`),
    ctx.client.get<ItemList<Event>>('events', { kind: 'Cluster', name, limit: String(RECENT_EVENTS) }),
    ctx.client.get<ItemList<Eviction>>('evictions', { cluster: name }),
  ]);
  const status = cluster.status ?? {};
  const labels = Object.entries(cluster.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`);
  const counts = new Map<string, number>();
  for (const e of evictions.items) counts.set(e.state, (counts.get(e.state) ?? 0) + 1);
  let text = fields([
    ['Name', cluster.metadata.name],
    ['Labels', list(labels, ', ')],
    ['Created', when(cluster.metadata.creationTimestamp)],
    ['Last heartbeat', when(status.lastHeartbeatTime)],
    ['Evictions', counts.size > 0 ? [...counts].map(([state, n]) => `${n} ${state}`).join(', ') : '<none>'],
  ]);
  text += conditionsSection(status.conditions ?? []);
  const holders = status.taintHolders ?? [];
  const taints = cluster.spec.taints ?? [];
  text += section(
    'Taints',
    taints.length
      ? table(
          ['TAINT', 'SINCE', 'HELD BY'],
          taints.map((t) => {
            const holder = holders.find((h) => h.key === t.key && h.effect === t.effect);
            const by = [...(holder?.policies ?? []).map((p) => `clustertaintpolicy/${p}`), ...(holder?.manual ? ['manual'] : [])];
            return [`${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`, t.timeAdded ? `${age(t.timeAdded)} (${t.timeAdded})` : '<unknown>', list(by, ', ')];
          }),
        )
      : undefined,
  );
  const windows = status.policyWindows ?? [];
  text += section(
    'Policy windows',
    windows.length
      ? table(
          ['POLICY', 'MATCHED', 'SINCE'],
          windows.map((w) => [w.policy, String(w.matched), `${age(w.since)} (${w.since})`]),
        )
      : undefined,
  );
  text += section(`Events (last ${RECENT_EVENTS})`, eventTable(events.items.slice(-RECENT_EVENTS)));
  return text;
}

/** The /why answer; when the server has no /why yet, the same parts from the ledger and the event log. */
async function whyOf(ctx: Context, path: string, binding: Binding, eventName: string, kind: string): Promise<WhyAnswer> {
  try {
    return await ctx.client.get<WhyAnswer>(`${path}/why`);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
  }
  const [events, evictions] = await Promise.all([
    ctx.client.get<ItemList<Event>>('events', { kind, name: eventName, limit: String(RECENT_EVENTS) }),
    ctx.client.get<ItemList<Eviction>>('evictions'),
  ]);
  const ns = binding.metadata.namespace;
  return {
    binding: { kind: binding.kind, ...(ns ? { namespace: ns } : {}), name: binding.metadata.name },
    placedOn: (binding.spec.clusters ?? []).map((c) => ({ name: c.name, replicas: c.replicas ?? binding.spec.replicas ?? 0 })),
    gracefulEvictionTasks: binding.spec.gracefulEvictionTasks ?? [],
    failback: [],
    evictions: evictions.items.filter((e) => e.binding.kind === kind && e.binding.name === binding.metadata.name && (e.binding.namespace ?? '') === (ns ?? '')),
    events: events.items,
    explanation: [],
  };
}

async function describeBinding(ctx: Context, ref: string, namespace?: string): Promise<string> {
  const target = bindingPath(ref, namespace);
  const binding = await ctx.client.get<Binding>(target.path);
  const eventName = binding.metadata.namespace ? `${binding.metadata.namespace}/${binding.metadata.name}` : binding.metadata.name;
  const why = await whyOf(ctx, target.path, binding, eventName, target.kind);
  const r = binding.spec.resource;
  const resourceNs = r.namespace ?? binding.metadata.namespace;
  const health = new Map((binding.status?.aggregatedStatus ?? []).map((s) => [s.clusterName, s.health ?? 'Unknown']));
  let text = fields([
    ['Name', binding.metadata.name],
    ['Namespace', binding.metadata.namespace ?? '<none>'],
    ['Kind', target.kind],
    ['Resource', `${r.apiVersion} ${r.kind} ${resourceNs ? `${resourceNs}/` : ''}${r.name}`],
    ['Replicas', cell(binding.spec.replicas)],
    ['Created', when(binding.metadata.creationTimestamp)],
  ]);
  text += section('Placement', binding.spec.placement ? await yamlOf(binding.spec.placement) : undefined);
  if (binding.spec.failover) text += section('Failover', await yamlOf(binding.spec.failover));
  const placed = why.placedOn.length ? why.placedOn : (binding.spec.clusters ?? []);
  text += section(
    'Clusters',
    placed.length
      ? table(
          ['NAME', 'REPLICAS', 'HEALTH'],
          placed.map((c) => [c.name, cell(c.replicas), health.get(c.name) ?? '<none>']),
        )
      : undefined,
  );
  const tasks = why.gracefulEvictionTasks;
  text += section(
    'Graceful eviction tasks',
    tasks.length
      ? table(
          ['FROM', 'PURGEMODE', 'REASON', 'PRODUCER', 'AGE'],
          tasks.map((t) => [t.fromCluster, cell(t.purgeMode as string | undefined), cell(t.reason), cell(t.producer), age(t.creationTimestamp)]),
        )
      : undefined,
  );
  if (why.explanation.length) text += section('Why', why.explanation.join('\n'));
  text += section('Evictions', why.evictions.length ? table(EVICTION_HEADERS, evictionRows(why.evictions)) : undefined);
  text += section(`Events (last ${RECENT_EVENTS})`, eventTable(why.events.slice(-RECENT_EVENTS)));
  return text;
}

/** Shadow findings: what a policy in shadow mode would have done. */
const FINDINGS = ['WouldTaint', 'WouldEvict'];

const taintOf = (t: unknown) => {
  const taint = (t ?? {}) as { key?: string; value?: string; effect?: string };
  return `${taint.key ?? '?'}${taint.value ? `=${taint.value}` : ''}:${taint.effect ?? '?'}`;
};

/** What a finding is about: the taint (WouldTaint) or the binding (WouldEvict). */
function findingTarget(e: Event): string {
  const d = e.details ?? {};
  if (e.reason === 'WouldEvict') {
    const b = d.binding as BindingRef | undefined;
    return b?.name ? bindingName(b) : typeof d.bindingKey === 'string' ? bindingKeyName(d.bindingKey) : '<unknown>';
  }
  return `${taintOf(d.taint)}${d.present === true ? ' (present)' : ''}`;
}

async function describePolicy(ctx: Context, name: string): Promise<string> {
  const [policy, events] = await Promise.all([
    ctx.client.get<Policy>(`clustertaintpolicies/${encodeURIComponent(name)}`),
    ctx.client.get<ItemList<Event>>('events', { kind: 'ClusterTaintPolicy', name, limit: '500' }),
  ]);
  const status = policy.status ?? {};
  let text = fields([
    ['Name', policy.metadata.name],
    ['Shape', cell(status.shape)],
    ['Mode', policyMode(policy)],
    [
      'Taints',
      list(
        policyTaints(policy).map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`),
        ', ',
      ),
    ],
    ['Created', when(policy.metadata.creationTimestamp)],
    ['Rules', cell(status.rules)],
  ]);
  const target = 'taintsToAdd' in policy.spec ? policy.spec.targetCluster : policy.spec.targetClusters;
  if (target) text += section('Target clusters', await yamlOf(target));
  text += conditionsSection(status.conditions ?? []);
  const b = status.blastRadius;
  text += section(
    'Blast radius',
    b
      ? fields([
          ['Held/limit', blastRadiusText(policy)],
          ['Limit', `${b.limit} of ${b.fleet} clusters (MAX_FLEET_SHARE_TAINTED_BY_POLICY=${b.maxShare})`],
          ['Held on', list(b.clusters, ', ')],
          ['Exceeded since', when(b.exceededSince)],
          ['Refused', list(b.refused ?? [], ', ')],
          ['Acknowledged', when(b.acknowledgedAt)],
        ])
      : undefined,
  );
  const actions = status.recentActions ?? [];
  text += section(
    'Recent actions',
    actions.length
      ? table(
          ['AGE', 'CLUSTER', 'ACTION', 'TAINT', 'RULE'],
          actions
            .slice()
            .reverse()
            .map((a) => [age(a.time), a.cluster, a.action, taintOf(a.taint), cell(a.rule)]),
        )
      : undefined,
  );
  const findings = events.items.filter((e) => FINDINGS.includes(e.reason)).reverse();
  text += section(
    `Shadow findings (${findings.length}, newest first${findings.length > RECENT_EVENTS ? `, the first ${RECENT_EVENTS} shown` : ''})`,
    findings.length
      ? table(
          ['AGE', 'FINDING', 'CLUSTER', 'TARGET', 'WHEN'],
          findings.slice(0, RECENT_EVENTS).map((e) => {
            const d = e.details ?? {};
            return [age(e.time), e.reason, cell(d.cluster as string | undefined), findingTarget(e), typeof d.when === 'string' ? when(d.when) : '<none>'];
          }),
        )
      : undefined,
  );
  const others = events.items.filter((e) => !FINDINGS.includes(e.reason));
  text += section(`Events (last ${RECENT_EVENTS})`, eventTable(others.slice(-RECENT_EVENTS)));
  return text;
}

async function describeBudget(ctx: Context, ref: string, namespace?: string): Promise<string> {
  const target = budgetRef(ref, namespace);
  const [budget, waiting] = await Promise.all([ctx.client.get<Budget>(target.path), waitingRows(ctx.client)]);
  const status = budget.status ?? {};
  // In the pacer's order: higher priority first, then the earlier due time.
  const held = (waiting.get(`${budget.metadata.namespace}/${budget.metadata.name}`) ?? []).sort(
    (a, b) => (b.priority ?? 0) - (a.priority ?? 0) || String(a.dueAt).localeCompare(String(b.dueAt)),
  );
  let text = fields([
    ['Name', budget.metadata.name],
    ['Namespace', budget.metadata.namespace],
    ['Selector', selectorText(budget.spec.selector)],
    ['Max in flight', maxInFlightText(budget)],
    ['Matching bindings', cell(status.matchingBindings)],
    ['In flight', String(status.inFlight ?? 0)],
    ['Waiting', String(held.length)],
    ['Created', when(budget.metadata.creationTimestamp)],
  ]);
  const flying = status.evictions ?? [];
  text += section(
    'Evictions in flight',
    flying.length
      ? table(
          ['BINDING', 'CLUSTER', 'SINCE'],
          flying.map((e) => [bindingKeyName(e.binding), e.cluster, `${age(e.since)} (${e.since})`]),
        )
      : undefined,
  );
  text += section(
    'Waiting for room',
    held.length
      ? table(
          ['BINDING', 'CLUSTER', 'PRIORITY', 'DUE', 'MESSAGE'],
          held.map((e) => [bindingName(e.binding), e.cluster, String(e.priority ?? 0), relative(e.dueAt), cell(e.message)]),
        )
      : undefined,
  );
  return text;
}

/** Kubernetes-style conditions as a table section (a cluster's, a policy's). */
function conditionsSection(conditions: Array<{ type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }>): string {
  return section(
    'Conditions',
    conditions.length
      ? table(
          ['TYPE', 'STATUS', 'REASON', 'LAST TRANSITION', 'MESSAGE'],
          conditions.map((c) => [c.type, c.status, cell(c.reason), age(c.lastTransitionTime), cell(c.message)]),
        )
      : undefined,
  );
}
