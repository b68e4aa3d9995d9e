import { api } from './hostProcess';

/** Builds fleets through the public API, as a user would. */
export async function applyObjects(url: string, objects: unknown[]): Promise<void> {
  for (let i = 0; i < objects.length; i += 100) {
    const res = await api(url, 'POST', 'apply', objects.slice(i, i + 100));
    if (res.status !== 200) throw new Error(`apply failed: ${res.status} ${JSON.stringify(res.body)}`);
  }
}

export const cluster = (name: string, faulty = false, labels: Record<string, string> = {}) => ({
  apiVersion: 'cluster.karmada.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, labels },
  spec: faulty ? { taints: [{ key: 'test/failed', effect: 'NoExecute' }] } : {},
});

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
