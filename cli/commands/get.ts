import { flag, UsageError } from '../args';
import { Context } from '../context';
import { printData } from '../output';
import { age, cell, list, relative, table } from '../tables';
import { Binding, bindingName, Cluster, Eviction, ItemList, Policy, Template } from '../types';

/** The resource words `get` accepts, with their aliases. */
const RESOURCES: Record<string, string[]> = {
  clusters: ['cluster', 'clusters'],
  bindings: ['binding', 'bindings', 'rb', 'resourcebinding', 'resourcebindings', 'crb', 'clusterresourcebinding', 'clusterresourcebindings'],
  evictions: ['eviction', 'evictions'],
  policies: ['policy', 'policies', 'ctp', 'clustertaintpolicy', 'clustertaintpolicies'],
  templates: ['template', 'templates'],
};

export function resourceOf(word: string | undefined): string {
  if (!word) throw new UsageError('get needs a resource: clusters, bindings, evictions, policies or templates');
  const found = Object.entries(RESOURCES).find(([, words]) => words.includes(word.toLowerCase()));
  if (!found) throw new UsageError(`unknown resource "${word}"; use clusters, bindings, evictions, policies or templates`);
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
    default:
      only(['namespace', 'kind', 'api-version']);
      if (name) throw new UsageError('get templates takes no name; filter with --kind, --api-version and -n');
      return getTemplates(ctx);
  }
}

/** Prints the API's JSON (a list, or one object) in -o json|yaml, or calls `render` for the table. */
async function show<T>(ctx: Context, data: ItemList<T> | T, items: T[], render: () => string): Promise<void> {
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
        ready(c)?.status ?? 'Unknown',
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
    items = [{ kind: target.kind, ...one }];
  } else {
    const namespaced = ctx.client.get<ItemList<Binding>>(namespace ? `resourcebindings/${encodeURIComponent(namespace)}` : 'resourcebindings');
    const clusterScoped = namespace ? Promise.resolve({ items: [] }) : ctx.client.get<ItemList<Binding>>('clusterresourcebindings');
    const [rb, crb] = await Promise.all([namespaced, clusterScoped]);
    items = [...rb.items.map((b) => ({ kind: 'ResourceBinding', ...b })), ...crb.items.map((b) => ({ kind: 'ClusterResourceBinding', ...b }))];
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
    ...(wide ? [cell(e.purgeMode), relative(e.decidedAt), relative(e.executedAt), cell(e.attempts)] : []),
  ]);
}

export const EVICTION_HEADERS = ['CLUSTER', 'BINDING', 'STATE', 'REASON', 'DUE', 'MESSAGE'];

async function getEvictions(ctx: Context): Promise<void> {
  const data = await ctx.client.get<ItemList<Eviction>>('evictions', { cluster: flag(ctx.parsed, 'cluster'), state: flag(ctx.parsed, 'state') });
  const wide = ctx.output === 'wide';
  await show(ctx, data, data.items, () =>
    table([...EVICTION_HEADERS, ...(wide ? ['PURGEMODE', 'DECIDED', 'EXECUTED', 'ATTEMPTS'] : [])], evictionRows(data.items, wide)),
  );
}

async function getPolicies(ctx: Context, name?: string): Promise<void> {
  const data = name
    ? await ctx.client.get<Policy>(`clustertaintpolicies/${encodeURIComponent(name)}`)
    : await ctx.client.get<ItemList<Policy>>('clustertaintpolicies');
  const items = name ? [data as Policy] : (data as ItemList<Policy>).items;
  await show(ctx, data, items, () =>
    table(
      ['NAME', 'SHAPE', 'TAINTS', 'AGE'],
      items.map((p) => [
        p.metadata.name,
        cell(p.status?.shape),
        list((p.spec.taintsToAdd ?? []).map((t) => `${t.key}:${t.effect}`)),
        age(p.metadata.creationTimestamp),
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
