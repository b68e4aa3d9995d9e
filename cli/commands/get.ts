import { flag, UsageError } from '../args';
import { ApiError, Client } from '../client';
import { Context } from '../context';
import { printData } from '../output';
import { age, cell, list, relative, table } from '../tables';
import { Binding, bindingName, Budget, Cluster, Eviction, Failback, FailbackAnswer, ItemList, Policy, policyTaints, Template } from '../types';

/** The resource words `get` accepts, with their aliases. */
const RESOURCES: Record<string, string[]> = {
  clusters: ['cluster', 'clusters'],
  bindings: ['binding', 'bindings', 'rb', 'resourcebinding', 'resourcebindings', 'crb', 'clusterresourcebinding', 'clusterresourcebindings'],
  evictions: ['eviction', 'evictions'],
  policies: ['policy', 'policies', 'ctp', 'clustertaintpolicy', 'clustertaintpolicies'],
  templates: ['template', 'templates'],
  budgets: ['budget', 'budgets', 'fb', 'failoverbudget', 'failoverbudgets'],
  failback: ['failback', 'failbacks'],
};

const RESOURCE_LIST = 'clusters, bindings, evictions, policies, templates, budgets or failback';

export function resourceOf(word: string | undefined): string {
  if (!word) throw new UsageError(`get needs a resource: ${RESOURCE_LIST}`);
  const found = Object.entries(RESOURCES).find(([, words]) => words.includes(word.toLowerCase()));
  if (!found) throw new UsageError(`unknown resource "${word}"; use ${RESOURCE_LIST}`);
  return found[0];
}

export async function get(ctx: Context): Promise<void> {
  const [word, name, ...extra] = ctx.args;
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const resource = resourceOf(word);
  const only = (allowed: string[]) => {
    for (const f of ['namespace', 'cluster', 'state', 'kind', 'api-version']) {
      if (ctx.parsed.flags.has(f) && !allowed.includes(f)) throw new UsageError(`flag --${f} does not apply to "get ${resource}"`);
    }
  };
  switch (resource) {
    case 'clusters':
      only([]);
      return getClusters(ctx, name);
    case 'bindings':
      only(['namespace']);
      return getBindings(ctx, name);
    case 'evictions':
      only(['cluster', 'state']);
      if (name) throw new UsageError('get evictions takes no name; filter with --cluster and --state');
      return getEvictions(ctx);
    case 'policies':
      only([]);
      return getPolicies(ctx, name);
    case 'budgets':
      only(['namespace']);
      return getBudgets(ctx, name);
    case 'failback':
      only(['namespace']);
      if (name) throw new UsageError('get failback takes no name; filter with -n');
      return getFailback(ctx);
    default:
      only(['namespace', 'kind', 'api-version']);
      if (name) throw new UsageError('get templates takes no name; filter with --kind, --api-version and -n');
      return getTemplates(ctx);
  }
}

/** Prints the API's JSON (a list, or one object) in -o json|yaml, or calls `render` for the table. */
async function show<T>(ctx: Context, data: unknown, items: T[], render: () => string): Promise<void> {
  if (ctx.output === 'json' || ctx.output === 'yaml') await printData(data, ctx.output);
  else if (items.length === 0) process.stderr.write('No resources found.\n');
  else process.stdout.write(render());
}

const taintText = (c: Cluster) => list((c.spec.taints ?? []).map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`));
const ready = (c: Cluster) => c.status?.conditions?.find((x) => x.type === 'Ready');

async function getClusters(ctx: Context, name?: string): Promise<void> {
  const data = name ? await ctx.client.get<Cluster>(`clusters/${encodeURIComponent(name)}`) : await ctx.client.get<ItemList<Cluster>>('clusters');
  const items = name ? [data as Cluster] : (data as ItemList<Cluster>).items;
  const wide = ctx.output === 'wide';
  await show(ctx, data, items, () =>
    table(
      ['NAME', 'READY', 'TAINTS', 'AGE', ...(wide ? ['REASON', 'HEARTBEAT', 'LABELS'] : [])],
      items.map((c) => [
        c.metadata.name,
        // A cluster that never reported has no Ready condition: say so, not "Unknown" (which a policy may match).
        ready(c)?.status ?? '<never reported>',
        taintText(c),
        age(c.metadata.creationTimestamp),
        ...(wide
          ? [
              cell(ready(c)?.reason),
              c.status?.lastHeartbeatTime ? `${age(c.status.lastHeartbeatTime)} ago` : '<none>',
              list(Object.entries(c.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`)),
            ]
          : []),
      ]),
    ),
  );
}

/** Splits `ns/name` (a ResourceBinding) from `name` (a ClusterResourceBinding). */
export function bindingPath(ref: string, namespace?: string): { path: string; kind: string } {
  const parts = ref.split('/');
  if (parts.length > 2 || parts.some((p) => p === '')) throw new UsageError(`"${ref}" is not a binding name; use NAMESPACE/NAME or NAME`);
  if (parts.length === 2) {
    if (namespace && namespace !== parts[0]) throw new UsageError(`-n ${namespace} contradicts ${ref}`);
    return { path: `resourcebindings/${encodeURIComponent(parts[0])}/${encodeURIComponent(parts[1])}`, kind: 'ResourceBinding' };
  }
  if (namespace) return { path: `resourcebindings/${encodeURIComponent(namespace)}/${encodeURIComponent(ref)}`, kind: 'ResourceBinding' };
  return { path: `clusterresourcebindings/${encodeURIComponent(ref)}`, kind: 'ClusterResourceBinding' };
}

async function getBindings(ctx: Context, name?: string): Promise<void> {
  const namespace = flag(ctx.parsed, 'namespace');
  let data: ItemList<Binding> | Binding;
  let items: Binding[];
  if (name) {
    const target = bindingPath(name, namespace);
    const one = await ctx.client.get<Binding>(target.path);
    data = one;
    items = [one];
  } else {
    const namespaced = ctx.client.get<ItemList<Binding>>(namespace ? `resourcebindings/${encodeURIComponent(namespace)}` : 'resourcebindings');
    const clusterScoped = namespace ? Promise.resolve({ items: [] }) : ctx.client.get<ItemList<Binding>>('clusterresourcebindings');
    const [rb, crb] = await Promise.all([namespaced, clusterScoped]);
    items = [...rb.items, ...crb.items];
    data = { kind: 'List', items };
  }
  const wide = ctx.output === 'wide';
  await show(ctx, data, items, () =>
    table(
      ['NAMESPACE', 'NAME', 'KIND', 'CLUSTERS', 'TASKS', 'AGE', ...(wide ? ['RESOURCE', 'REPLICAS', 'BINDING KIND'] : [])],
      items.map((b) => [
        b.metadata.namespace ?? '<none>',
        b.metadata.name,
        b.spec.resource.kind,
        list((b.spec.clusters ?? []).map((c) => `${c.name}(${c.replicas ?? 0})`)),
        String(b.spec.gracefulEvictionTasks?.length ?? 0),
        age(b.metadata.creationTimestamp),
        ...(wide ? [`${b.spec.resource.apiVersion}/${b.spec.resource.kind}/${b.spec.resource.name}`, cell(b.spec.replicas), b.kind ?? ''] : []),
      ]),
    ),
  );
}

export function evictionRows(items: Eviction[], wide = false): string[][] {
  return items.map((e) => [
    e.cluster,
    bindingName(e.binding),
    e.state,
    cell(e.reason),
    relative(e.dueAt),
    cell(e.message ?? e.why),
    ...(wide ? [cell(e.purgeMode), relative(e.decidedAt), relative(e.executedAt), cell(e.attempts), String(e.priority ?? 0), cell(e.waitingFor)] : []),
  ]);
}

export const EVICTION_HEADERS = ['CLUSTER', 'BINDING', 'STATE', 'REASON', 'DUE', 'MESSAGE'];
export const EVICTION_WIDE_HEADERS = ['PURGEMODE', 'DECIDED', 'EXECUTED', 'ATTEMPTS', 'PRIORITY', 'WAITING-FOR'];

async function getEvictions(ctx: Context): Promise<void> {
  const data = await ctx.client.get<ItemList<Eviction>>('evictions', { cluster: flag(ctx.parsed, 'cluster'), state: flag(ctx.parsed, 'state') });
  const wide = ctx.output === 'wide';
  await show(ctx, data, data.items, () => table([...EVICTION_HEADERS, ...(wide ? EVICTION_WIDE_HEADERS : [])], evictionRows(data.items, wide)));
}

/** Runs `fn` over `items`, at most `limit` at a time, keeping the order. */
export async function mapLimited<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** A policy's mode: its status, else its annotation (no annotation: enforce). */
export const policyMode = (p: Policy): string => p.status?.mode ?? p.metadata.annotations?.['failover.io/mode'] ?? 'enforce';

export const policyCondition = (p: Policy, type: string) => p.status?.conditions?.find((c) => c.type === type);

/** `held/limit`, marked `(exceeded)` while BlastRadiusExceeded is True and `(acknowledged)` while an acknowledgement is in force. */
export function blastRadiusText(p: Policy): string {
  const b = p.status?.blastRadius;
  if (!b) return '<unknown>';
  const exceeded = policyCondition(p, 'BlastRadiusExceeded')?.status === 'True';
  return `${b.held}/${b.limit}${exceeded ? '(exceeded)' : b.acknowledgedAt ? '(acknowledged)' : ''}`;
}

/** The list answer has no conditions or blast radius: each policy is read on its own (8 at a time). */
async function withStatus(client: Client, items: Policy[]): Promise<Policy[]> {
  return mapLimited(items, 8, async (p) => {
    try {
      return await client.get<Policy>(`clustertaintpolicies/${encodeURIComponent(p.metadata.name)}`);
    } catch (err) {
      // Deleted since the listing: show what the list said.
      if (err instanceof ApiError && err.status === 404) return p;
      throw err;
    }
  });
}

async function getPolicies(ctx: Context, name?: string): Promise<void> {
  const data = name
    ? await ctx.client.get<Policy>(`clustertaintpolicies/${encodeURIComponent(name)}`)
    : await ctx.client.get<ItemList<Policy>>('clustertaintpolicies');
  const listed = name ? [data as Policy] : (data as ItemList<Policy>).items;
  const tabular = ctx.output === 'table' || ctx.output === 'wide';
  const items = tabular && !name ? await withStatus(ctx.client, listed) : listed;
  const wide = ctx.output === 'wide';
  await show(ctx, data, items, () =>
    table(
      ['NAME', 'SHAPE', 'MODE', 'TAINTS', 'EVICTING', 'BLAST-RADIUS', 'AGE', ...(wide ? ['MAX-SHARE', 'HELD-ON', 'REFUSED'] : [])],
      items.map((p) => [
        p.metadata.name,
        cell(p.status?.shape),
        policyMode(p),
        list(policyTaints(p).map((t) => `${t.key}:${t.effect}`)),
        policyCondition(p, 'EvictionInProgress')?.status ?? '<unknown>',
        blastRadiusText(p),
        age(p.metadata.creationTimestamp),
        ...(wide ? [cell(p.status?.blastRadius?.maxShare), list(p.status?.blastRadius?.clusters ?? []), list(p.status?.blastRadius?.refused ?? [])] : []),
      ]),
    ),
  );
}

/** `NS/NAME`, or `NAME` in `-n NS` (default `default`, as kubectl): the path of one FailoverBudget. */
export function budgetRef(ref: string, namespace?: string): { namespace: string; name: string; path: string } {
  const parts = ref.split('/');
  if (parts.length > 2 || parts.some((p) => p === '')) throw new UsageError(`"${ref}" is not a budget name; use NAMESPACE/NAME, or NAME with -n`);
  if (parts.length === 2 && namespace && namespace !== parts[0]) throw new UsageError(`-n ${namespace} contradicts ${ref}`);
  const [ns, name] = parts.length === 2 ? [parts[0], parts[1]] : [namespace ?? 'default', parts[0]];
  return { namespace: ns, name, path: `failoverbudgets/${encodeURIComponent(ns)}/${encodeURIComponent(name)}` };
}

/** `5`, or a percentage with what it resolved to: `20 (10%)`; `10%` before the bindings were counted. */
export function maxInFlightText(b: Budget): string {
  const spec = String(b.spec.maxInFlight);
  const resolved = b.status?.maxInFlight;
  if (resolved === undefined) return spec;
  return spec.endsWith('%') ? `${resolved} (${spec})` : String(resolved);
}

/** Pending ledger rows waiting for a budget, by `namespace/name`. */
export async function waitingRows(client: Client): Promise<Map<string, Eviction[]>> {
  const pending = await client.get<ItemList<Eviction>>('evictions', { state: 'pending' });
  const out = new Map<string, Eviction[]>();
  for (const row of pending.items) {
    if (!row.waitingFor) continue;
    out.set(row.waitingFor, [...(out.get(row.waitingFor) ?? []), row]);
  }
  return out;
}

/** A label selector in one line: `app=web,tier in (a,b),!canary`; `<all>` for `{}`. */
export function selectorText(selector: unknown): string {
  const s = (selector ?? {}) as {
    matchLabels?: Record<string, string>;
    matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
  };
  const parts = Object.entries(s.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of s.matchExpressions ?? []) {
    if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
    else parts.push(`${e.key} ${e.operator === 'NotIn' ? 'notin' : 'in'} (${(e.values ?? []).join(',')})`);
  }
  return parts.length ? parts.join(',') : '<all>';
}

async function getBudgets(ctx: Context, name?: string): Promise<void> {
  const namespace = flag(ctx.parsed, 'namespace');
  let data: ItemList<Budget> | Budget;
  let items: Budget[];
  if (name) {
    const one = await ctx.client.get<Budget>(budgetRef(name, namespace).path);
    data = one;
    items = [one];
  } else {
    const listed = await ctx.client.get<ItemList<Budget>>(namespace ? `failoverbudgets/${encodeURIComponent(namespace)}` : 'failoverbudgets');
    data = listed;
    items = listed.items;
  }
  if (ctx.output === 'json' || ctx.output === 'yaml') return show(ctx, data, items, () => '');
  const waiting = items.length > 0 ? await waitingRows(ctx.client) : new Map<string, Eviction[]>();
  const wide = ctx.output === 'wide';
  await show(ctx, data, items, () =>
    table(
      ['NAMESPACE', 'NAME', 'MAX-IN-FLIGHT', 'IN-FLIGHT', 'MATCHING', 'WAITING', ...(wide ? ['SELECTOR', 'AGE'] : [])],
      items.map((b) => [
        b.metadata.namespace,
        b.metadata.name,
        maxInFlightText(b),
        String(b.status?.inFlight ?? 0),
        cell(b.status?.matchingBindings),
        String(waiting.get(`${b.metadata.namespace}/${b.metadata.name}`)?.length ?? 0),
        ...(wide ? [selectorText(b.spec.selector), age(b.metadata.creationTimestamp)] : []),
      ]),
    ),
  );
}

/** GET /api/failback; a server without it (404) has no failback data: an empty answer. */
export async function readFailback(client: Client): Promise<FailbackAnswer> {
  try {
    const answer = await client.get<FailbackAnswer>('failback');
    return { ...answer, bindings: answer.bindings ?? [] };
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return { bindings: [] };
    throw err;
  }
}

/** When a failback is due: `in 3m`, `<none>` while there is no due time yet. */
const failbackDue = (f: Failback) => (f.dueAt ? relative(f.dueAt) : '<none>');

async function getFailback(ctx: Context): Promise<void> {
  const namespace = flag(ctx.parsed, 'namespace');
  const answer = await readFailback(ctx.client);
  const items = namespace ? answer.bindings.filter((f) => f.binding.namespace === namespace) : answer.bindings;
  const data = namespace ? { ...answer, bindings: items } : answer;
  const wide = ctx.output === 'wide';
  await show(ctx, data, items, () =>
    table(
      ['BINDING', 'HOME', 'NOW-ON', 'STATE', 'DUE', ...(wide ? ['WINDOW', 'HEALTHY-SINCE'] : [])],
      items.map((f) => [
        bindingName(f.binding),
        f.home,
        list(f.replacedBy ?? []),
        f.state,
        failbackDue(f),
        ...(wide ? [`${f.windowSeconds}s`, f.healthySince ? relative(f.healthySince) : '<none>'] : []),
      ]),
    ),
  );
}

async function getTemplates(ctx: Context): Promise<void> {
  const data = await ctx.client.get<ItemList<Template>>('templates', {
    kind: flag(ctx.parsed, 'kind'),
    apiVersion: flag(ctx.parsed, 'api-version'),
    namespace: flag(ctx.parsed, 'namespace'),
  });
  const wide = ctx.output === 'wide';
  await show(ctx, data, data.items, () =>
    table(
      ['APIVERSION', 'KIND', 'NAMESPACE', 'NAME', ...(wide ? ['AGE'] : [])],
      data.items.map((t) => [t.apiVersion, t.kind, t.metadata.namespace ?? '<none>', t.metadata.name, ...(wide ? [age(t.metadata.creationTimestamp)] : [])]),
    ),
  );
}
