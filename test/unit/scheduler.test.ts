import { describe, expect, it } from 'vitest';
import { preScheduleCheck } from '../../shared/failover/precheck';
import { divide, SchedulableCluster, schedule } from '../../shared/failover/scheduler';

const healthy = (name: string, labels: Record<string, string> = {}): SchedulableCluster => ({ name, labels, taints: [] });
const failed = (name: string): SchedulableCluster => ({ name, labels: {}, taints: [{ key: 'not-ready', effect: 'NoExecute' }] });
const five = (fail: string[] = []) => ['member1', 'member2', 'member3', 'member4', 'member5'].map((n) => (fail.includes(n) ? failed(n) : healthy(n)));

describe('Duplicated', () => {
  it('seed 001: [member1, member2] with member2 failed becomes [member1, member3]', () => {
    const result = schedule({
      replicas: 2,
      placement: {
        clusterAffinity: { clusterNames: ['member1', 'member2', 'member3', 'member5'] },
        spreadConstraints: [{ maxGroups: 2, minGroups: 2 }],
        replicaScheduling: { replicaSchedulingType: 'Duplicated' },
      },
      current: [{ name: 'member1', replicas: 2 }],
      clusters: five(['member2']),
    });
    expect(result).toEqual({
      ok: true,
      clusters: [
        { name: 'member1', replicas: 2 },
        { name: 'member3', replicas: 2 },
      ],
    });
  });

  it('places a new binding on every matching cluster when no spread constraint limits it', () => {
    const result = schedule({
      replicas: 3,
      placement: { clusterAffinity: { labelSelector: { matchLabels: { env: 'prod' } } } },
      current: [],
      clusters: [healthy('b', { env: 'prod' }), healthy('a', { env: 'prod' }), healthy('c', { env: 'dev' })],
    });
    expect(result).toEqual({
      ok: true,
      clusters: [
        { name: 'a', replicas: 3 },
        { name: 'b', replicas: 3 },
      ],
    });
  });

  it('may choose again a cluster it was evicted from once that cluster is schedulable', () => {
    const result = schedule({
      replicas: 1,
      placement: { spreadConstraints: [{ maxGroups: 2, minGroups: 1 }], clusterAffinity: { clusterNames: ['member1', 'member2'] } },
      current: [{ name: 'member1' }],
      clusters: five(),
    });
    expect(result.ok && result.clusters.map((c) => c.name)).toEqual(['member1', 'member2']);
  });

  it('skips clusters blocked by the eviction history and clusters being deleted', () => {
    const clusters = [...five(), { ...healthy('member6'), deleting: true }];
    const result = schedule({
      replicas: 1,
      placement: { spreadConstraints: [{ maxGroups: 2 }] },
      current: [{ name: 'member1' }],
      clusters,
      blocked: ['member2'],
    });
    expect(result.ok && result.clusters.map((c) => c.name)).toEqual(['member1', 'member3']);
  });

  it('keeps what is placed and names every rejection when nothing fits', () => {
    const result = schedule({
      replicas: 2,
      placement: { clusterAffinity: { clusterNames: ['member1', 'member2'] }, spreadConstraints: [{ minGroups: 2, maxGroups: 2 }] },
      current: [{ name: 'member1', replicas: 2 }],
      clusters: five(['member2']),
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.clusters).toEqual([{ name: 'member1', replicas: 2 }]);
    expect(result.reason).toBe('NoClusterFit');
    expect(result.rejected).toMatchObject({ member2: 'has untolerated taint not-ready:NoExecute', member3: 'does not match the cluster affinity' });
    expect(result.message).toContain('member2 has untolerated taint not-ready:NoExecute');
  });

  it('never empties a placement by itself', () => {
    const result = schedule({
      replicas: 1,
      placement: { clusterAffinity: { clusterNames: ['member9'] } },
      current: [{ name: 'member1', replicas: 1 }],
      clusters: five(),
    });
    expect(result.clusters).toEqual([{ name: 'member1', replicas: 1 }]);
  });
});

describe('Divided', () => {
  const weights = {
    replicaScheduling: {
      replicaSchedulingType: 'Divided' as const,
      replicaDivisionPreference: 'Weighted' as const,
      weightPreference: {
        staticWeightList: [
          { targetCluster: { clusterNames: ['member1'] }, weight: 1 },
          { targetCluster: { clusterNames: ['member2'] }, weight: 2 },
        ],
      },
    },
    clusterAffinity: { clusterNames: ['member1', 'member2'] },
  };
  it('seed 001: weights 1:2 over 3 replicas give member1 1 and member2 2', () => {
    expect(schedule({ replicas: 3, placement: weights, current: [], clusters: five() })).toEqual({
      ok: true,
      clusters: [
        { name: 'member1', replicas: 1 },
        { name: 'member2', replicas: 2 },
      ],
    });
  });
  it('seed 001: member1 failed gives member2 all 3', () => {
    expect(schedule({ replicas: 3, placement: weights, current: [{ name: 'member2', replicas: 2 }], clusters: five(['member1']) })).toEqual({
      ok: true,
      clusters: [{ name: 'member2', replicas: 3 }],
    });
  });
  it('spreads evenly without weights, remainders to the first by name', () => {
    const result = schedule({
      replicas: 5,
      placement: { replicaScheduling: { replicaSchedulingType: 'Divided' }, clusterAffinity: { clusterNames: ['member3', 'member1', 'member2'] } },
      current: [],
      clusters: five(),
    });
    expect(result).toEqual({
      ok: true,
      clusters: [
        { name: 'member1', replicas: 2 },
        { name: 'member2', replicas: 2 },
        { name: 'member3', replicas: 1 },
      ],
    });
  });
  it('has no fit when every weighted cluster failed and none is placed', () => {
    expect(schedule({ replicas: 3, placement: weights, current: [], clusters: five(['member1', 'member2']) }).ok).toBe(false);
  });
  it("keeps a failed cluster the binding is still placed on: its eviction is the taint manager's, paced, with a task", () => {
    expect(schedule({ replicas: 3, placement: weights, current: [{ name: 'member2', replicas: 3 }], clusters: five(['member1', 'member2']) })).toEqual({
      ok: true,
      clusters: [{ name: 'member2', replicas: 3 }],
    });
  });
  it('re-divides after one eviction without dropping a second failed cluster still placed (issue: dropped without a task)', () => {
    const even = {
      replicaScheduling: { replicaSchedulingType: 'Divided' as const },
      clusterAffinity: { clusterNames: ['member1', 'member2', 'member3', 'member4'] },
    };
    // member1 was just evicted; member2 failed too and waits for its own paced eviction.
    const result = schedule({
      replicas: 4,
      placement: even,
      current: [
        { name: 'member2', replicas: 2 },
        { name: 'member3', replicas: 1 },
      ],
      clusters: five(['member1', 'member2']),
    });
    expect(result.ok && result.clusters.map((c) => c.name)).toEqual(['member2', 'member3', 'member4']);
  });
  it('does not choose a failed cluster the binding is not placed on', () => {
    const even = { replicaScheduling: { replicaSchedulingType: 'Divided' as const }, clusterAffinity: { clusterNames: ['member1', 'member2', 'member3'] } };
    const result = schedule({ replicas: 2, placement: even, current: [{ name: 'member3', replicas: 1 }], clusters: five(['member1']) });
    expect(result.ok && result.clusters.map((c) => c.name)).toEqual(['member2', 'member3']);
  });
});

describe('determinism', () => {
  it('gives the same placement whatever the order of the clusters', () => {
    const placement = { spreadConstraints: [{ maxGroups: 3 }] };
    const a = schedule({ replicas: 2, placement, current: [], clusters: five() });
    const b = schedule({ replicas: 2, placement, current: [], clusters: [...five()].reverse() });
    expect(a).toEqual(b);
  });
  it.each([
    [7, [1, 1, 1], [3, 2, 2]],
    [10, [1, 2, 2], [2, 4, 4]],
    [1, [1, 1], [1, 0]],
    [4, [3, 1], [3, 1]],
  ])('divides %i by weights %j as %j', (replicas, ws, expected) => {
    const names = ['a', 'b', 'c'].slice(0, ws.length);
    const result = divide(
      replicas,
      names.map((name, i) => ({ name, weight: ws[i] })),
    );
    expect(names.map((n) => result.find((r) => r.name === n)?.replicas ?? 0)).toEqual(expected);
  });
});

describe('a cluster the binding just left is not chosen straight back', () => {
  const taintAdded = '2026-01-01T00:00:00.000Z';
  const noExecute = (name: string): SchedulableCluster => ({
    name,
    labels: {},
    taints: [{ key: 'cluster.karmada.io/not-ready', effect: 'NoExecute' }],
  });
  const for6s = [{ key: 'cluster.karmada.io/not-ready', operator: 'Exists' as const, effect: 'NoExecute' as const, tolerationSeconds: 6 }];
  const forever = [{ key: 'cluster.karmada.io/not-ready', operator: 'Exists' as const, effect: 'NoExecute' as const }];
  // A binding that must not go back to the cluster it was just evicted from: Duplicated, affinity [c01, c12], one cluster.
  const placement = (tolerations: typeof for6s | typeof forever | [] = for6s) => ({
    clusterAffinity: { clusterNames: ['c01', 'c12'] },
    clusterTolerations: tolerations,
    spreadConstraints: [{ spreadByField: 'cluster' as const, maxGroups: 1 }],
    replicaScheduling: { replicaSchedulingType: 'Duplicated' as const },
  });
  const taskOn = (cluster: string) => [{ fromCluster: cluster, reason: 'TaintUntolerated', producer: 'TaintManager', creationTimestamp: taintAdded }];

  const cases: Array<{
    name: string;
    input: Parameters<typeof schedule>[0];
    clusters: string[] | null;
    rejected?: Record<string, string>;
  }> = [
    {
      name: '(issue) evicted from c01 after a 6 s toleration, its NoExecute taint still there: placed on c12, not back on c01',
      input: { replicas: 1, placement: placement(), current: [], clusters: [noExecute('c01'), healthy('c12')], gracefulEvictionTasks: taskOn('c01') },
      clusters: ['c12'],
    },
    {
      name: '(a) without the task too: a NoExecute taint tolerated only for a time keeps a new placement off',
      input: { replicas: 1, placement: placement(), current: [], clusters: [noExecute('c01'), healthy('c12')] },
      clusters: ['c12'],
      rejected: { c01: 'has taint cluster.karmada.io/not-ready:NoExecute, tolerated only for 6s' },
    },
    {
      name: '(a) tolerationSeconds 0 counts as a time too',
      input: {
        replicas: 1,
        placement: placement([{ ...for6s[0], tolerationSeconds: 0 }]),
        current: [],
        clusters: [noExecute('c01'), healthy('c12')],
      },
      clusters: ['c12'],
    },
    {
      name: '(a) a NoExecute taint tolerated without a time limit does not keep it off',
      input: { replicas: 1, placement: placement(forever), current: [], clusters: [noExecute('c01'), healthy('c12')] },
      clusters: ['c01'],
    },
    {
      name: '(a) the first toleration that tolerates the taint is the one used (forever, then 6 s): schedulable',
      input: { replicas: 1, placement: placement([...forever, ...for6s]), current: [], clusters: [noExecute('c01'), healthy('c12')] },
      clusters: ['c01'],
    },
    {
      name: '(a) only that cluster left: no fit, and the placement is kept as it is',
      input: { replicas: 1, placement: placement(), current: [], clusters: [noExecute('c01'), noExecute('c12')] },
      clusters: null,
      rejected: {
        c01: 'has taint cluster.karmada.io/not-ready:NoExecute, tolerated only for 6s',
        c12: 'has taint cluster.karmada.io/not-ready:NoExecute, tolerated only for 6s',
      },
    },
    {
      name: '(TaintToleration) a cluster still placed is kept whatever its taints; it leaves by its own paced eviction',
      input: { replicas: 1, placement: placement(), current: [{ name: 'c01', replicas: 1 }], clusters: [noExecute('c01'), healthy('c12')] },
      clusters: ['c01'],
    },
    {
      name: '(b) recovered but still in gracefulEvictionTasks: not chosen until the task is dropped',
      input: { replicas: 1, placement: placement(), current: [], clusters: [healthy('c01'), healthy('c12')], gracefulEvictionTasks: taskOn('c01') },
      clusters: ['c12'],
      rejected: { c01: 'is in the process of eviction (it has a graceful-eviction task)' },
    },
    {
      name: '(b) nowhere else to go: no fit rather than back onto the evicting cluster',
      input: {
        replicas: 1,
        placement: placement(),
        current: [],
        clusters: [healthy('c01'), healthy('c12')],
        gracefulEvictionTasks: [...taskOn('c01'), ...taskOn('c12')],
      },
      clusters: null,
      rejected: {
        c01: 'is in the process of eviction (it has a graceful-eviction task)',
        c12: 'is in the process of eviction (it has a graceful-eviction task)',
      },
    },
    {
      name: '(b) once the task is dropped it may be chosen again',
      input: { replicas: 1, placement: placement(), current: [], clusters: [healthy('c01'), healthy('c12')], gracefulEvictionTasks: [] },
      clusters: ['c01'],
    },
    {
      name: '(b) a cluster still placed that also has a task (applied by hand) is kept',
      input: {
        replicas: 1,
        placement: placement(),
        current: [{ name: 'c01', replicas: 1 }],
        clusters: [healthy('c01'), healthy('c12')],
        gracefulEvictionTasks: taskOn('c01'),
      },
      clusters: ['c01'],
    },
    {
      name: '(b) Divided re-division skips the evicting cluster',
      input: {
        replicas: 4,
        placement: { clusterAffinity: { clusterNames: ['c01', 'c02', 'c03'] }, replicaScheduling: { replicaSchedulingType: 'Divided' } },
        current: [{ name: 'c02', replicas: 2 }],
        clusters: [healthy('c01'), healthy('c02'), healthy('c03')],
        gracefulEvictionTasks: taskOn('c01'),
      },
      clusters: ['c02', 'c03'],
    },
  ];
  it.each(cases)('$name', ({ input, clusters, rejected }) => {
    const result = schedule(input);
    if (clusters === null) {
      expect(result.ok).toBe(false);
      expect(result.clusters).toEqual(input.current.map((c) => ({ name: c.name, replicas: c.replicas ?? input.replicas })));
    } else {
      expect(result.ok).toBe(true);
      expect(result.clusters.map((c) => c.name)).toEqual(clusters);
    }
    if (rejected) {
      // A placement that succeeds names no rejections: ask again with only the rejected clusters.
      const check = result.ok ? schedule({ ...input, clusters: input.clusters.filter((c) => c.name in rejected) }) : result;
      expect(check.ok === false && check.rejected).toEqual(rejected);
    }
  });
});

describe('the pre-scheduling check counts what the scheduler would choose', () => {
  const noExecute: SchedulableCluster = { name: 'm2', labels: {}, taints: [{ key: 'k', effect: 'NoExecute' }] };
  const cases: Array<{ name: string; input: Parameters<typeof preScheduleCheck>[0]; ok: boolean }> = [
    {
      name: 'another cluster with a NoExecute taint tolerated only for a time is no place to go',
      input: {
        placement: { clusterTolerations: [{ key: 'k', operator: 'Exists', tolerationSeconds: 60 }] },
        placedOn: ['m1'],
        evictFrom: 'm1',
        clusters: [healthy('m1'), noExecute],
      },
      ok: false,
    },
    {
      name: 'tolerated for ever, it is',
      input: { placement: { clusterTolerations: [{ key: 'k', operator: 'Exists' }] }, placedOn: ['m1'], evictFrom: 'm1', clusters: [healthy('m1'), noExecute] },
      ok: true,
    },
    {
      name: 'a cluster with a graceful-eviction task is no place to go',
      input: {
        placement: undefined,
        placedOn: ['m1'],
        evictFrom: 'm1',
        clusters: [healthy('m1'), healthy('m2')],
        gracefulEvictionTasks: [{ fromCluster: 'm2' }],
      },
      ok: false,
    },
    {
      name: 'unless the binding is still placed on it (Divided keeps it)',
      input: {
        placement: { replicaScheduling: { replicaSchedulingType: 'Divided' } },
        placedOn: ['m1', 'm2'],
        evictFrom: 'm1',
        clusters: [healthy('m1'), healthy('m2')],
        gracefulEvictionTasks: [{ fromCluster: 'm2' }],
      },
      ok: true,
    },
  ];
  it.each(cases)('$name', ({ input, ok }) => {
    expect(preScheduleCheck(input).ok).toBe(ok);
  });
});
