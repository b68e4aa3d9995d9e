import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments, parseDocuments } from '../../shared/api/decode';
import { applyObjects } from '../../shared/controllers/apply';
import { getCluster, reportClusterStatus } from '../../shared/controllers/clusters';
import { evaluationTargets } from '../../shared/controllers/state/evaluationRequests';
import { evaluateCluster } from '../../shared/controllers/taintEvaluation';
import { deleteTaintPolicy, getTaintPolicy, listTaintPolicies } from '../../shared/controllers/taintPolicies';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * ClusterTaintPolicies of Karmada's shape beside windowed-shape ones, through the controllers on the in-memory
 * ports: apply, reports, evaluations queued by policy changes, events and the API views.
 */

const apply = async (m: MemoryPlane, yaml: string) => applyObjects(m.plane, decodeApplyDocuments(parseDocuments(yaml, 'yaml')));

const cluster = (name: string, taints = '') =>
  `apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: ${name}\n${taints ? `spec:\n  taints:\n${taints}` : ''}`;

/** Karmada's shape: NoExecute at once on Ready False/Unknown, removed on Ready True. */
const karmadaPolicy = (name: string, clusters: string[], extra = '') => `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: ${name}
spec:
  targetClusters:
    clusterNames: [${clusters.join(', ')}]
  addOnConditions:
  - conditionType: Ready
    operator: In
    statusValues: ["False", "Unknown"]
  removeOnConditions:
  - conditionType: Ready
    operator: In
    statusValues: ["True"]
  taints:
  - key: cluster.karmada.io/not-ready
    effect: NoExecute
${extra}`;

/** The windowed shape: the same taint after `seconds` of `type` in `statuses`. */
const seedPolicy = (name: string, clusters: string[], type: string, statuses: string[], seconds: number) => `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: ${name}
spec:
  targetCluster:
    clusterNames: [${clusters.join(', ')}]
  matchConditions:
  - conditionType: ${type}
    operator: In
    statusValues: [${statuses.map((s) => `"${s}"`).join(', ')}]
  taintsToAdd:
  - key: cluster.karmada.io/not-ready
    effect: NoExecute
    addOnMatchSeconds: ${seconds}
    removeOnMismatchSeconds: ${seconds}
`;

const report = (m: MemoryPlane, name: string, conditions: Record<string, 'True' | 'False' | 'Unknown'>) =>
  reportClusterStatus(m.plane, name, { conditions: Object.entries(conditions).map(([type, status]) => ({ type, status })) });

/** Runs the evaluations queued so far (policy changes, deadlines due by now), as the queue trigger does. */
async function drain(m: MemoryPlane): Promise<void> {
  for (const { message } of m.evaluations.takeVisible()) for (const cluster of evaluationTargets(message)) await evaluateCluster(m.plane, cluster);
}

const holders = async (m: MemoryPlane, name: string) => (await getCluster(m.plane, name))!.status.taintHolders;
const taintEvents = async (m: MemoryPlane, kind: string, name: string) =>
  (await m.events.list({ kind, name, limit: 100 })).filter((e) => e.reason === 'TaintAdded' || e.reason === 'TaintRemoved');

describe('a Karmada-shape ClusterTaintPolicy on the controllers', () => {
  it('taints at once and removes at once, and the events and GET say which shape and which rule acted', async () => {
    const m = memoryPlane();
    await apply(m, `${cluster('m1')}---\n${cluster('m2')}---\n${karmadaPolicy('detect-not-ready', ['m1'])}`);
    await drain(m);

    await report(m, 'm1', { Ready: 'False' });
    await report(m, 'm2', { Ready: 'False' });
    expect(await holders(m, 'm1')).toEqual([{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', policies: ['detect-not-ready'], manual: false }]);
    expect(await holders(m, 'm2')).toEqual([]);
    expect(m.taintManager.messages().map((s) => s.message)).toEqual([{ cluster: 'm1', reason: 'taints-changed' }]);

    m.clock.advance(5000);
    await report(m, 'm1', { Ready: 'True' });
    expect(await holders(m, 'm1')).toEqual([]);

    const events = await taintEvents(m, 'Cluster', 'm1');
    expect(events.map((e) => e.message)).toEqual([
      'added taint cluster.karmada.io/not-ready:NoExecute by ClusterTaintPolicy detect-not-ready (Karmada shape: addOnConditions matched; conditions: Ready=False)',
      'removed taint cluster.karmada.io/not-ready:NoExecute by ClusterTaintPolicy detect-not-ready (Karmada shape: removeOnConditions matched; conditions: Ready=True)',
    ]);
    expect(events[0].details).toMatchObject({ policy: 'detect-not-ready', shape: 'karmada', rule: 'addOnConditions', reason: 'addOnConditions matched' });

    const policy = await getTaintPolicy(m.plane, 'detect-not-ready');
    expect(policy?.status.shape).toBe('karmada');
    expect(policy?.status.rules).toContain('Karmada shape');
    expect(policy?.status.recentActions).toEqual([
      {
        time: '2026-01-01T00:00:00.000Z',
        cluster: 'm1',
        action: 'added',
        taint: { key: 'cluster.karmada.io/not-ready', effect: 'NoExecute' },
        shape: 'karmada',
        rule: 'addOnConditions',
        reason: 'addOnConditions matched',
      },
      {
        time: '2026-01-01T00:00:05.000Z',
        cluster: 'm1',
        action: 'removed',
        taint: { key: 'cluster.karmada.io/not-ready', effect: 'NoExecute' },
        shape: 'karmada',
        rule: 'removeOnConditions',
        reason: 'removeOnConditions matched',
      },
    ]);
    // GET output applies again unchanged (status is ignored).
    expect(await applyObjects(m.plane, decodeApplyDocuments([policy]))).toEqual([
      { kind: 'ClusterTaintPolicy', name: 'detect-not-ready', action: 'unchanged' },
    ]);
  });

  it('a new policy acts on clusters that already match, through the evaluations it queues', async () => {
    const m = memoryPlane();
    await apply(m, cluster('m1'));
    await report(m, 'm1', { Ready: 'Unknown' });
    await apply(m, karmadaPolicy('late', ['m1']));
    expect(await holders(m, 'm1')).toEqual([]);
    await drain(m);
    expect((await holders(m, 'm1')).map((h) => h.policies)).toEqual([['late']]);
  });

  it('lists each policy with its shape', async () => {
    const m = memoryPlane();
    await apply(m, `${karmadaPolicy('k', ['m1'])}---\n${seedPolicy('s', ['m1'], 'Ready', ['False'], 5)}`);
    expect((await listTaintPolicies(m.plane)).map((p) => [p.metadata.name, p.status.shape])).toEqual([
      ['k', 'karmada'],
      ['s', 'seed'],
    ]);
  });
});

describe('deleting a policy', () => {
  it("keeps a Karmada-shape policy's taints (a person removes them by applying the Cluster without them); releases a windowed-shape policy's", async () => {
    const m = memoryPlane();
    await apply(m, `${cluster('k1')}---\n${cluster('s1')}---\n${karmadaPolicy('k', ['k1'])}---\n${seedPolicy('s', ['s1'], 'Ready', ['False'], 1)}`);
    await drain(m);
    await report(m, 'k1', { Ready: 'False' });
    await report(m, 's1', { Ready: 'False' });
    m.clock.advance(1000);
    await drain(m);
    expect((await holders(m, 'k1')).map((h) => h.policies)).toEqual([['k']]);
    expect((await holders(m, 's1')).map((h) => h.policies)).toEqual([['s']]);

    expect(await deleteTaintPolicy(m.plane, 'k')).toBe(true);
    expect(await deleteTaintPolicy(m.plane, 's')).toBe(true);
    await drain(m);
    expect(await holders(m, 'k1')).toEqual([{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', policies: [], manual: false }]);
    expect((await m.clusters.get('k1'))?.value.taints[0].leftBy).toBe('k');
    expect(await holders(m, 's1')).toEqual([]);
    const deleted = (await m.events.list({ kind: 'ClusterTaintPolicy', limit: 100 })).filter((e) => e.reason === 'Deleted').map((e) => [e.name, e.message]);
    expect(deleted).toEqual([
      ['k', 'policy deleted; its taints stay on the clusters (Karmada shape)'],
      ['s', 'policy deleted; taints only it held are released (windowed shape)'],
    ]);

    // Recovery does not remove the left taint: nothing that applies holds it, and nothing removes it...
    await report(m, 'k1', { Ready: 'True' });
    expect(await holders(m, 'k1')).toHaveLength(1);
    // ...until another Karmada-shape policy's removeOnConditions match, or a person drops it: applying the
    // Cluster without it.
    await apply(m, cluster('k1', '  - {key: cluster.karmada.io/not-ready, effect: NoExecute}\n'));
    expect(await holders(m, 'k1')).toEqual([{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', policies: [], manual: true }]);
    await apply(m, cluster('k1'));
    expect(await holders(m, 'k1')).toEqual([]);
    // Left again, then dropped with one apply.
    await apply(m, karmadaPolicy('k2', ['k1']));
    await report(m, 'k1', { Ready: 'False' });
    await deleteTaintPolicy(m.plane, 'k2');
    await drain(m);
    expect(await holders(m, 'k1')).toHaveLength(1);
    await apply(m, cluster('k1'));
    expect(await holders(m, 'k1')).toEqual([]);
  });

  it('a left taint is removed by another Karmada-shape policy that lists its key and effect', async () => {
    const m = memoryPlane();
    await apply(m, `${cluster('k1')}---\n${karmadaPolicy('k', ['k1'])}`);
    await report(m, 'k1', { Ready: 'False' });
    await deleteTaintPolicy(m.plane, 'k');
    await drain(m);
    await apply(m, karmadaPolicy('cleaner', ['k1']));
    await drain(m);
    expect(await holders(m, 'k1')).toHaveLength(1);
    m.clock.advance(1000);
    await report(m, 'k1', { Ready: 'True' });
    expect(await holders(m, 'k1')).toEqual([]);
    expect((await taintEvents(m, 'Cluster', 'k1')).map((e) => e.message).at(-1)).toBe(
      'removed taint cluster.karmada.io/not-ready:NoExecute by ClusterTaintPolicy cleaner (Karmada shape: removeOnConditions matched; conditions: Ready=True)',
    );
  });
});

describe('both shapes and people on one taint', () => {
  it('a Karmada-shape removal does not override a windowed-shape policy that still holds the taint; the taint goes when that one lets go', async () => {
    const m = memoryPlane();
    await apply(m, `${cluster('m1')}---\n${karmadaPolicy('k', ['m1'])}---\n${seedPolicy('s', ['m1'], 'Disk', ['False'], 2)}`);
    await drain(m);
    await report(m, 'm1', { Ready: 'False', Disk: 'True' });
    expect((await holders(m, 'm1')).map((h) => h.policies)).toEqual([['k']]);
    m.clock.advance(1000);
    await report(m, 'm1', { Disk: 'False' });
    expect((await holders(m, 'm1')).map((h) => h.policies)).toEqual([['k', 's']]);
    m.clock.advance(1000);
    await report(m, 'm1', { Ready: 'True' });
    expect((await holders(m, 'm1')).map((h) => h.policies)).toEqual([['s']]);
    m.clock.advance(1000);
    await report(m, 'm1', { Disk: 'True' });
    expect((await holders(m, 'm1')).map((h) => h.policies)).toEqual([['s']]);
    m.clock.advance(2000);
    await drain(m);
    expect(await holders(m, 'm1')).toEqual([]);
    expect((await taintEvents(m, 'Cluster', 'm1')).map((e) => e.message)).toEqual([
      'added taint cluster.karmada.io/not-ready:NoExecute by ClusterTaintPolicy k (Karmada shape: addOnConditions matched; conditions: Ready=False)',
      "removed taint cluster.karmada.io/not-ready:NoExecute by ClusterTaintPolicy s (windowed shape: the policy's conditions did not match for 2s; conditions: Disk=True)",
    ]);
    expect((await getTaintPolicy(m.plane, 's'))?.status.recentActions.map((a) => [a.action, a.shape, a.rule])).toEqual([
      ['removed', 'seed', 'removeOnMismatchSeconds'],
    ]);
  });

  it('a manual taint is never removed by a Karmada-shape policy', async () => {
    const m = memoryPlane();
    await apply(m, `${cluster('m1', '  - {key: cluster.karmada.io/not-ready, effect: NoExecute}\n')}---\n${karmadaPolicy('k', ['m1'])}`);
    await drain(m);
    await report(m, 'm1', { Ready: 'False' });
    expect(await holders(m, 'm1')).toEqual([{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', policies: ['k'], manual: true }]);
    m.clock.advance(1000);
    await report(m, 'm1', { Ready: 'True' });
    expect(await holders(m, 'm1')).toEqual([{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute', policies: [], manual: true }]);
    expect(await taintEvents(m, 'Cluster', 'm1')).toEqual([]);
  });

  it('a policy that changes shape: its windowed-shape hold is released, then the Karmada rules decide', async () => {
    const m = memoryPlane();
    await apply(m, `${cluster('m1')}---\n${seedPolicy('p', ['m1'], 'Ready', ['False'], 1)}`);
    await drain(m);
    await report(m, 'm1', { Ready: 'False' });
    m.clock.advance(1000);
    await drain(m);
    expect((await holders(m, 'm1')).map((h) => h.policies)).toEqual([['p']]);
    await apply(m, karmadaPolicy('p', ['m1']));
    await drain(m);
    // Released as a windowed-shape hold and held again as a Karmada-shape one, in one write: the taint stays.
    expect((await holders(m, 'm1')).map((h) => h.policies)).toEqual([['p']]);
    expect((await m.clusters.get('m1'))?.value.taints[0].karmadaOwners).toEqual(['p']);
    expect((await taintEvents(m, 'Cluster', 'm1')).map((e) => e.reason)).toEqual(['TaintAdded']);
  });
});
