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

describe('evictFromPlacement with statePreservation', () => {
  const rules = [
    { aliasLabelName: 'failover.example.com/job-id', jsonPath: '{.jobId}' },
    { aliasLabelName: 'checkpoint', jsonPath: '{.checkpoint.path}@{.checkpoint.epoch}' },
  ];
  const status = { jobId: 'job-42', checkpoint: { path: 's3://ckpt/7', epoch: 7 } };
  const twoPlaced: Spec = {
    replicas: 1,
    clusters: [
      { name: 'm1', replicas: 1 },
      { name: 'm2', replicas: 1 },
    ],
  };
  const cases: Array<{
    name: string;
    spec: Spec;
    options: EvictionTaskOptions;
    task: Partial<GracefulEvictionTask> | undefined;
    missed: Array<{ aliasLabelName: string; why: RegExp }>;
    unpreserved?: boolean;
  }> = [
    {
      name: 'taint manager: every rule found, the task keeps the values and the placement before the eviction',
      spec: twoPlaced,
      options: { ...taint, statePreservation: { rules, status } },
      task: {
        preservedLabelState: { 'failover.example.com/job-id': 'job-42', checkpoint: 's3://ckpt/7@7' },
        clustersBeforeFailover: ['m1', 'm2'],
      },
      missed: [],
    },
    {
      name: 'application failover: the same, beside the purge mode fields',
      spec: twoPlaced,
      options: { ...appFailure('Never'), statePreservation: { rules: rules.slice(0, 1), status } },
      task: { suppressDeletion: true, preservedLabelState: { 'failover.example.com/job-id': 'job-42' }, clustersBeforeFailover: ['m1', 'm2'] },
      missed: [],
    },
    {
      name: 'a rule that finds nothing is returned, the others are kept',
      spec: twoPlaced,
      options: { ...taint, statePreservation: { rules, status: { jobId: 'job-42' } } },
      task: { preservedLabelState: { 'failover.example.com/job-id': 'job-42' }, clustersBeforeFailover: ['m1', 'm2'] },
      missed: [{ aliasLabelName: 'checkpoint', why: /\{\.checkpoint\.path\} found nothing in the status/ }],
    },
    {
      name: 'no status collected from the cluster: every rule is returned, the eviction goes ahead',
      spec: twoPlaced,
      options: { ...taint, statePreservation: { rules } },
      task: { preservedLabelState: {}, clustersBeforeFailover: ['m1', 'm2'] },
      missed: [
        { aliasLabelName: 'failover.example.com/job-id', why: /no status was collected/ },
        { aliasLabelName: 'checkpoint', why: /no status was collected/ },
      ],
    },
    {
      name: 'no rules: neither field is written (as Karmada without rules)',
      spec: twoPlaced,
      options: { ...taint, statePreservation: { rules: [], status } },
      task: { fromCluster: 'm1' },
      missed: [],
      unpreserved: true,
    },
    {
      name: 'an existing task is kept as it is: nothing is evaluated',
      spec: { ...twoPlaced, gracefulEvictionTasks: [oldTask] },
      options: { ...taint, statePreservation: { rules, status: {} } },
      task: oldTask,
      missed: [],
    },
    {
      name: 'a cluster not in the placement: nothing is evaluated',
      spec: { clusters: [{ name: 'm2', replicas: 1 }] },
      options: { ...taint, statePreservation: { rules, status: {} } },
      task: undefined,
      missed: [],
    },
  ];
  it.each(cases)('$name', ({ spec, options, task, missed, unpreserved }) => {
    const before = structuredClone(spec);
    const result = evictFromPlacement(spec, 'm1', options, NOW);
    if (task === undefined) expect(result.task).toBeUndefined();
    else expect(result.task).toMatchObject(task);
    if (unpreserved) {
      expect(result.task).not.toHaveProperty('preservedLabelState');
      expect(result.task).not.toHaveProperty('clustersBeforeFailover');
    }
    expect(result.missedRules.map((m) => m.aliasLabelName)).toEqual(missed.map((m) => m.aliasLabelName));
    result.missedRules.forEach((m, i) => expect(m.why).toMatch(missed[i].why));
    expect(spec).toEqual(before);
  });
});
