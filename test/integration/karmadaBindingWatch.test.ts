import { afterAll, beforeAll, expect, it } from 'vitest';
import { syncKarmada } from '../../shared/controllers/karmadaSync';
import type { ControlPlane, TaintManagerMessage } from '../../shared/controllers/ports';
import { MemoryMessageQueue } from '../../shared/store/memory/messageQueue';
import { type KarmadaTestPlane, startKarmadaTestPlane } from '../helpers/karmadaTestPlane';
import type { KubeApiServer } from '../helpers/kubeApiServer';

/**
 * Karmada rewrites a binding many times while it fails over (aggregated status, Work conditions, its
 * scheduler's result). Only a version that changes what planning reads (where it is placed, its tolerations,
 * its failover settings) sends the faulty cluster's taint manager a pass; the rest write nothing to the
 * placement index. Real Azurite, the Kubernetes API test server, the real sync.
 */
let karmada: KarmadaTestPlane | undefined;
let server: KubeApiServer;
let plane: ControlPlane;
const taintManager = new MemoryMessageQueue<TaintManagerMessage>();

const NAME = 'web-deployment';
const bindingObject = (extra: { tolerations?: unknown[]; health?: string } = {}) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name: NAME, namespace: 'default', generation: 1 },
  spec: {
    resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'web' },
    replicas: 1,
    clusters: [{ name: 'member1', replicas: 1 }],
    placement: { clusterAffinity: { clusterNames: ['member1', 'member2'] }, ...(extra.tolerations ? { clusterTolerations: extra.tolerations } : {}) },
    failover: { cluster: { purgeMode: 'Gracefully' } },
  },
  status: {
    schedulerObservedGeneration: 1,
    ...(extra.health ? { aggregatedStatus: [{ clusterName: 'member1', applied: true, health: extra.health }] } : {}),
  },
});

const bindingPasses = () => taintManager.takeAll().filter((m) => m.message.reason === 'binding-changed');

beforeAll(async () => {
  karmada = await startKarmadaTestPlane({ taintManager });
  ({ server, plane } = karmada);
  server.upsert({
    apiVersion: 'cluster.karmada.io/v1alpha1',
    kind: 'Cluster',
    metadata: { name: 'member1' },
    spec: { syncMode: 'Push', taints: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', timeAdded: new Date().toISOString() }] },
    status: { conditions: [{ type: 'Ready', status: 'False', reason: 'ClusterNotReachable', lastTransitionTime: new Date().toISOString() }] },
  });
  server.upsert({ apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster', metadata: { name: 'member2' }, spec: { syncMode: 'Push' } });
  server.upsert(bindingObject());
  await syncKarmada(plane, 1);
  taintManager.takeAll();
}, 60_000);
afterAll(async () => {
  await karmada?.close();
});

it('a status-only version of a binding on a faulty cluster plans nothing and writes no index row', async () => {
  const indexed = await plane.karmada!.placements.get(`rb:default:${NAME}`);
  expect(indexed?.value.clusters).toEqual(['member1']);
  for (const health of ['Unknown', 'Unhealthy', 'Unknown']) server.upsert(bindingObject({ health }));
  await syncKarmada(plane, 1);
  expect(bindingPasses()).toEqual([]);
  // The index row was not rewritten for versions that change no placement row.
  expect((await plane.karmada!.placements.get(`rb:default:${NAME}`))?.etag).toBe(indexed?.etag);
});

it('a version that changes what planning reads (a toleration) sends the faulty cluster one pass', async () => {
  server.upsert(bindingObject({ tolerations: [{ key: 'cluster.karmada.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 }] }));
  await syncKarmada(plane, 1);
  expect(bindingPasses().map((m) => m.message.cluster)).toEqual(['member1']);
  const rows = await plane.ledger.listPlacements('member1');
  expect(rows.find((row) => row.name === NAME)?.tolerations).toHaveLength(1);
});
