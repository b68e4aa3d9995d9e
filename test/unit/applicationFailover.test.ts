import { describe, expect, it } from 'vitest';
import type { ApplicationFailover } from '../../shared/api/resources';
import { activeBlocks, assessApplicationHealth, mergeWorkloadStatus, WorkloadHealth, WorkloadStatusItem } from '../../shared/failover/applicationFailover';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000);
const iso = (s: number) => at(s).toISOString();

const policy = (overrides: { tolerationSeconds?: number; delaySeconds?: number; healthyState?: 'Healthy' } = {}): ApplicationFailover => ({
  decisionConditions: { tolerationSeconds: overrides.tolerationSeconds ?? 10 },
  ...(overrides.delaySeconds !== undefined || overrides.healthyState
    ? { preConditions: { delaySeconds: overrides.delaySeconds, healthyState: overrides.healthyState } }
    : {}),
  purgeMode: 'Gracefully',
  gracePeriodSeconds: 600,
  blockPredecessorSeconds: 600,
});

/**
 * Feeds member1's reports through merge + assessment at their times, carrying the stored items like the
 * controller does; a step without health is a deadline check with no new report.
 */
function run(steps: Array<{ t: number; health?: WorkloadHealth }>, failover = policy(), placedOn = ['member1', 'member2']) {
  let items: WorkloadStatusItem[] = [];
  return steps.map((step) => {
    if (step.health) items = mergeWorkloadStatus(items, [{ clusterName: 'member1', health: step.health }], placedOn, at(step.t));
    const result = assessApplicationHealth(items, placedOn, failover, at(step.t));
    return {
      t: step.t,
      evict: result.evict.map((e) => e.cluster),
      next: result.nextCheckAt ? (result.nextCheckAt.getTime() - T0) / 1000 : undefined,
      held: result.held.map((h) => h.why),
      items,
    };
  });
}

describe('application failover windows', () => {
  it.each<[string, Array<{ t: number; health?: WorkloadHealth }>, string[][], ReturnType<typeof policy>?]>([
    [
      'evicts once Unhealthy for tolerationSeconds, not before',
      [{ t: 0, health: 'Healthy' }, { t: 5, health: 'Unhealthy' }, { t: 14.9, health: 'Unhealthy' }, { t: 15 }],
      [[], [], [], ['member1']],
    ],
    ['a deadline check with no new report evicts at the deadline', [{ t: 0, health: 'Unhealthy' }, { t: 9.999 }, { t: 10 }], [[], [], ['member1']]],
    [
      'Healthy resets: a flap shorter than the toleration moves nothing',
      [{ t: 0, health: 'Unhealthy' }, { t: 8, health: 'Healthy' }, { t: 9, health: 'Unhealthy' }, { t: 18, health: 'Unhealthy' }, { t: 19 }],
      [[], [], [], [], ['member1']],
    ],
    [
      'Unknown neither counts nor resets',
      [{ t: 0, health: 'Unhealthy' }, { t: 5, health: 'Unknown' }, { t: 12 }, { t: 13, health: 'Unhealthy' }],
      [[], [], [], ['member1']],
    ],
    [
      'Unknown first starts no stretch',
      [
        { t: 0, health: 'Unknown' },
        { t: 30, health: 'Unknown' },
        { t: 31, health: 'Unhealthy' },
      ],
      [[], [], []],
    ],
    ['tolerationSeconds 0 evicts on the first Unhealthy report', [{ t: 0, health: 'Unhealthy' }], [['member1']], policy({ tolerationSeconds: 0 })],
    [
      'healthyState Healthy holds a workload that never settled',
      [
        { t: 0, health: 'Unhealthy' },
        { t: 20, health: 'Unhealthy' },
      ],
      [[], []],
      policy({ healthyState: 'Healthy' }),
    ],
    [
      'healthyState Healthy lets a settled one go',
      [{ t: 0, health: 'Healthy' }, { t: 1, health: 'Unhealthy' }, { t: 11 }],
      [[], [], ['member1']],
      policy({ healthyState: 'Healthy' }),
    ],
    [
      'delaySeconds counts from the first collected status',
      [{ t: 0, health: 'Healthy' }, { t: 5, health: 'Unhealthy' }, { t: 15 }, { t: 30 }],
      [[], [], [], ['member1']],
      policy({ delaySeconds: 30 }),
    ],
  ])('%s', (_name, steps, evictions, failover) => {
    expect(run(steps, failover).map((l) => l.evict)).toEqual(evictions);
  });

  it('says when to look again: the toleration, then the delay', () => {
    const log = run(
      [
        { t: 0, health: 'Unhealthy' },
        { t: 10, health: 'Unhealthy' },
      ],
      policy({ tolerationSeconds: 5, delaySeconds: 30 }),
    );
    expect(log[0].next).toBe(5);
    expect(log[1].next).toBe(30);
    expect(log[1].held[0]).toContain('delaySeconds (30s)');
  });
  it('keeps the first-collected time, settled and the stretch start across reports', () => {
    const log = run([
      { t: 0, health: 'Healthy' },
      { t: 4, health: 'Unhealthy' },
      { t: 6, health: 'Unhealthy' },
    ]);
    expect(log[2].items).toEqual([{ clusterName: 'member1', health: 'Unhealthy', creationTimestamp: iso(0), settled: true, unhealthySince: iso(4) }]);
  });
  it('a restart keeps the deadline: the window comes from the stored items alone', () => {
    const stored = mergeWorkloadStatus([], [{ clusterName: 'member1', health: 'Unhealthy' }], ['member1'], at(0));
    expect(assessApplicationHealth(JSON.parse(JSON.stringify(stored)), ['member1'], policy(), at(10)).evict).toEqual([
      { cluster: 'member1', unhealthySince: iso(0) },
    ]);
  });
  it('tracks no stretch on a cluster the binding is not placed on', () => {
    expect(run([{ t: 0, health: 'Unhealthy' }], policy({ tolerationSeconds: 0 }), ['member2'])[0]).toMatchObject({
      evict: [],
      items: [{ clusterName: 'member1', health: 'Unhealthy' }],
    });
  });
  it('keeps clusters missing from a report', () => {
    const first = mergeWorkloadStatus(
      [],
      [
        { clusterName: 'member1', health: 'Healthy' },
        { clusterName: 'member2', health: 'Unhealthy' },
      ],
      ['member1', 'member2'],
      at(0),
    );
    const second = mergeWorkloadStatus(first, [{ clusterName: 'member1', health: 'Unhealthy' }], ['member1', 'member2'], at(5));
    expect(second.map((i) => [i.clusterName, i.health, i.unhealthySince])).toEqual([
      ['member1', 'Unhealthy', iso(5)],
      ['member2', 'Unhealthy', iso(0)],
    ]);
  });
});

describe('eviction history', () => {
  const history = [
    { clusterName: 'member1', creationTimestamp: iso(0) },
    { clusterName: 'member3', creationTimestamp: iso(500) },
  ];
  it.each([
    [600, 100, ['member1', 'member3'], 600],
    [600, 600, ['member3'], 1100],
    [600, 1200, [], undefined],
    [0, 100_000, ['member1', 'member3'], undefined],
  ])('block %is, at %is: %j, next expiry %s', (block, now, blocked, next) => {
    const result = activeBlocks(history, block, at(now));
    expect(result.blocked).toEqual(blocked);
    expect(result.keep.map((h) => h.clusterName)).toEqual(blocked);
    expect(result.nextExpiry ? (result.nextExpiry.getTime() - T0) / 1000 : undefined).toBe(next);
  });
});
