import { describe, expect, it } from 'vitest';
import type { PlacementFacts } from '../../shared/failover/bindingModel';
import type { RateSettings } from '../../shared/failover/evictionDecision';
import type { ClusterFacts, TaintPolicy } from '../../shared/failover/model';
import { whatIf, WhatIfBindingSpec, WhatIfInput } from '../../shared/failover/whatIf';

/** The what-if simulation, pure: a clock passed in, one fact changed per case. */

const NOW = new Date('2026-01-01T00:00:00.000Z');
const ready = (status: 'True' | 'False') => [{ type: 'Ready', status, lastTransitionTime: '2025-12-31T00:00:00.000Z' }] as ClusterFacts['conditions'];
const clusterFacts = (name: string, extra: Partial<ClusterFacts> = {}): ClusterFacts => ({
  name,
  labels: {},
  conditions: ready('True'),
  taints: [],
  policyWindows: {},
  ...extra,
});
const policy = (addOnMatchSeconds: number, effect: 'NoExecute' | 'PreferNoExecute' = 'NoExecute'): TaintPolicy => ({
  name: 'p',
  matchConditions: [{ conditionType: 'Ready', operator: 'In', statusValues: ['False', 'Unknown'] }],
  taintsToAdd: [{ key: 'not-ready', effect, addOnMatchSeconds, removeOnMismatchSeconds: 60 }],
});
const placed = (name: string, extra: Partial<PlacementFacts> = {}): PlacementFacts => ({
  kind: 'ResourceBinding',
  namespace: 'ns',
  name,
  cluster: 'a',
  resourceKind: 'apps/v1/Deployment',
  replicas: 1,
  tolerations: [],
  rev: 1,
  ...extra,
});
const rates: RateSettings = { resourceEvictionRate: 1, secondaryResourceEvictionRate: 0.1, unhealthyClusterThreshold: 0.55, largeClusterNumThreshold: 10 };

function input(extra: Partial<WhatIfInput> & { specs?: Record<string, WhatIfBindingSpec> } = {}): WhatIfInput {
  const { specs, ...rest } = extra;
  const placements = rest.placements ?? [placed('web')];
  return {
    now: NOW,
    failClusters: ['a'],
    condition: { type: 'Ready', status: 'False' },
    clusters: [clusterFacts('a'), clusterFacts('b'), clusterFacts('c')],
    policies: [policy(60)],
    placements,
    bindings: new Map(placements.map((p) => [`rb:ns:${p.name}`, specs?.[p.name] ?? { replicas: 1, clusters: [{ name: 'a', replicas: 1 }] }])),
    decided: new Map(),
    waiting: [],
    rates,
    switches: { failoverEnabled: true, paused: false, nextSlotAt: 0, earliestLeadMs: 1500 },
    ...rest,
  };
}

const seconds = (iso: string | null) => (iso === null ? null : (Date.parse(iso) - NOW.getTime()) / 1000);

describe('whatIf', () => {
  it('a taint lands at the end of its window; an untolerated binding leaves then, to every cluster that fits (Duplicated)', () => {
    const result = whatIf(input());
    expect(result.taints.map((t) => [t.cluster, `${t.key}:${t.effect}`, seconds(t.at)])).toEqual([['a', 'not-ready:NoExecute', 60]]);
    expect(result.evictions.map((e) => [e.binding.name, seconds(e.dueAt), seconds(e.slot), e.targets])).toEqual([
      [
        'web',
        60,
        60,
        [
          { name: 'b', replicas: 1 },
          { name: 'c', replicas: 1 },
        ],
      ],
    ]);
    expect(seconds(result.eta)).toBe(60);
  });

  const cases: Array<{
    name: string;
    extra: Parameters<typeof input>[0];
    want: { evicted: string[]; blocked?: string[]; tolerated?: string[]; decided?: string[] };
  }> = [
    {
      name: 'tolerated for 30 s: due 30 s after the taint',
      extra: { placements: [placed('web', { tolerations: [{ key: 'not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 }] })] },
      want: { evicted: ['web@90'] },
    },
    {
      name: 'tolerated without a limit: stays',
      extra: { placements: [placed('web', { tolerations: [{ key: 'not-ready', operator: 'Exists', effect: 'NoExecute' }] })] },
      want: { evicted: [], tolerated: ['web'] },
    },
    {
      name: 'PreferNoExecute without failover.cluster: stays',
      extra: { policies: [policy(10, 'PreferNoExecute')] },
      want: { evicted: [], tolerated: ['web'] },
    },
    {
      name: 'PreferNoExecute with failover.cluster: leaves after its tolerationSeconds',
      extra: { policies: [policy(10, 'PreferNoExecute')], placements: [placed('web', { failoverCluster: { purgeMode: 'Directly', tolerationSeconds: 5 } })] },
      want: { evicted: ['web@15'] },
    },
    {
      name: 'nowhere to go: blocked, with the pre-check’s reason',
      extra: { specs: { web: { replicas: 1, clusters: [{ name: 'a', replicas: 1 }], placement: { clusterAffinity: { clusterNames: ['a'] } } } } },
      want: {
        evicted: [],
        blocked: ['web: Duplicated: 0 other cluster(s) match the affinity and accept the workload; 1 needed (2 cluster(s) outside the affinity)'],
      },
    },
    {
      name: 'a decision already frozen in the ledger is reported, not decided again',
      extra: { decided: new Map([['a|rb:ns:web', { state: 'pending' as const, dueAt: '2026-01-01T00:05:00.000Z' }]]) },
      want: { evicted: [], decided: ['web'] },
    },
    {
      name: 'a cluster already tainted: the binding is planned at once',
      extra: {
        clusters: [
          clusterFacts('a', { taints: [{ key: 'x', effect: 'NoExecute', timeAdded: '2025-12-31T23:59:00.000Z', owners: [], manual: true }] }),
          clusterFacts('b'),
        ],
      },
      want: { evicted: ['web@0'] },
    },
  ];
  it.each(cases)('$name', ({ extra, want }) => {
    const result = whatIf(input(extra));
    expect({
      evicted: result.evictions.map((e) => `${e.binding.name}@${seconds(e.dueAt)}`),
      ...(want.blocked ? { blocked: result.blocked.map((b) => `${b.binding.name}: ${b.reason}`) } : {}),
      ...(want.tolerated ? { tolerated: result.tolerated.map((t) => t.binding.name) } : {}),
      ...(want.decided ? { decided: result.alreadyDecided.map((d) => d.binding.name) } : {}),
    }).toEqual(want);
  });

  it('has no ETA when every eviction would be blocked: a blocked row moves nothing', () => {
    const result = whatIf(
      input({ specs: { web: { replicas: 1, clusters: [{ name: 'a', replicas: 1 }], placement: { clusterAffinity: { clusterNames: ['a'] } } } } }),
    );
    expect(result.blocked).toHaveLength(1);
    expect(result.eta).toBeNull();
  });

  it('no policy matches the condition: the cluster is untainted and nothing moves', () => {
    const result = whatIf(input({ condition: { type: 'Ready', status: 'True' } }));
    expect(result.taints).toEqual([]);
    expect(result.untainted).toEqual([{ cluster: 'a', why: expect.stringContaining('Ready=True') }]);
    expect(result.evictions).toEqual([]);
  });

  it('waits behind the rows already waiting, and says what holds evictions', () => {
    const queued = whatIf(input({ waiting: [{ id: 'x', cluster: 'a', bindingKey: 'rb:ns:aaa', dueAt: NOW.getTime() + 60_000 }] }));
    expect(seconds(queued.eta)).toBe(61);
    expect(whatIf(input({ switches: { failoverEnabled: true, paused: true, nextSlotAt: 0, earliestLeadMs: 1500 } }))).toMatchObject({
      heldBy: 'paused',
      eta: null,
    });
    expect(whatIf(input({ switches: { failoverEnabled: false, paused: false, nextSlotAt: 0, earliestLeadMs: 1500 } }))).toMatchObject({ heldBy: 'gate' });
    // Two of three clusters failing in a small fleet: halted, and the tier says so.
    const halted = whatIf(input({ failClusters: ['a', 'b'] }));
    expect(halted.fleet).toMatchObject({ unhealthy: 2, tier: 'halted', rate: 0 });
    expect(halted.heldBy).toBe('halted');
  });
});
