import { describe, expect, it } from 'vitest';
import type { Toleration } from '../../shared/api/resources';
import { assignSlots, decidedInEpisode, decideEviction, episodeStart, tolerates } from '../../shared/failover/evictionDecision';
import { CandidateCluster, preScheduleCheck } from '../../shared/failover/precheck';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000);
const noExecute = (key: string, added = 0, value?: string) => ({ key, value, effect: 'NoExecute' as const, timeAdded: at(added).toISOString() });
const prefer = (key: string, added = 0) => ({ key, effect: 'PreferNoExecute' as const, timeAdded: at(added).toISOString() });

describe('toleration matching (Kubernetes semantics)', () => {
  const taint = { key: 'not-ready', value: 'x', effect: 'NoExecute' as const };
  const cases: Array<[string, Toleration, boolean]> = [
    ['Exists on the key', { key: 'not-ready', operator: 'Exists' }, true],
    ['Equal with the same value', { key: 'not-ready', operator: 'Equal', value: 'x' }, true],
    ['Equal (default operator) with another value', { key: 'not-ready', value: 'y' }, false],
    ['empty key with Exists tolerates everything', { operator: 'Exists' }, true],
    ['another effect does not tolerate', { key: 'not-ready', operator: 'Exists', effect: 'NoSchedule' }, false],
    ['the same effect does', { key: 'not-ready', operator: 'Exists', effect: 'NoExecute' }, true],
    ['another key does not', { key: 'unreachable', operator: 'Exists' }, false],
  ];
  it.each(cases)('%s', (_name, toleration, expected) => {
    expect(tolerates(toleration, taint)).toBe(expected);
  });
});

describe('decideEviction', () => {
  const now = at(100);
  const cases: Array<{
    name: string;
    taints: Parameters<typeof decideEviction>[0];
    tolerations: Toleration[];
    failover?: { purgeMode: 'Directly' | 'Gracefully'; tolerationSeconds: number };
    due: number | null;
  }> = [
    { name: 'untolerated NoExecute: now', taints: [noExecute('a', 50)], tolerations: [], due: 100 },
    {
      name: 'tolerated for 300 s: timeAdded + 300',
      taints: [noExecute('a', 50)],
      tolerations: [{ key: 'a', operator: 'Exists', tolerationSeconds: 300 }],
      due: 350,
    },
    { name: 'tolerated without seconds: never', taints: [noExecute('a', 50)], tolerations: [{ key: 'a', operator: 'Exists' }], due: null },
    {
      name: 'tolerationSeconds 0: at once (no later than timeAdded)',
      taints: [noExecute('a', 50)],
      tolerations: [{ key: 'a', operator: 'Exists', tolerationSeconds: 0 }],
      due: 50,
    },
    {
      name: 'negative tolerationSeconds: at once',
      taints: [noExecute('a', 50)],
      tolerations: [{ key: 'a', operator: 'Exists', tolerationSeconds: -5 }],
      due: 50,
    },
    {
      name: 'only the first matching toleration counts',
      taints: [noExecute('a', 50)],
      tolerations: [
        { key: 'a', operator: 'Exists' },
        { key: 'a', operator: 'Exists', tolerationSeconds: 0 },
      ],
      due: null,
    },
    {
      name: 'the minimum over the taints',
      taints: [noExecute('a', 0), noExecute('b', 10)],
      tolerations: [
        { key: 'a', operator: 'Exists', tolerationSeconds: 600 },
        { key: 'b', operator: 'Exists', tolerationSeconds: 60 },
      ],
      due: 70,
    },
    {
      name: 'one untolerated taint among tolerated ones: now',
      taints: [noExecute('a', 0), noExecute('b', 0)],
      tolerations: [{ key: 'a', operator: 'Exists' }],
      due: 100,
    },
    { name: 'PreferNoExecute without failover.cluster: stays', taints: [prefer('p', 0)], tolerations: [], due: null },
    {
      name: 'PreferNoExecute with failover.cluster: timeAdded + tolerationSeconds',
      taints: [prefer('p', 20)],
      tolerations: [],
      failover: { purgeMode: 'Gracefully', tolerationSeconds: 100 },
      due: 120,
    },
    {
      name: 'PreferNoExecute ignores tolerations',
      taints: [prefer('p', 20)],
      tolerations: [{ operator: 'Exists' }],
      failover: { purgeMode: 'Directly', tolerationSeconds: 0 },
      due: 20,
    },
    { name: 'NoSchedule alone evicts nothing', taints: [{ key: 'n', effect: 'NoSchedule', timeAdded: at(0).toISOString() }], tolerations: [], due: null },
  ];
  it.each(cases)('$name', ({ taints, tolerations, failover, due }) => {
    const verdict = decideEviction(taints, tolerations, failover, now);
    if (due === null) expect(verdict.evict).toBe(false);
    else expect(verdict.evict && verdict.dueAt.toISOString()).toBe(at(due).toISOString());
  });
});

describe('send slots', () => {
  it('spaces slots 1/rate apart, from the next free slot, within the horizon', () => {
    const result = assignSlots([0, 0, 0, 0, 0], 0, 1000, 2, 2500);
    expect(result.slots).toEqual([1000, 1500, 2000, 2500]);
    expect(result.nextFreeSlot).toBe(3000);
  });
  it('continues from where the last call stopped, and never before an item is due', () => {
    expect(assignSlots([0, 5000], 3000, 1000, 2, 10_000).slots).toEqual([3000, 5000]);
  });
  it('assigns nothing at rate 0', () => {
    expect(assignSlots([0, 0], 0, 0, 0, 10_000)).toEqual({ slots: [], nextFreeSlot: 0 });
  });
});

describe('pre-scheduling check (seed 000)', () => {
  const cluster = (name: string, extra: Partial<CandidateCluster> = {}): CandidateCluster => ({ name, labels: {}, taints: [], ...extra });
  const fleet = [
    cluster('m1'),
    cluster('m2'),
    cluster('m3', { taints: [{ key: 'x', effect: 'NoSchedule' }] }),
    cluster('m4', { taints: [{ key: 'p', effect: 'PreferNoExecute' }] }),
    cluster('m5'),
  ];
  const cases: Array<{ name: string; placement: Parameters<typeof preScheduleCheck>[0]['placement']; placedOn: string[]; ok: boolean }> = [
    { name: 'Duplicated with a healthy cluster elsewhere', placement: undefined, placedOn: ['m1'], ok: true },
    {
      name: 'Duplicated, affinity leaves only the faulty cluster',
      placement: { clusterAffinity: { clusterNames: ['m1', 'm3', 'm4'] } },
      placedOn: ['m1'],
      ok: false,
    },
    {
      name: 'a NoSchedule cluster counts when tolerated',
      placement: { clusterAffinity: { clusterNames: ['m1', 'm3'] }, clusterTolerations: [{ key: 'x', operator: 'Exists' }] },
      placedOn: ['m1'],
      ok: true,
    },
    {
      name: 'a PreferNoExecute cluster never counts',
      placement: { clusterAffinity: { clusterNames: ['m1', 'm4'] }, clusterTolerations: [{ operator: 'Exists' }] },
      placedOn: ['m1'],
      ok: false,
    },
    {
      name: 'Duplicated with minGroups 3 and two usable clusters',
      placement: { spreadConstraints: [{ spreadByField: 'cluster', minGroups: 3, maxGroups: 3 }], clusterAffinity: { clusterNames: ['m1', 'm2', 'm5'] } },
      placedOn: ['m1', 'm2'],
      ok: false,
    },
    {
      name: 'Duplicated with minGroups 2 and two usable clusters',
      placement: { spreadConstraints: [{ spreadByField: 'cluster', minGroups: 2, maxGroups: 2 }] },
      placedOn: ['m1', 'm2'],
      ok: true,
    },
    {
      name: 'Divided may move the replicas onto a cluster still placed (seed 001)',
      placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] }, replicaScheduling: { replicaSchedulingType: 'Divided' } },
      placedOn: ['m1', 'm2'],
      ok: true,
    },
    {
      name: 'Divided with no other usable cluster',
      placement: { clusterAffinity: { clusterNames: ['m1', 'm3'] }, replicaScheduling: { replicaSchedulingType: 'Divided' } },
      placedOn: ['m1', 'm3'],
      ok: false,
    },
    { name: 'Divided with a free matching cluster', placement: { replicaScheduling: { replicaSchedulingType: 'Divided' } }, placedOn: ['m1', 'm2'], ok: true },
  ];
  it.each(cases)('$name', ({ placement, placedOn, ok }) => {
    expect(preScheduleCheck({ placement, placedOn, evictFrom: 'm1', clusters: fleet }).ok).toBe(ok);
  });
});

describe('failure episodes with times in whole seconds (as Karmada stores timeAdded) and in milliseconds', () => {
  const cases: Array<[string, string, string, boolean]> = [
    ['decided within the second Karmada truncated the taint to', '2026-01-01T00:00:05.123Z', '2026-01-01T00:00:05Z', true],
    ['decided at the very instant', '2026-01-01T00:00:05.000Z', '2026-01-01T00:00:05Z', true],
    ['decided in the second before (a previous episode)', '2026-01-01T00:00:04.999Z', '2026-01-01T00:00:05Z', false],
    ['decided long after, both in milliseconds', '2026-01-01T00:01:00.000Z', '2026-01-01T00:00:05.500Z', true],
    ['decided before, both in milliseconds', '2026-01-01T00:00:05.400Z', '2026-01-01T00:00:05.500Z', false],
  ];
  it.each(cases)('%s', (_name, decidedAt, episodeBegan, inEpisode) => {
    expect(decidedInEpisode(decidedAt, episodeBegan)).toBe(inEpisode);
  });

  it('starts with the earliest faulty taint, compared as instants', () => {
    const taints = [
      { effect: 'NoExecute' as const, timeAdded: '2026-01-01T00:00:05.100Z' },
      { effect: 'NoExecute' as const, timeAdded: '2026-01-01T00:00:05Z' },
      { effect: 'NoSchedule' as const, timeAdded: '2026-01-01T00:00:01Z' },
    ];
    expect(episodeStart(taints)).toBe('2026-01-01T00:00:05Z');
    expect(episodeStart([])).toBeUndefined();
  });
});
