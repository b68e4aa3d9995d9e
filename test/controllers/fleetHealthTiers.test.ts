import { describe, expect, it } from 'vitest';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { fleetStatus } from '../../shared/controllers/fleet';
import { binding, cluster } from '../helpers/fleet';
import { applyTo, loopSecond, LoopState } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * The rate tiers count what is down, not what one policy was allowed to taint: the blast-radius guard holds
 * a policy at half the fleet, and a fleet mostly down must still slow down or halt.
 */
const notReadyPolicy = {
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name: 'not-ready' },
  spec: {
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', addOnMatchSeconds: 2, removeOnMismatchSeconds: 5 }],
  },
};

const names = (n: number) => Array.from({ length: n }, (_, i) => `c${String(i + 1).padStart(2, '0')}`);

async function failing(total: number, down: number) {
  const m = memoryPlane({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '10', SECONDARY_RESOURCE_EVICTION_RATE: '5' });
  const fleet = names(total);
  // Two workloads on every cluster that goes down, each free to go to any cluster.
  const workloads = fleet.slice(0, down).flatMap((c) => [binding(`${c}-a`, [c]), binding(`${c}-b`, [c])]);
  await applyTo(m, [...fleet.map((n) => cluster(n)), notReadyPolicy, ...workloads]);
  for (const name of fleet.slice(0, down)) await reportClusterStatus(m.plane, name, { conditions: [{ type: 'Ready', status: 'False' }] });
  const state: LoopState = { evictions: [], evaluations: [] };
  for (let s = 0; s < 8; s++) await loopSecond(m, state);
  return m;
}

const tainted = async (m: MemoryPlane) => (await m.clusters.list()).filter(({ value }) => value.taints.some((t) => t.effect === 'NoExecute')).length;
const evicted = async (m: MemoryPlane) => (await m.plane.ledger.scanEvictions({ states: ['done'] })).length;

describe('fleet health counts unhealthy clusters, not only tainted ones', () => {
  it('7 of 12 Ready=False, one policy held at half the fleet by the guard: halted, nothing evicted', async () => {
    const m = await failing(12, 7);
    expect(await tainted(m)).toBe(6);
    const fleet = await fleetStatus(m.plane);
    expect(fleet).toMatchObject({ total: 12, unhealthy: 7, faulty: 6, tier: 'secondary' });
    // 12 clusters is a large fleet (more than 10): the secondary rate, not a halt. A small one halts:
    const small = await failing(9, 5);
    expect(await tainted(small)).toBe(4);
    expect(await fleetStatus(small.plane)).toMatchObject({ total: 9, unhealthy: 5, faulty: 4, tier: 'halted', rate: 0 });
    expect(await evicted(small)).toBe(0);
  });

  it('7 of 12 with LARGE_CLUSTER_NUM_THRESHOLD at 12 (a small fleet): halted, nothing evicted', async () => {
    const m = memoryPlane({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '10', LARGE_CLUSTER_NUM_THRESHOLD: '12' });
    const fleet = names(12);
    await applyTo(m, [...fleet.map((n) => cluster(n)), notReadyPolicy, ...fleet.slice(0, 7).map((c) => binding(`${c}-a`, [c]))]);
    for (const name of fleet.slice(0, 7)) await reportClusterStatus(m.plane, name, { conditions: [{ type: 'Ready', status: 'False' }] });
    const state: LoopState = { evictions: [], evaluations: [] };
    for (let s = 0; s < 8; s++) await loopSecond(m, state);
    expect(await tainted(m)).toBe(6);
    expect(await fleetStatus(m.plane)).toMatchObject({ total: 12, unhealthy: 7, failureRatio: 7 / 12, tier: 'halted', rate: 0 });
    expect(await evicted(m)).toBe(0);
  });

  it('8 of 13 failing: secondary, not primary', async () => {
    const m = await failing(13, 8);
    expect(await tainted(m)).toBe(6);
    expect(await fleetStatus(m.plane)).toMatchObject({ total: 13, unhealthy: 8, tier: 'secondary', rate: 5 });
  });

  it('clusters that recover leave the count at once, and the tier returns to primary', async () => {
    const m = await failing(12, 7);
    for (const name of names(12).slice(0, 7)) await reportClusterStatus(m.plane, name, { conditions: [{ type: 'Ready', status: 'True' }] });
    expect(await fleetStatus(m.plane)).toMatchObject({ unhealthy: 6, tier: 'primary' });
  });
});
