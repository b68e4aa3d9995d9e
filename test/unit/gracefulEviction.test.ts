import { describe, expect, it } from 'vitest';
import type { GracefulEvictionTask } from '../../shared/api/resources';
import { assessTasks, BindingHealthView, resourceHealthPasses } from '../../shared/failover/gracefulEviction';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000);
const task = (fromCluster: string, extra: Partial<GracefulEvictionTask> = {}): GracefulEvictionTask => ({
  fromCluster,
  purgeMode: 'Gracefully',
  reason: 'TaintUntolerated',
  producer: 'TaintManager',
  creationTimestamp: at(0).toISOString(),
  ...extra,
});
const binding = (extra: Partial<BindingHealthView> = {}): BindingHealthView => ({
  generation: 3,
  schedulerObservedGeneration: 3,
  clusters: ['member2'],
  aggregatedStatus: [{ clusterName: 'member2', health: 'Healthy' }],
  ...extra,
});

describe('ResourceHealth', () => {
  const cases: Array<[string, Partial<BindingHealthView>, boolean]> = [
    ['scheduled, one target, Healthy', {}, true],
    ['not scheduled for the current generation', { schedulerObservedGeneration: 2 }, false],
    ['an empty placement is never healthy (#7455)', { clusters: [], aggregatedStatus: [] }, false],
    [
      'a target still Unhealthy',
      {
        clusters: ['member2', 'member3'],
        aggregatedStatus: [
          { clusterName: 'member2', health: 'Healthy' },
          { clusterName: 'member3', health: 'Unhealthy' },
        ],
      },
      false,
    ],
    ['a target not reported yet', { clusters: ['member2', 'member3'] }, false],
    ['a target Unknown', { aggregatedStatus: [{ clusterName: 'member2', health: 'Unknown' }] }, false],
  ];
  it.each(cases)('%s', (_name, extra, expected) => {
    expect(resourceHealthPasses(binding(extra))).toBe(expected);
  });
});

describe('assessTasks', () => {
  const cases: Array<{
    name: string;
    tasks: GracefulEvictionTask[];
    binding?: Partial<BindingHealthView>;
    now?: number;
    timeout?: number;
    dropped: string[];
    next?: number;
  }> = [
    { name: 'drops when every target is Healthy', tasks: [task('member1')], dropped: ['member1'] },
    {
      name: 'keeps while the new copy is not healthy, with no grace period (no global timeout by default)',
      tasks: [task('member1')],
      binding: { aggregatedStatus: [{ clusterName: 'member2', health: 'Unhealthy' }] },
      now: 100_000,
      dropped: [],
    },
    {
      name: 'drops when its grace period has passed',
      tasks: [task('member1', { gracePeriodSeconds: 60 })],
      binding: { aggregatedStatus: [] },
      now: 60,
      dropped: ['member1'],
    },
    {
      name: 'keeps before its grace period ends and says when to look again',
      tasks: [task('member1', { gracePeriodSeconds: 60 })],
      binding: { aggregatedStatus: [] },
      now: 59,
      dropped: [],
      next: 60,
    },
    { name: 'the global timeout applies when set', tasks: [task('member1')], binding: { aggregatedStatus: [] }, now: 601, timeout: 600, dropped: ['member1'] },
    { name: 'drops a task whose cluster is placed again', tasks: [task('member2')], binding: { aggregatedStatus: [] }, dropped: ['member2'] },
    { name: 'Directly drops at once', tasks: [task('member1', { purgeMode: 'Directly' })], binding: { aggregatedStatus: [] }, dropped: ['member1'] },
    {
      name: 'suppressDeletion keeps even when healthy and expired',
      tasks: [task('member1', { purgeMode: 'Never', suppressDeletion: true, gracePeriodSeconds: 1 })],
      now: 1000,
      dropped: [],
    },
    {
      name: 'an empty placement never drops a Gracefully task',
      tasks: [task('member1')],
      binding: { clusters: [], aggregatedStatus: [] },
      now: 100_000,
      dropped: [],
    },
  ];
  it.each(cases)('$name', ({ tasks, binding: extra, now, timeout, dropped, next }) => {
    const result = assessTasks(tasks, binding(extra), at(now ?? 0), { globalTimeoutSeconds: timeout });
    expect(result.drop.map((d) => d.task.fromCluster)).toEqual(dropped);
    expect(result.keep.length + result.drop.length).toBe(tasks.length);
    if (next !== undefined) expect(result.nextCheckAt?.toISOString()).toBe(at(next).toISOString());
  });
});
