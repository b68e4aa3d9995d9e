import { afterAll, beforeAll, expect, it } from 'vitest';
import { syncKarmada } from '../../shared/controllers/karmadaSync';
import type { ControlPlane } from '../../shared/controllers/ports';
import { fleetClusters, fleetCounts } from '../../shared/controllers/state/reads';
import { type KarmadaTestPlane, startKarmadaTestPlane } from '../helpers/karmadaTestPlane';
import type { KubeApiServer } from '../helpers/kubeApiServer';

/**
 * Karmada mode: while the sync watches the Clusters, the process's fleet view (placement, the blast-radius
 * guard, the pacer's fleet health) follows each watched change instead of listing the Clusters again every
 * second; once the watch has ended, a read older than its bound lists again. Real Azurite, the Kubernetes
 * API test server, the real sync.
 */
let karmada: KarmadaTestPlane | undefined;
let server: KubeApiServer;
let plane: ControlPlane;

const cluster = (name: string, labels: Record<string, string> = {}, ready = 'True') => ({
  apiVersion: 'cluster.karmada.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name, labels },
  spec: { syncMode: 'Push' },
  status: { conditions: [{ type: 'Ready', status: ready, reason: 'ClusterReady', lastTransitionTime: new Date().toISOString() }] },
});
const clusterLists = () => server.requests.filter((r) => r.verb === 'list' && r.resource === 'clusters').length;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  karmada = await startKarmadaTestPlane();
  ({ server, plane } = karmada);
  for (const name of ['member1', 'member2', 'member3']) server.upsert(cluster(name));
  await syncKarmada(plane, 0.5);
}, 60_000);
afterAll(async () => {
  await karmada?.close();
});

it('follows the watch: changes are seen without listing the Clusters, and a fresh read lists none', async () => {
  const syncing = syncKarmada(plane, 3);
  await sleep(300);
  await fleetClusters(plane, 0);
  const listsBefore = clusterLists();
  server.upsert(cluster('member2', { zone: 'b' }));
  server.upsert(cluster('member3', {}, 'False'));
  server.upsert(cluster('member4'));
  await sleep(300);
  // maxAge 0 ("as it is now"): the followed view is current, no listing.
  expect((await fleetClusters(plane, 0)).map((c) => [c.name, c.labels])).toEqual([
    ['member1', {}],
    ['member2', { zone: 'b' }],
    ['member3', {}],
    ['member4', {}],
  ]);
  const counts = await fleetCounts(plane, 0);
  expect([counts.total, counts.unhealthy]).toEqual([4, ['member3']]);
  server.remove('clusters', 'member4');
  await sleep(300);
  expect((await fleetClusters(plane, 0)).map((c) => c.name)).toEqual(['member1', 'member2', 'member3']);
  expect(clusterLists()).toBe(listsBefore);
  await syncing;
  // The watch has ended: a read that wants the fleet as it is now lists it.
  await fleetClusters(plane, 0);
  expect(clusterLists()).toBe(listsBefore + 1);
});
