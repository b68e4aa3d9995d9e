import { describe, expect, it } from 'vitest';
import { decodeApplyDocuments, parseDocuments } from '../../shared/api/decode';
import type { Toleration } from '../../shared/api/resources';
import type { PlacementFacts } from '../../shared/failover/bindingModel';
import { decideEviction, isFaultyTaint } from '../../shared/failover/evictionDecision';
import type { ClusterFacts, TaintPolicy } from '../../shared/failover/model';
import { preScheduleCheck, softTaintReason, unschedulableReason } from '../../shared/failover/precheck';
import { SchedulableCluster, schedule, ScheduleInput } from '../../shared/failover/scheduler';
import { whatIf } from '../../shared/failover/whatIf';

/**
 * PreferNoSchedule, Kubernetes' soft NoSchedule: a cluster with an untolerated PreferNoSchedule taint ("soft")
 * is used only when the others cannot satisfy the placement, never evicts, and never makes a cluster faulty.
 */

const clean = (name: string): SchedulableCluster => ({ name, labels: {}, taints: [] });
const soft = (name: string, key = 'maintenance-soon'): SchedulableCluster => ({ name, labels: {}, taints: [{ key, effect: 'PreferNoSchedule' }] });
const tainted = (name: string, effect: 'NoSchedule' | 'NoExecute' | 'PreferNoExecute', extra: SchedulableCluster['taints'] = []): SchedulableCluster => ({
  name,
  labels: {},
  taints: [...extra, { key: 'hard', effect }],
});
const duplicated = (spread?: { minGroups?: number; maxGroups?: number }, clusterTolerations?: Toleration[]): ScheduleInput['placement'] => ({
  replicaScheduling: { replicaSchedulingType: 'Duplicated' },
  ...(spread ? { spreadConstraints: [spread] } : {}),
  ...(clusterTolerations ? { clusterTolerations } : {}),
});
const divided = (spread?: { minGroups?: number; maxGroups?: number }, weights?: Record<string, number>): ScheduleInput['placement'] => ({
  replicaScheduling: {
    replicaSchedulingType: 'Divided',
    ...(weights
      ? {
          replicaDivisionPreference: 'Weighted' as const,
          weightPreference: { staticWeightList: Object.entries(weights).map(([name, weight]) => ({ targetCluster: { clusterNames: [name] }, weight })) },
        }
      : {}),
  },
  ...(spread ? { spreadConstraints: [spread] } : {}),
});

describe('the scheduler places on a soft cluster only when nothing else fits', () => {
  const cases: Array<{
    name: string;
    input: Omit<ScheduleInput, 'current'> & { current?: ScheduleInput['current'] };
    want: Array<[string, number]> | null;
    rejected?: Record<string, string>;
  }> = [
    {
      name: 'Duplicated, no spread: every clean cluster, not the soft one',
      input: { replicas: 2, placement: duplicated(), clusters: [soft('a'), clean('b'), clean('c')] },
      want: [
        ['b', 2],
        ['c', 2],
      ],
    },
    {
      name: 'Duplicated, only soft clusters fit: one of them (the minimum), in name order',
      input: { replicas: 2, placement: duplicated(), clusters: [soft('b'), soft('a'), tainted('c', 'NoSchedule')] },
      want: [['a', 2]],
      rejected: { c: 'has untolerated taint hard:NoSchedule' },
    },
    {
      name: 'Duplicated, minGroups 2 with one clean cluster: a soft one makes up the minimum',
      input: { replicas: 1, placement: duplicated({ minGroups: 2, maxGroups: 3 }), clusters: [soft('a'), clean('b'), soft('c')] },
      want: [
        ['b', 1],
        ['a', 1],
      ],
    },
    {
      name: 'Duplicated, maxGroups is not filled with soft clusters',
      input: { replicas: 1, placement: duplicated({ maxGroups: 3 }), clusters: [soft('a'), clean('b'), soft('c')] },
      want: [['b', 1]],
    },
    {
      name: 'Duplicated, minGroups 3 with one clean and one soft: no fit (the soft one counted)',
      input: { replicas: 1, placement: duplicated({ minGroups: 3 }), clusters: [soft('a'), clean('b'), tainted('c', 'NoExecute')] },
      want: null,
    },
    {
      name: 'a toleration with effect PreferNoSchedule tolerates it: the cluster is clean',
      input: {
        replicas: 1,
        placement: duplicated(undefined, [{ key: 'maintenance-soon', operator: 'Exists', effect: 'PreferNoSchedule' }]),
        clusters: [soft('a'), clean('b')],
      },
      want: [
        ['a', 1],
        ['b', 1],
      ],
    },
    {
      name: 'a toleration with no effect tolerates it',
      input: { replicas: 1, placement: duplicated(undefined, [{ key: 'maintenance-soon', operator: 'Exists' }]), clusters: [soft('a'), clean('b')] },
      want: [
        ['a', 1],
        ['b', 1],
      ],
    },
    {
      name: 'an empty key with Exists and no effect tolerates every taint, this one too',
      input: { replicas: 1, placement: duplicated(undefined, [{ operator: 'Exists' }]), clusters: [soft('a'), clean('b')] },
      want: [
        ['a', 1],
        ['b', 1],
      ],
    },
    {
      name: 'a toleration with effect NoSchedule does not tolerate PreferNoSchedule',
      input: {
        replicas: 1,
        placement: duplicated(undefined, [{ key: 'maintenance-soon', operator: 'Exists', effect: 'NoSchedule' }]),
        clusters: [soft('a'), clean('b')],
      },
      want: [['b', 1]],
    },
    {
      name: 'a toleration with a different key does not tolerate it',
      input: { replicas: 1, placement: duplicated(undefined, [{ key: 'other', operator: 'Exists' }]), clusters: [soft('a'), clean('b')] },
      want: [['b', 1]],
    },
    {
      name: 'Equal with the wrong value does not tolerate it',
      input: {
        replicas: 1,
        placement: duplicated(undefined, [{ key: 'k', operator: 'Equal', value: 'y' }]),
        clusters: [{ name: 'a', labels: {}, taints: [{ key: 'k', value: 'x', effect: 'PreferNoSchedule' }] }, clean('b')],
      },
      want: [['b', 1]],
    },
    {
      name: 'a cluster already placed is kept despite its soft taint (it evicts nothing)',
      input: { replicas: 1, placement: duplicated(), current: [{ name: 'a', replicas: 1 }], clusters: [soft('a'), clean('b')] },
      want: [
        ['a', 1],
        ['b', 1],
      ],
    },
    {
      name: 'a hard taint beside the soft one still rejects the cluster',
      input: { replicas: 1, placement: duplicated(), clusters: [tainted('a', 'NoExecute', [{ key: 's', effect: 'PreferNoSchedule' }]), soft('b')] },
      want: [['b', 1]],
    },
    {
      name: 'the cluster affinity still rules: a soft cluster outside it is not used',
      input: {
        replicas: 1,
        placement: { ...duplicated(), clusterAffinity: { clusterNames: ['b'] } },
        clusters: [soft('a'), tainted('b', 'NoSchedule')],
      },
      want: null,
      rejected: { a: 'does not match the cluster affinity', b: 'has untolerated taint hard:NoSchedule' },
    },
    {
      name: 'PreferNoExecute is still a hard no, beside soft clusters',
      input: { replicas: 1, placement: duplicated(), clusters: [tainted('a', 'PreferNoExecute'), soft('b')] },
      want: [['b', 1]],
    },
    {
      name: 'Divided: the replicas go to the clean clusters only',
      input: { replicas: 4, placement: divided(), clusters: [soft('a'), clean('b'), clean('c')] },
      want: [
        ['b', 2],
        ['c', 2],
      ],
    },
    {
      name: 'Divided, only soft clusters fit: all replicas on one of them',
      input: { replicas: 3, placement: divided(), clusters: [soft('a'), soft('b')] },
      want: [['a', 3]],
    },
    {
      name: 'Divided, minGroups 2 with one clean cluster: one soft cluster joins and the replicas are divided over both',
      input: { replicas: 4, placement: divided({ minGroups: 2 }), clusters: [soft('a'), soft('b'), clean('c')] },
      want: [
        ['a', 2],
        ['c', 2],
      ],
    },
    {
      name: 'Divided, static weights give no clean cluster a weight: the weighted soft cluster takes them',
      input: { replicas: 3, placement: divided(undefined, { a: 1 }), clusters: [soft('a'), clean('b')] },
      want: [['a', 3]],
    },
    {
      name: 'Divided, static weights: a weighted clean cluster is enough, the soft one gets nothing',
      input: { replicas: 3, placement: divided(undefined, { a: 5, b: 1 }), clusters: [soft('a'), clean('b')] },
      want: [['b', 3]],
    },
    {
      name: 'Divided, maxGroups caps the soft clusters too',
      input: { replicas: 2, placement: divided({ minGroups: 3, maxGroups: 2 }), clusters: [soft('a'), soft('b'), clean('c')] },
      want: null,
    },
    {
      name: 'Divided, a soft cluster already placed keeps its share when a clean one joins',
      input: { replicas: 4, placement: divided(), current: [{ name: 'a', replicas: 4 }], clusters: [soft('a'), clean('b')] },
      want: [
        ['a', 2],
        ['b', 2],
      ],
    },
  ];

  it.each(cases)('$name', ({ input, want, rejected }) => {
    const result = schedule({ current: [], ...input });
    if (want === null) expect(result.ok).toBe(false);
    else expect(result).toEqual({ ok: true, clusters: want.map(([name, replicas]) => ({ name, replicas })) });
    if (rejected) {
      const check = result.ok ? schedule({ current: [], ...input, clusters: input.clusters.filter((c) => c.name in rejected) }) : result;
      expect(check.ok === false && check.rejected).toEqual(rejected);
    }
    // A soft cluster is never named as rejected.
    if (!result.ok) for (const name of Object.keys(result.rejected)) expect(result.rejected[name]).not.toContain('PreferNoSchedule');
  });
});

describe('unschedulableReason and softTaintReason', () => {
  const cases: Array<[string, SchedulableCluster, Toleration[], string | undefined, string | undefined]> = [
    ['a soft cluster is schedulable, softly', soft('a'), [], undefined, 'has untolerated taint maintenance-soon:PreferNoSchedule'],
    [
      'tolerated (effect PreferNoSchedule): clean',
      soft('a'),
      [{ key: 'maintenance-soon', operator: 'Exists', effect: 'PreferNoSchedule' }],
      undefined,
      undefined,
    ],
    ['tolerated (no effect): clean', soft('a'), [{ key: 'maintenance-soon', operator: 'Exists' }], undefined, undefined],
    ['a NoSchedule toleration: still soft', soft('a'), [{ key: 'maintenance-soon', operator: 'Exists', effect: 'NoSchedule' }], undefined, expect.any(String)],
    ['no taint: clean', clean('a'), [], undefined, undefined],
    ['NoSchedule: hard', tainted('a', 'NoSchedule'), [], 'has untolerated taint hard:NoSchedule', undefined],
  ];
  it.each(cases)('%s', (_name, cluster, tolerations, hard, softly) => {
    expect(unschedulableReason(cluster, tolerations)).toEqual(hard);
    expect(softTaintReason(cluster, tolerations)).toEqual(softly);
  });
});

describe('the pre-scheduling check: a soft cluster is somewhere to go', () => {
  const cases: Array<{ name: string; input: Parameters<typeof preScheduleCheck>[0]; want: ReturnType<typeof preScheduleCheck> }> = [
    {
      name: 'Duplicated: the only other cluster is soft',
      input: { placement: duplicated(), placedOn: ['m1'], evictFrom: 'm1', clusters: [clean('m1'), soft('m2')] },
      want: { ok: true, candidates: ['m2'] },
    },
    {
      name: 'clean candidates come first',
      input: { placement: duplicated(), placedOn: ['m1'], evictFrom: 'm1', clusters: [clean('m1'), soft('m2'), clean('m3')] },
      want: { ok: true, candidates: ['m3', 'm2'] },
    },
    {
      name: 'Duplicated minGroups 2: one clean and one soft are enough',
      input: { placement: duplicated({ minGroups: 2 }), placedOn: ['m1'], evictFrom: 'm1', clusters: [clean('m1'), soft('m2'), clean('m3')] },
      want: { ok: true, candidates: ['m3', 'm2'] },
    },
    {
      name: 'Divided: only soft clusters left',
      input: { placement: divided(), placedOn: ['m1'], evictFrom: 'm1', clusters: [clean('m1'), soft('m2')] },
      want: { ok: true, candidates: ['m2'] },
    },
    {
      name: 'a soft cluster with a hard taint too is no place to go',
      input: {
        placement: duplicated(),
        placedOn: ['m1'],
        evictFrom: 'm1',
        clusters: [clean('m1'), tainted('m2', 'NoSchedule', [{ key: 's', effect: 'PreferNoSchedule' }])],
      },
      want: {
        ok: false,
        reason: 'Duplicated: 0 other cluster(s) match the affinity and accept the workload; 1 needed (m2 has untolerated taint hard:NoSchedule)',
      },
    },
  ];
  it.each(cases)('$name', ({ input, want }) => {
    expect(preScheduleCheck(input)).toEqual(want);
  });
});

describe('a PreferNoSchedule taint never evicts and is not faulty', () => {
  const taint = { key: 'maintenance-soon', effect: 'PreferNoSchedule' as const, timeAdded: '2026-01-01T00:00:00.000Z' };
  const cases: Array<[string, Parameters<typeof decideEviction>[1], Parameters<typeof decideEviction>[2]]> = [
    ['no toleration, no failover.cluster', [], undefined],
    ['no toleration, failover.cluster with 0 s', [], { purgeMode: 'Directly', tolerationSeconds: 0 }],
    ['a toleration for a time', [{ key: 'maintenance-soon', operator: 'Exists', tolerationSeconds: 0 }], { purgeMode: 'Gracefully', tolerationSeconds: 0 }],
  ];
  it.each(cases)('%s: stays', (_name, tolerations, failoverCluster) => {
    expect(decideEviction([taint], tolerations, failoverCluster, new Date('2026-01-02T00:00:00.000Z')).evict).toBe(false);
  });
  it('is not a faulty taint (fleet health, the taint manager and the pacer ignore it)', () => {
    expect(isFaultyTaint(taint)).toBe(false);
  });
});

describe('validation at the edge accepts PreferNoSchedule', () => {
  const documents: Array<[string, string]> = [
    [
      'a windowed-shape ClusterTaintPolicy adds it (taintsToAdd[].effect)',
      `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: soft
spec:
  matchConditions:
  - conditionType: DiskPressure
    operator: In
    statusValues: ["True"]
  taintsToAdd:
  - key: disk-pressure
    effect: PreferNoSchedule
`,
    ],
    [
      'a Karmada-shape ClusterTaintPolicy adds it (taints[].effect)',
      `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: soft
spec:
  addOnConditions:
  - conditionType: DiskPressure
    operator: In
    statusValues: ["True"]
  taints:
  - key: disk-pressure
    effect: PreferNoSchedule
`,
    ],
    [
      'a Cluster carries it (spec.taints[].effect)',
      `apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: m1\nspec:\n  taints:\n  - {key: k, effect: PreferNoSchedule}\n`,
    ],
    [
      'a PropagationPolicy tolerates it (clusterTolerations[].effect)',
      `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    clusterTolerations:
    - {key: disk-pressure, operator: Exists, effect: PreferNoSchedule}
`,
    ],
  ];
  it.each(documents)('%s', (_name, yaml) => {
    expect(decodeApplyDocuments(parseDocuments(yaml, 'yaml'))).toHaveLength(1);
  });
});

describe('what-if: a policy that only adds PreferNoSchedule evicts nothing', () => {
  const facts = (name: string): ClusterFacts => ({
    name,
    labels: {},
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2025-12-31T00:00:00.000Z' }],
    taints: [],
    policyWindows: {},
  });
  const policy: TaintPolicy = {
    name: 'soft-not-ready',
    matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False'] }],
    taintsToAdd: [{ key: 'not-ready', effect: 'PreferNoSchedule', addOnMatchSeconds: 30, removeOnMismatchSeconds: 60 }],
  };
  const placed: PlacementFacts = {
    kind: 'ResourceBinding',
    namespace: 'ns',
    name: 'web',
    cluster: 'a',
    resourceKind: 'apps/v1/Deployment',
    replicas: 1,
    tolerations: [],
    failoverCluster: { purgeMode: 'Directly', tolerationSeconds: 0 },
    rev: 1,
  };
  it('the taint lands, the cluster is not faulty and the binding stays', () => {
    const now = new Date('2026-01-01T00:00:00.000Z');
    const result = whatIf({
      now,
      failClusters: ['a'],
      condition: { type: 'Ready', status: 'False' },
      clusters: [facts('a'), facts('b')],
      policies: [policy],
      placements: [placed],
      bindings: new Map([['rb:ns:web', { replicas: 1, clusters: [{ name: 'a', replicas: 1 }] }]]),
      decided: new Map(),
      waiting: [],
      rates: { resourceEvictionRate: 1, secondaryResourceEvictionRate: 0.1, unhealthyClusterThreshold: 0.55, largeClusterNumThreshold: 10 },
      switches: { failoverEnabled: true, paused: false, nextSlotAt: 0, earliestLeadMs: 1500 },
    });
    expect(result.taints.map((t) => [t.cluster, `${t.key}:${t.effect}`, t.at])).toEqual([['a', 'not-ready:PreferNoSchedule', '2026-01-01T00:00:30.000Z']]);
    expect(result.fleet).toMatchObject({ unhealthy: 1, tier: 'primary' });
    expect(result.counts).toEqual({ evictions: 0, blocked: 0, tolerated: 0, alreadyDecided: 0 });
    expect(result.untainted).toEqual([
      {
        cluster: 'a',
        why: 'no ClusterTaintPolicy puts a NoExecute or PreferNoExecute taint on it for Ready=False (it gets only taints that steer new placements and evict nothing: not-ready:PreferNoSchedule)',
      },
    ]);
  });
});

describe('a blocked eviction says why each cluster of the affinity is not a place to go', () => {
  it('names the cluster holding the old copy of an earlier eviction, and how to confirm it by hand', () => {
    const result = preScheduleCheck({
      placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } },
      placedOn: ['m2'],
      evictFrom: 'm2',
      clusters: [
        { name: 'm1', labels: {}, taints: [] },
        { name: 'm2', labels: {}, taints: [] },
        { name: 'm3', labels: {}, taints: [] },
      ],
      gracefulEvictionTasks: [{ fromCluster: 'm1', creationTimestamp: '2026-01-01T09:43:00Z' }],
    });
    expect(result).toEqual({
      ok: false,
      reason:
        'Duplicated: 0 other cluster(s) match the affinity and accept the workload; 1 needed (m1 still holds the old copy of an earlier eviction (its graceful-eviction task since 2026-01-01T09:43:00Z stays until the new copy is Healthy or its grace period ends; DELETE .../evictiontasks/m1 confirms it by hand); 1 cluster(s) outside the affinity)',
    });
  });
});
