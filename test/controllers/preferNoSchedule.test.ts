import { describe, expect, it } from 'vitest';
import { parseDocuments } from '../../shared/api/decode';
import { getCluster, reportClusterStatus } from '../../shared/controllers/clusters';
import { scheduleBinding } from '../../shared/controllers/scheduler';
import { evaluationTargets } from '../../shared/controllers/state/evaluationRequests';
import { currentFleetHealth } from '../../shared/controllers/state/reads';
import { evaluateCluster } from '../../shared/controllers/taintEvaluation';
import { manageCluster } from '../../shared/controllers/taintManager';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * A ClusterTaintPolicy that adds PreferNoSchedule, through the controllers on the in-memory ports: the taint
 * lands after its window, the cluster is not faulty and nothing is evicted from it, a new binding avoids it
 * while another cluster fits, and lands on it when it is the only one that fits.
 */

const SOFT_POLICY = `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: disk-pressure-soft
spec:
  matchConditions:
  - conditionType: DiskPressure
    operator: In
    statusValues: ["True"]
  taintsToAdd:
  - key: example.io/disk-pressure
    effect: PreferNoSchedule
    addOnMatchSeconds: 10
    removeOnMismatchSeconds: 10
`;

const apply = async (m: MemoryPlane, objects: unknown[]) => applyTo(m, objects);

/** Runs the evaluations queued so far (policy changes, deadlines due by now), as the queue trigger does. */
async function drain(m: MemoryPlane): Promise<void> {
  for (const { message } of m.evaluations.takeVisible()) for (const cluster of evaluationTargets(message)) await evaluateCluster(m.plane, cluster);
}

const placedOn = async (m: MemoryPlane, name: string) => (await m.bindings.get(`rb:default:${name}`))!.value.spec.clusters?.map((c) => [c.name, c.replicas]);

describe('PreferNoSchedule added by a ClusterTaintPolicy', () => {
  it('steers new bindings away while another cluster fits, and onto it when it is the only one; it evicts nothing', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('m1'), cluster('m2'), ...parseDocuments(SOFT_POLICY, 'yaml')]);
    await drain(m);

    await reportClusterStatus(m.plane, 'm1', { conditions: [{ type: 'DiskPressure', status: 'True' }] });
    m.clock.advance(10_000);
    await drain(m);
    const m1 = (await getCluster(m.plane, 'm1'))!;
    expect(m1.spec.taints).toEqual([expect.objectContaining({ key: 'example.io/disk-pressure', effect: 'PreferNoSchedule' })]);
    expect(m1.status.taintHolders).toEqual([{ key: 'example.io/disk-pressure', effect: 'PreferNoSchedule', policies: ['disk-pressure-soft'], manual: false }]);

    // Not faulty: fleet health ignores it and the taint manager is not asked to plan evictions from m1 (a
    // resync for failbacks home to a healthy cluster whose taints changed is another matter).
    expect(await currentFleetHealth(m.plane, 0)).toMatchObject({ faulty: 0, unhealthy: 0, faultyClusters: [], tier: 'primary' });
    expect(m.taintManager.messages().filter((s) => s.message.cluster === 'm1' && s.message.reason === 'taints-changed')).toEqual([]);

    // A binding placed on m1 before the taint stays there, even with failover.cluster and no toleration.
    const affinity = { placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } } };
    await apply(m, [binding('old', ['m1'], { ...affinity, failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 0 } } })]);
    await manageCluster(m.plane, 'm1');
    expect(await m.ledger.listEvictions('m1')).toEqual([]);

    // A new binding avoids m1 while m2 fits.
    await apply(m, [binding('web', [], affinity)]);
    expect(await scheduleBinding(m.plane, 'rb:default:web')).toBe('scheduled');
    expect(await placedOn(m, 'web')).toEqual([['m2', 2]]);

    // m2 fails (NoExecute): m1 is the only cluster that fits, and a new binding lands on it.
    await apply(m, [cluster('m2', true)]);
    await apply(m, [binding('api', [], { ...affinity, placement: { ...affinity.placement, replicaScheduling: { replicaSchedulingType: 'Divided' } } })]);
    expect(await scheduleBinding(m.plane, 'rb:default:api')).toBe('scheduled');
    expect(await placedOn(m, 'api')).toEqual([['m1', 2]]);
  });

  it('a binding that tolerates the taint treats the cluster as any other', async () => {
    const m = memoryPlane();
    await apply(m, [cluster('m1'), cluster('m2'), ...parseDocuments(SOFT_POLICY, 'yaml')]);
    await reportClusterStatus(m.plane, 'm1', { conditions: [{ type: 'DiskPressure', status: 'True' }] });
    m.clock.advance(10_000);
    await drain(m);
    await apply(m, [
      binding('web', [], {
        placement: {
          clusterAffinity: { clusterNames: ['m1', 'm2'] },
          clusterTolerations: [{ key: 'example.io/disk-pressure', operator: 'Exists', effect: 'PreferNoSchedule' }],
        },
      }),
    ]);
    expect(await scheduleBinding(m.plane, 'rb:default:web')).toBe('scheduled');
    expect(await placedOn(m, 'web')).toEqual([
      ['m1', 2],
      ['m2', 2],
    ]);
  });
});
