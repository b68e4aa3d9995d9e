import { afterAll, beforeAll, expect, it } from 'vitest';
import { syncKarmada } from '../../shared/controllers/karmadaSync';
import type { ControlPlane, EvictionBatch, TaintManagerMessage } from '../../shared/controllers/ports';
import { CALLER_PLANNED_MESSAGE_DELAY_SECONDS } from '../../shared/controllers/state/clusterWrites';
import { MemoryMessageQueue } from '../../shared/store/memory/messageQueue';
import { type KarmadaTestPlane, startKarmadaTestPlane } from '../helpers/karmadaTestPlane';
import type { KubeApiServer } from '../helpers/kubeApiServer';

/**
 * The watch sees Karmada write Ready=False and evaluates, taints, plans and paces the cluster itself, where it
 * saw the change. The taint-manager messages the same change would send (the taint's write, the watch seeing
 * that write) must not run a second pass beside the first evictions: one message, delayed, as a safety net.
 * Real Azurite, the Kubernetes API test server, the real sync.
 */
let karmada: KarmadaTestPlane | undefined;
let server: KubeApiServer;
let plane: ControlPlane;
const taintManager = new MemoryMessageQueue<TaintManagerMessage>();
const evictions = new MemoryMessageQueue<EvictionBatch>();
const NOT_READY = 'cluster.karmada.io/not-ready';

const member = (name: string, ready: 'True' | 'False') => ({
  apiVersion: 'cluster.karmada.io/v1alpha1',
  kind: 'Cluster',
  metadata: { name },
  spec: { syncMode: 'Push' },
  status: {
    conditions: [
      { type: 'Ready', status: ready, reason: ready === 'True' ? 'ClusterReady' : 'ClusterNotReachable', lastTransitionTime: new Date().toISOString() },
    ],
  },
});

const binding = (name: string) => ({
  apiVersion: 'work.karmada.io/v1alpha2',
  kind: 'ResourceBinding',
  metadata: { name, namespace: 'default', generation: 1 },
  spec: {
    resource: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name },
    replicas: 1,
    clusters: [{ name: 'member1', replicas: 1 }],
    placement: { clusterAffinity: { clusterNames: ['member1', 'member2'] } },
    failover: { cluster: { purgeMode: 'Gracefully' } },
  },
  status: { schedulerObservedGeneration: 1 },
});

beforeAll(async () => {
  karmada = await startKarmadaTestPlane({ taintManager, evictions });
  ({ server, plane } = karmada);
  server.upsert({
    apiVersion: 'policy.karmada.io/v1alpha1',
    kind: 'ClusterTaintPolicy',
    metadata: { name: 'not-ready' },
    spec: {
      addOnConditions: [{ conditionType: 'Ready', operator: 'NotIn', statusValues: ['True'] }],
      removeOnConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['True'] }],
      taints: [{ key: NOT_READY, effect: 'NoExecute' }],
    },
  });
  for (const name of ['member1', 'member2', 'member3']) server.upsert(member(name, 'True'));
  for (let i = 0; i < 40; i++) server.upsert(binding(`web-${i}`));
  await syncKarmada(plane, 1);
  taintManager.takeAll();
}, 60_000);
afterAll(async () => {
  await karmada?.close();
});

it("plans and paces a failure the watch saw itself; the change's taint-manager message waits, once", async () => {
  const watch = syncKarmada(plane, 3);
  await new Promise((resolve) => setTimeout(resolve, 500));
  server.upsert(member('member1', 'False'));
  await watch;
  // The taint was written to Karmada, and the watch planned every binding on member1.
  expect(server.get('clusters', 'member1')!.spec.taints.map((t: { key: string }) => t.key)).toEqual([NOT_READY]);
  const rows = await plane.ledger.listEvictions('member1', ['pending', 'scheduled', 'done']);
  expect(rows).toHaveLength(40);
  // Paced at once: the first slots were handed out (and the nearest run) by the watch itself.
  expect(rows.filter((row) => row.record.state !== 'pending').length).toBeGreaterThan(0);
  // One message for the change (the taint's write), delayed; the watch delivering that write sent none.
  const passes = taintManager.takeAll().filter((m) => m.message.cluster === 'member1');
  expect(passes.map((m) => [m.message.reason, m.delaySeconds])).toEqual([['taints-changed', CALLER_PLANNED_MESSAGE_DELAY_SECONDS]]);
}, 60_000);

it('a change of taints the watch did not plan itself (written by someone else) sends its message at once', async () => {
  const watch = syncKarmada(plane, 2);
  await new Promise((resolve) => setTimeout(resolve, 500));
  // Someone removes the taint by hand while the Ready condition does not change.
  const current = server.get('clusters', 'member1')!;
  server.upsert({ ...current, spec: { ...current.spec, taints: [] } });
  await watch;
  const passes = taintManager.takeAll().filter((m) => m.message.cluster === 'member1');
  expect(passes.map((m) => [m.message.reason, m.delaySeconds])).toContainEqual(['taints-changed', 0]);
}, 60_000);
