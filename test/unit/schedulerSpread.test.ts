import { describe, expect, it } from 'vitest';
import type { Placement } from '../../shared/api/resources';
import { byFewestPlacements, SchedulableCluster, schedule, ScheduleInput, spreadCandidates } from '../../shared/failover/scheduler';

/**
 * The spread rule (pure): a cluster to add is the feasible one with the fewest placements, ties by name.
 * Clusters already placed stay; soft (PreferNoSchedule) clusters still come last.
 */
const healthy = (name: string): SchedulableCluster => ({ name, labels: {}, taints: [] });
const failed = (name: string): SchedulableCluster => ({ name, labels: {}, taints: [{ key: 'not-ready', effect: 'NoExecute' }] });
const soft = (name: string): SchedulableCluster => ({ name, labels: {}, taints: [{ key: 'busy', effect: 'PreferNoSchedule' }] });
const counts = (entries: Record<string, number>) => new Map(Object.entries(entries));

const oneOf = (names: string[], type: 'Duplicated' | 'Divided' = 'Duplicated'): Placement => ({
  clusterAffinity: { clusterNames: names },
  spreadConstraints: [{ spreadByField: 'cluster', maxGroups: 1, minGroups: 1 }],
  replicaScheduling: { replicaSchedulingType: type },
});

describe('byFewestPlacements', () => {
  const cases: Array<{ name: string; names: string[]; counts?: Record<string, number>; want: string[] }> = [
    { name: 'no counts: name order', names: ['m3', 'm2'], want: ['m2', 'm3'] },
    { name: 'fewest first', names: ['m2', 'm3'], counts: { m2: 5, m3: 1 }, want: ['m3', 'm2'] },
    { name: 'ties by name', names: ['m3', 'm2', 'm4'], counts: { m2: 2, m3: 2, m4: 7 }, want: ['m2', 'm3', 'm4'] },
    { name: 'a cluster not counted has none', names: ['m2', 'm3'], counts: { m2: 1 }, want: ['m3', 'm2'] },
  ];
  it.each(cases)('$name', ({ names, counts: given, want }) => expect(byFewestPlacements(names, given ? counts(given) : undefined)).toEqual(want));
});

describe('schedule with placement counts', () => {
  const fleet = [failed('member1'), healthy('member2'), healthy('member3')];
  const cases: Array<{ name: string; input: ScheduleInput; want: Array<{ name: string; replicas: number }> }> = [
    {
      name: 'Duplicated, one of two: the one with fewer placements',
      input: {
        replicas: 2,
        placement: oneOf(['member1', 'member2', 'member3']),
        current: [],
        clusters: fleet,
        placementCounts: counts({ member2: 4, member3: 3 }),
      },
      want: [{ name: 'member3', replicas: 2 }],
    },
    {
      name: 'Duplicated, a tie: by name',
      input: {
        replicas: 2,
        placement: oneOf(['member1', 'member2', 'member3']),
        current: [],
        clusters: fleet,
        placementCounts: counts({ member2: 3, member3: 3 }),
      },
      want: [{ name: 'member2', replicas: 2 }],
    },
    {
      name: 'Duplicated, no counts: by name, as before',
      input: { replicas: 2, placement: oneOf(['member1', 'member2', 'member3']), current: [], clusters: fleet },
      want: [{ name: 'member2', replicas: 2 }],
    },
    {
      name: 'Duplicated, two of three: the two with fewest, listed by name after the ones kept',
      input: {
        replicas: 1,
        placement: { spreadConstraints: [{ maxGroups: 3, minGroups: 3 }] },
        current: [{ name: 'd', replicas: 1 }],
        clusters: ['a', 'b', 'c', 'd'].map(healthy),
        placementCounts: counts({ a: 9, b: 2, c: 1, d: 50 }),
      },
      want: [
        { name: 'd', replicas: 1 },
        { name: 'b', replicas: 1 },
        { name: 'c', replicas: 1 },
      ],
    },
    {
      name: 'a cluster already placed stays, however many it has',
      input: {
        replicas: 2,
        placement: oneOf(['member2', 'member3']),
        current: [{ name: 'member2', replicas: 2 }],
        clusters: fleet,
        placementCounts: counts({ member2: 100, member3: 0 }),
      },
      want: [{ name: 'member2', replicas: 2 }],
    },
    {
      name: 'Duplicated without a spread constraint: every feasible cluster, counts aside',
      input: { replicas: 1, placement: undefined, current: [], clusters: fleet, placementCounts: counts({ member2: 9 }) },
      want: [
        { name: 'member2', replicas: 1 },
        { name: 'member3', replicas: 1 },
      ],
    },
    {
      name: 'Divided, maxGroups 1: the one with fewer placements takes the replicas',
      input: {
        replicas: 4,
        placement: oneOf(['member2', 'member3'], 'Divided'),
        current: [],
        clusters: fleet,
        placementCounts: counts({ member2: 1, member3: 0 }),
      },
      want: [{ name: 'member3', replicas: 4 }],
    },
    {
      name: 'soft clusters only when needed, then the one with fewer placements',
      input: {
        replicas: 1,
        placement: oneOf(['s1', 's2']),
        current: [],
        clusters: [soft('s1'), soft('s2')],
        placementCounts: counts({ s1: 2, s2: 1 }),
      },
      want: [{ name: 's2', replicas: 1 }],
    },
    {
      name: 'a clean cluster before a soft one with fewer placements',
      input: {
        replicas: 1,
        placement: oneOf(['c1', 's1']),
        current: [],
        clusters: [healthy('c1'), soft('s1')],
        placementCounts: counts({ c1: 10, s1: 0 }),
      },
      want: [{ name: 'c1', replicas: 1 }],
    },
  ];
  it.each(cases)('$name', ({ input, want }) => expect(schedule(input)).toEqual({ ok: true, clusters: want }));
});

describe('spreadCandidates: the clusters whose counts can change the decision', () => {
  const fleet = [failed('member1'), healthy('member2'), healthy('member3')];
  const cases: Array<{ name: string; input: Omit<ScheduleInput, 'placementCounts'>; want: string[] }> = [
    {
      name: 'one of two feasible',
      input: { replicas: 1, placement: oneOf(['member1', 'member2', 'member3']), current: [], clusters: fleet },
      want: ['member2', 'member3'],
    },
    { name: 'every feasible cluster is taken: none', input: { replicas: 1, placement: undefined, current: [], clusters: fleet }, want: [] },
    {
      name: 'already placed and nothing to add: none',
      input: { replicas: 1, placement: oneOf(['member2', 'member3']), current: [{ name: 'member2' }], clusters: fleet },
      want: [],
    },
    { name: 'a single feasible cluster: none', input: { replicas: 1, placement: oneOf(['member1', 'member2']), current: [], clusters: fleet }, want: [] },
  ];
  it.each(cases)('$name', ({ input, want }) => expect(spreadCandidates(input)).toEqual(want));
});

describe('a batch spreads among itself when each placement counts for the next', () => {
  const cases: Array<{ name: string; evictions: number; start: Record<string, number>; want: Record<string, number> }> = [
    { name: '20 over two empty candidates: 10 and 10', evictions: 20, start: {}, want: { member2: 10, member3: 10 } },
    { name: '20 over two, one already running 6: the other catches up first', evictions: 20, start: { member2: 6 }, want: { member2: 7, member3: 13 } },
    { name: '3 over two: 2 and 1, the tie by name', evictions: 3, start: {}, want: { member2: 2, member3: 1 } },
  ];
  it.each(cases)('$name', ({ evictions, start, want }) => {
    const placed = counts(start);
    const clusters = [failed('member1'), healthy('member2'), healthy('member3')];
    const added: Record<string, number> = {};
    for (let i = 0; i < evictions; i++) {
      const result = schedule({ replicas: 1, placement: oneOf(['member1', 'member2', 'member3']), current: [], clusters, placementCounts: placed });
      const target = result.clusters[0].name;
      placed.set(target, (placed.get(target) ?? 0) + 1);
      added[target] = (added[target] ?? 0) + 1;
    }
    expect(added).toEqual(want);
  });
});
