import { describe, expect, it } from 'vitest';
import type { BindingSpec, GracefulEvictionTask } from '../../shared/api/resources';
import { evictFromPlacement, EvictionTaskOptions } from '../../shared/failover/placementEviction';

const NOW = new Date('2026-01-01T00:10:00.000Z');
const EARLIER = '2026-01-01T00:00:00.000Z';
const taint: EvictionTaskOptions = { reason: 'TaintUntolerated', producer: 'TaintManager', purgeMode: 'Gracefully' };
const appFailure = (purgeMode: EvictionTaskOptions['purgeMode'], gracePeriodSeconds?: number): EvictionTaskOptions => ({
  reason: 'ApplicationFailure',
  producer: 'ApplicationFailover',
  purgeMode,
  message: 'Unhealthy for 10s',
  ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
});
const oldTask: GracefulEvictionTask = {
  fromCluster: 'm1',
  purgeMode: 'Directly',
  reason: 'ApplicationFailure',
  producer: 'ApplicationFailover',
  creationTimestamp: EARLIER,
};
type Spec = Pick<BindingSpec, 'clusters' | 'gracefulEvictionTasks' | 'replicas'>;

describe('evictFromPlacement', () => {
  const cases: Array<{
    name: string;
    spec: Spec;
    cluster: string;
    options: EvictionTaskOptions;
    evicted: boolean;
    clusters: string[];
    tasks: GracefulEvictionTask[];
    kept?: boolean;
  }> = [
    {
      name: 'taint manager, Gracefully: the cluster leaves, a task keeps its replicas',
      cluster: 'm1',
      spec: {
        replicas: 3,
        clusters: [
          { name: 'm1', replicas: 2 },
          { name: 'm2', replicas: 1 },
        ],
      },
      options: taint,
      evicted: true,
      clusters: ['m2'],
      tasks: [
        { fromCluster: 'm1', purgeMode: 'Gracefully', replicas: 2, reason: 'TaintUntolerated', producer: 'TaintManager', creationTimestamp: NOW.toISOString() },
      ],
    },
    {
      name: 'Directly: the task says the old copy goes at once',
      cluster: 'm1',
      spec: { clusters: [{ name: 'm1', replicas: 1 }] },
      options: { ...taint, purgeMode: 'Directly' },
      evicted: true,
      clusters: [],
      tasks: [
        { fromCluster: 'm1', purgeMode: 'Directly', replicas: 1, reason: 'TaintUntolerated', producer: 'TaintManager', creationTimestamp: NOW.toISOString() },
      ],
    },
    {
      name: 'application failover, Gracefully with a grace period and a message',
      cluster: 'm1',
      spec: {
        clusters: [
          { name: 'm1', replicas: 1 },
          { name: 'm2', replicas: 1 },
        ],
      },
      options: appFailure('Gracefully', 600),
      evicted: true,
      clusters: ['m2'],
      tasks: [
        {
          fromCluster: 'm1',
          purgeMode: 'Gracefully',
          replicas: 1,
          reason: 'ApplicationFailure',
          message: 'Unhealthy for 10s',
          producer: 'ApplicationFailover',
          gracePeriodSeconds: 600,
          creationTimestamp: NOW.toISOString(),
        },
      ],
    },
    {
      name: 'purge mode Never: suppressDeletion, no grace period',
      cluster: 'm1',
      spec: { clusters: [{ name: 'm1', replicas: 1 }] },
      options: appFailure('Never', 600),
      evicted: true,
      clusters: [],
      tasks: [
        {
          fromCluster: 'm1',
          purgeMode: 'Never',
          replicas: 1,
          reason: 'ApplicationFailure',
          message: 'Unhealthy for 10s',
          producer: 'ApplicationFailover',
          suppressDeletion: true,
          creationTimestamp: NOW.toISOString(),
        },
      ],
    },
    {
      name: 'a target without a count carries the binding replicas; zero replicas are left out',
      cluster: 'm1',
      spec: { replicas: 0, clusters: [{ name: 'm1' }] },
      options: taint,
      evicted: true,
      clusters: [],
      tasks: [{ fromCluster: 'm1', purgeMode: 'Gracefully', reason: 'TaintUntolerated', producer: 'TaintManager', creationTimestamp: NOW.toISOString() }],
    },
    {
      name: 'an existing task for the cluster is kept as it is (Karmada GracefulEvictCluster); the cluster still leaves',
      cluster: 'm1',
      spec: {
        clusters: [
          { name: 'm1', replicas: 1 },
          { name: 'm2', replicas: 1 },
        ],
        gracefulEvictionTasks: [oldTask],
      },
      options: taint,
      evicted: true,
      clusters: ['m2'],
      tasks: [oldTask],
      kept: true,
    },
    {
      name: 'tasks of other clusters stay beside the new one',
      cluster: 'm2',
      spec: { clusters: [{ name: 'm2', replicas: 1 }], gracefulEvictionTasks: [oldTask] },
      options: taint,
      evicted: true,
      clusters: [],
      tasks: [
        oldTask,
        { fromCluster: 'm2', purgeMode: 'Gracefully', replicas: 1, reason: 'TaintUntolerated', producer: 'TaintManager', creationTimestamp: NOW.toISOString() },
      ],
    },
    {
      name: 'a cluster not in the placement: nothing changes',
      cluster: 'm1',
      spec: { clusters: [{ name: 'm2', replicas: 1 }] },
      options: taint,
      evicted: false,
      clusters: ['m2'],
      tasks: [],
    },
  ];
  it.each(cases)('$name', ({ spec, cluster, options, evicted, clusters, tasks, kept }) => {
    const before = structuredClone(spec);
    const result = evictFromPlacement(spec, cluster, options, NOW);
    expect(result.evicted).toBe(evicted);
    expect(result.clusters.map((c) => c.name)).toEqual(clusters);
    expect(result.gracefulEvictionTasks).toEqual(tasks);
    expect(result.keptExistingTask).toBe(kept ?? false);
    expect(spec).toEqual(before); // pure: the input is not changed
  });
});
