import { api } from './hostProcess';

/**
 * A Cluster as its agent has it: Ready=True (fleet health counts a cluster without Ready as unhealthy).
 * Apply ignores `status`, as Karmada's does; the apply helpers report these conditions for the clusters
 * an apply created, as a cluster's agent would.
 */
export const cluster = (name: string, faulty = false, labels: Record<string, string> = {}) => ({
  apiVersion: 'cluster.karmada.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, labels },
  spec: faulty ? { taints: [{ key: 'test/failed', effect: 'NoExecute' }] } : {},
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
});

interface Reportable {
  name: string;
  conditions: Array<{ type: string; status: string }>;
}

/** The status conditions the created Cluster fixtures carry, by name (`created`: what the apply answered). */
export function createdClusterReports(objects: unknown[], created: Array<{ kind: string; name: string; action: string }>): Reportable[] {
  const createdNames = new Set(created.filter((r) => r.kind === 'Cluster' && r.action === 'created').map((r) => r.name));
  return objects.flatMap((object) => {
    const o = object as { kind?: string; metadata?: { name?: string }; status?: { conditions?: Reportable['conditions'] } };
    const name = o.metadata?.name;
    return o.kind === 'Cluster' && name && createdNames.has(name) && o.status?.conditions ? [{ name, conditions: o.status.conditions }] : [];
  });
}

/** Builds fleets through the public API, as a user would; a created cluster's agent then reports its conditions. */
export async function applyObjects(url: string, objects: unknown[]): Promise<void> {
  for (let i = 0; i < objects.length; i += 100) {
    const chunk = objects.slice(i, i + 100);
    const res = await api(url, 'POST', 'apply', chunk);
    if (res.status !== 200) throw new Error(`apply failed: ${res.status} ${JSON.stringify(res.body)}`);
    for (const { name, conditions } of createdClusterReports(chunk, res.body.results ?? [])) {
      const report = await api(url, 'POST', `clusters/${name}/status`, { conditions });
      if (report.status !== 200) throw new Error(`report for ${name} failed: ${report.status} ${JSON.stringify(report.body)}`);
    }
  }
}

export const binding = (name: string, clusters: string[], spec: Record<string, unknown> = {}) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name, namespace: 'default' },
  spec: {
    resource: { apiVersion: 'apps/v1', kind: 'Deployment', name },
    replicas: 2,
    clusters: clusters.map((c) => ({ name: c, replicas: 2 })),
    ...spec,
  },
});

export interface LedgerItem {
  cluster: string;
  binding: { name: string };
  state: string;
  dueAt: string;
  scheduledFor: string | null;
  executedAt: string | null;
  message: string | null;
}

export async function ledger(url: string, query = ''): Promise<LedgerItem[]> {
  return (await api(url, 'GET', `evictions${query}`)).body.items;
}

/** Achieved evictions per second over the executed rows: (n - 1) / (last - first). */
export function achievedRate(items: LedgerItem[]): number {
  const times = items
    .filter((i) => i.executedAt)
    .map((i) => Date.parse(i.executedAt!))
    .sort((a, b) => a - b);
  return (times.length - 1) / ((times[times.length - 1] - times[0]) / 1000);
}

export { sleep } from '../../shared/clock';
