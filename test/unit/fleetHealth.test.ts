import { describe, expect, it } from 'vitest';
import { fleetHealth, isUnhealthyCluster } from '../../shared/failover/fleetHealth';
import type { ConditionStatus, TaintEffect } from '../../shared/failover/model';

describe('an unhealthy cluster: Ready not True, or a NoExecute/PreferNoExecute taint', () => {
  const cases: Array<[ConditionStatus | 'missing', TaintEffect | 'none', boolean]> = [
    ['True', 'none', false],
    ['True', 'NoSchedule', false],
    ['True', 'PreferNoSchedule', false],
    ['True', 'NoExecute', true],
    ['True', 'PreferNoExecute', true],
    ['False', 'none', true],
    ['False', 'NoExecute', true],
    ['Unknown', 'none', true],
    ['Unknown', 'NoSchedule', true],
    ['Unknown', 'PreferNoExecute', true],
    ['missing', 'none', true],
    ['missing', 'NoExecute', true],
  ];
  it.each(cases)('Ready %s, taint %s → unhealthy %s', (ready, effect, unhealthy) => {
    const conditions = [{ type: 'MemoryPressure', status: 'False' as const }, ...(ready === 'missing' ? [] : [{ type: 'Ready', status: ready }])];
    const taints = effect === 'none' ? [] : [{ effect }];
    expect(isUnhealthyCluster({ conditions, taints })).toBe(unhealthy);
  });

  it('another condition True (a pressure) does not stand for Ready', () => {
    expect(isUnhealthyCluster({ conditions: [{ type: 'Healthy', status: 'True' }], taints: [] })).toBe(true);
  });
});

describe('fleet health and the rate', () => {
  const settings = { resourceEvictionRate: 0.5, secondaryResourceEvictionRate: 0.1, unhealthyClusterThreshold: 0.55, largeClusterNumThreshold: 10 };
  const cases: Array<[number, number, string, number]> = [
    [0, 0, 'primary', 0.5],
    [12, 1, 'primary', 0.5],
    [20, 11, 'primary', 0.5], // exactly 55 %: not above the threshold
    [20, 12, 'secondary', 0.1],
    [10, 7, 'halted', 0], // a small fleet halts
    [10, 10, 'halted', 0],
    [11, 7, 'secondary', 0.1], // 11 > 10 is large
    [12, 7, 'secondary', 0.1],
    [13, 8, 'secondary', 0.1],
    [10, 5, 'primary', 0.5],
  ];
  it.each(cases)('%i clusters, %i unhealthy → %s at %d/s', (total, unhealthy, tier, rate) => {
    expect(fleetHealth(total, unhealthy, settings)).toMatchObject({ total, unhealthy, tier, rate, failureRatio: total === 0 ? 0 : unhealthy / total });
  });
});
