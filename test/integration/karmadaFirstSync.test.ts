import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { syncKarmada } from '../../shared/controllers/karmadaSync';
import type { ControlPlane } from '../../shared/controllers/ports';
import { type KarmadaTestPlane, startKarmadaTestPlane } from '../helpers/karmadaTestPlane';
import type { KubeApiServer } from '../helpers/kubeApiServer';

/**
 * A first sync lists Karmada's bindings and creates their placement rows and index rows (the store writes a
 * create without looking for a stored row). A row that is there after all, left by a sync that died before
 * it indexed the binding, is written over with what Karmada holds. With nothing indexed yet, the policies'
 * relist has no row to correct. Real Azurite, the Kubernetes API test
 * server, the real sync.
 */
let karmada: KarmadaTestPlane | undefined;
let server: KubeApiServer;
let plane: ControlPlane;

const binding = (name: string, cluster: string, replicas: number) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name, namespace: 'default', generation: 1 },
  spec: {
    resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name },
    replicas,
    clusters: [{ name: cluster, replicas }],
    placement: { clusterAffinity: { clusterNames: ['member1', 'member2'] } },
  },
  status: { schedulerObservedGeneration: 1 },
});

beforeAll(async () => {
  karmada = await startKarmadaTestPlane();
  ({ server, plane } = karmada);
  for (const name of ['member1', 'member2'])
    server.upsert({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name }, spec: { syncMode: 'Push' } });
  for (let i = 0; i < 30; i++) server.upsert(binding(`app-${i}`, i % 2 ? 'member2' : 'member1', 1 + (i % 3)));
}, 30_000);
afterAll(async () => {
  await karmada?.close();
});

const rowsOf = async (cluster: string) => (await plane.ledger.listPlacements(cluster)).sort((a, b) => a.name.localeCompare(b.name));

it('creates every placement and index row, and writes over a row a sync that died left behind', async () => {
  // With nothing indexed yet, the policies' relist has no row to correct: it reads no cluster's rows.
  const clusterReads = vi.spyOn(plane.ledger, 'listPlacements');
  await syncKarmada(plane, 1);
  expect(clusterReads).not.toHaveBeenCalled();
  clusterReads.mockRestore();
  const member1 = await rowsOf('member1');
  expect(member1.map((row) => [row.name, row.replicas])).toEqual(
    Array.from({ length: 15 }, (_, k) => 2 * k)
      .map((i) => [`app-${i}`, 1 + (i % 3)] as [string, number])
      .sort((a, b) => a[0].localeCompare(b[0])),
  );
  expect((await plane.karmada!.placements.get('rb:default:app-4'))?.value.clusters).toEqual(['member1']);

  // As a sync that died part-way leaves it: app-4's row with other facts, no index row, no cursor.
  const app4 = member1.find((row) => row.name === 'app-4')!;
  await plane.ledger.upsertPlacements([{ ...app4, replicas: 99, tolerations: [{ key: 'stale', operator: 'Exists' }] }]);
  await plane.karmada!.placements.delete('rb:default:app-4');
  for (const { id } of await plane.karmada!.cursors.list()) await plane.karmada!.cursors.delete(id);

  await syncKarmada(plane, 1);
  expect(await rowsOf('member1')).toEqual(member1);
  expect(await rowsOf('member2')).toHaveLength(15);
  expect((await plane.karmada!.placements.get('rb:default:app-4'))?.value.clusters).toEqual(['member1']);
});
