import { describe, expect, it } from 'vitest';
import { reportClusterStatus } from '../../shared/controllers/clusters';
import { whatIfFailure } from '../../shared/controllers/whatIf';
import { bindingKey } from '../../shared/failover/bindingModel';
import { binding, cluster } from '../helpers/fleet';
import { applyTo, loopSecond, LoopState } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * What-if against the real thing, on the in-memory ports: the same fleet is asked "what if m1 and m2 failed
 * now", then m1 and m2 do fail (a health report), and the whole loop runs second by second (the taint
 * windows, the taint manager, the pacer and the worker, the scheduler). The evicted set, the blocked set and
 * every evicted binding's new placement must be what the what-if said, and the what-if must write nothing.
 */

const policy = {
  apiVersion: 'policy.karmada.io/v1alpha1',
  kind: 'ClusterTaintPolicy',
  metadata: { name: 'not-ready' },
  spec: {
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
    taintsToAdd: [
      { key: 'cluster.karmada.io/not-ready', effect: 'PreferNoExecute', addOnMatchSeconds: 1, removeOnMismatchSeconds: 60 },
      { key: 'cluster.karmada.io/unreachable', effect: 'NoExecute', addOnMatchSeconds: 20, removeOnMismatchSeconds: 60 },
    ],
  },
};

const names = ['m1', 'm2', 'm3', 'm4', 'm5'];
const bindings = [
  // Leaves when the NoExecute taint lands (20 s), to a cluster of its affinity.
  binding('plain', ['m1'], { placement: { clusterAffinity: { clusterNames: ['m1', 'm3', 'm4'] } } }),
  // failover.cluster: leaves 5 s after the PreferNoExecute taint (at 6 s), old copy removed at once.
  binding('prefer', ['m1'], { failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 5 } } }),
  // Tolerates the NoExecute taint for ever and has no failover.cluster: stays.
  binding('tolerant', ['m1'], { placement: { clusterTolerations: [{ key: 'cluster.karmada.io/unreachable', operator: 'Exists', effect: 'NoExecute' }] } }),
  // Tolerates it for 10 s: leaves at 30 s.
  binding('patient', ['m2'], {
    placement: { clusterTolerations: [{ key: 'cluster.karmada.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 }] },
  }),
  // Nowhere to go: its affinity names only failing clusters.
  binding('stuck', ['m1'], { placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } } }),
  // On both failing clusters, two groups wanted: both copies move.
  binding('pair', ['m1', 'm2'], { placement: { spreadConstraints: [{ spreadByField: 'cluster', maxGroups: 2, minGroups: 2 }] } }),
  // Divided: m1's replicas go to the clusters left.
  binding('divided', ['m1', 'm3'], {
    replicas: 4,
    clusters: [
      { name: 'm1', replicas: 2 },
      { name: 'm3', replicas: 2 },
    ],
    placement: { clusterAffinity: { clusterNames: ['m1', 'm3', 'm5'] }, replicaScheduling: { replicaSchedulingType: 'Divided' } },
  }),
];

async function snapshot(m: MemoryPlane): Promise<string> {
  return JSON.stringify([
    await m.clusters.list(),
    await m.bindings.list(),
    await m.policies.list(),
    await m.ledger.scanEvictions({}),
    await m.ledger.getPacerState(),
    await m.events.list({ limit: 100_000 }),
    await m.fleetSummary.list(),
    m.evaluations.nextVisibleAt() ?? null,
    m.taintManager.nextVisibleAt() ?? null,
    m.evictions.nextVisibleAt() ?? null,
  ]);
}

describe('what-if, then the real failure', () => {
  it('gives the same evicted set, blocked set and targets, and writes nothing', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '2' });
    await applyTo(m, [policy, ...names.map((n) => cluster(n)), ...bindings]);
    for (const name of names) await reportClusterStatus(m.plane, name, { conditions: [{ type: 'Ready', status: 'True' }] });
    const state: LoopState = { evictions: [], evaluations: [] };
    for (let i = 0; i < 3; i++) await loopSecond(m, state);

    const before = await snapshot(m);
    const answer = await whatIfFailure(m.plane, { failClusters: ['m1', 'm2'] });
    expect(await snapshot(m)).toBe(before);

    const key = (b: { binding: { namespace?: string; name: string } }, cluster: string) => `${cluster}|${b.binding.name}`;
    expect(answer.taints.map((t) => `${t.cluster} ${t.key}:${t.effect} +${(Date.parse(t.at) - Date.parse(answer.at)) / 1000}s`).sort()).toEqual([
      'm1 cluster.karmada.io/not-ready:PreferNoExecute +1s',
      'm1 cluster.karmada.io/unreachable:NoExecute +20s',
      'm2 cluster.karmada.io/not-ready:PreferNoExecute +1s',
      'm2 cluster.karmada.io/unreachable:NoExecute +20s',
    ]);
    expect(answer.evictions.map((e) => key(e, e.cluster)).sort()).toEqual(['m1|divided', 'm1|pair', 'm1|plain', 'm1|prefer', 'm2|pair', 'm2|patient']);
    expect(answer.blocked.map((e) => key(e, e.cluster))).toEqual(['m1|stuck']);
    expect(answer.tolerated.map((e) => key(e, e.cluster))).toEqual(['m1|tolerant']);
    expect(answer.fleet).toMatchObject({ total: 5, unhealthy: 2, tier: 'primary', rate: 2 });
    expect(answer.heldBy).toBeNull();

    // The real failure, at the same moment.
    for (const name of ['m1', 'm2']) await reportClusterStatus(m.plane, name, { conditions: [{ type: 'Ready', status: 'False' }] });
    for (let i = 0; i < 60; i++) await loopSecond(m, state);

    const rows = (await m.ledger.scanEvictions({})).map((r) => r.record);
    expect(
      rows
        .filter((r) => r.state === 'done')
        .map((r) => `${r.cluster}|${r.name}`)
        .sort(),
    ).toEqual(answer.evictions.map((e) => key(e, e.cluster)).sort());
    expect(rows.filter((r) => r.state === 'blocked').map((r) => `${r.cluster}|${r.name}`)).toEqual(answer.blocked.map((e) => key(e, e.cluster)));
    // Every evicted binding ends where the what-if placed it (its last eviction's targets).
    const predicted = new Map(answer.evictions.map((e) => [e.binding.name, e.targets]));
    for (const [name, targets] of predicted) {
      const stored = await m.bindings.get(bindingKey({ kind: 'ResourceBinding', namespace: 'default', name }));
      expect({ name, clusters: stored?.value.spec.clusters }).toEqual({ name, clusters: targets });
    }
    // Slots: the last eviction ran within a second of the predicted ETA (the loop runs in whole seconds).
    const lastRun = Math.max(...rows.filter((r) => r.executedAt).map((r) => Date.parse(r.executedAt!)));
    expect(Math.abs(lastRun - Date.parse(answer.eta!))).toBeLessThanOrEqual(1000);
  });

  it('names an unknown cluster and simulates nothing', async () => {
    const m = memoryPlane();
    await applyTo(m, [cluster('m1')]);
    await expect(whatIfFailure(m.plane, { failClusters: ['m1', 'nope'] })).rejects.toMatchObject({
      status: 400,
      errors: [{ path: 'failClusters[1]', message: 'no cluster named "nope"' }],
    });
  });

  it('says what holds the evictions: the gate, a pause, a halted fleet', async () => {
    const gateOff = memoryPlane({ FAILOVER_ENABLED: 'false' });
    await applyTo(gateOff, [policy, cluster('m1'), cluster('m2'), binding('web', ['m1'])]);
    await reportClusterStatus(gateOff.plane, 'm1', { conditions: [{ type: 'Ready', status: 'True' }] });
    const held = await whatIfFailure(gateOff.plane, { failClusters: ['m1'] });
    expect({ heldBy: held.heldBy, eta: held.eta, evictions: held.evictions.length }).toEqual({ heldBy: 'gate', eta: null, evictions: 1 });

    // Two clusters of two failing: a small fleet over the threshold halts.
    const small = memoryPlane();
    await applyTo(small, [policy, cluster('m1'), cluster('m2'), binding('web', ['m1'])]);
    const halted = await whatIfFailure(small.plane, { failClusters: ['m1', 'm2'], condition: { type: 'Ready', status: 'Unknown' } });
    expect(halted.fleet).toMatchObject({ tier: 'halted', rate: 0 });
    expect(halted.heldBy).toBe('halted');
  });
});
