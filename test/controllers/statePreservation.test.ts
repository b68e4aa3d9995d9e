import { describe, expect, it } from 'vitest';
import { bindingStatusReportSchema } from '../../shared/api/resources';
import { reportBindingStatus } from '../../shared/controllers/bindingStatus';
import { executeEviction } from '../../shared/controllers/evictionWorker';
import { runPacer } from '../../shared/controllers/pacer';
import { manageCluster } from '../../shared/controllers/taintManager';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane, takeEvictions } from '../helpers/memoryPlane';

/**
 * statePreservation on the in-memory ports, through the app's own paths: the workload's status is reported
 * with POST .../status, then the taint manager's paced eviction (failover.cluster) or application failover
 * (failover.application) takes the cluster out, and the graceful-eviction task carries what the rules found.
 */

const fleet = (m: MemoryPlane, objects: unknown[]) => applyTo(m, objects);
const stored = async (m: MemoryPlane, name: string) => (await m.bindings.get(`rb:default:${name}`))!.value;
const eventsOf = async (m: MemoryPlane, name: string, reason: string) =>
  (await m.events.all()).filter((e) => e.name === `default/${name}` && e.reason === reason);
const report = (m: MemoryPlane, name: string, aggregatedStatus: unknown[]) =>
  reportBindingStatus(m.plane, { kind: 'ResourceBinding', namespace: 'default', name }, bindingStatusReportSchema.parse({ aggregatedStatus }));

/** Plans the faulty cluster's evictions, lets the pacer send them, and runs each at its slot. */
async function evictFrom(m: MemoryPlane, name: string) {
  await manageCluster(m.plane, name);
  await runPacer(m.plane);
  const outcomes = [];
  for (const { message } of takeEvictions(m)) {
    if (Date.parse(message.slot) > m.clock.now().getTime()) m.clock.set(message.slot);
    outcomes.push(await executeEviction(m.plane, message));
  }
  return outcomes;
}

const rules = [
  { aliasLabelName: 'failover.example.com/job-id', jsonPath: '{.jobId}' },
  { aliasLabelName: 'checkpoint', jsonPath: '{.checkpoint.path}' },
];

describe('statePreservation on cluster failover (failover.cluster)', () => {
  const cases: Array<{
    name: string;
    status?: Record<string, unknown>;
    preserved: Record<string, string>;
    missed: string[];
  }> = [
    {
      name: 'every rule finds its value: the task keeps them, no event',
      status: { jobId: 'job-42', checkpoint: { path: 's3://ckpt/7' } },
      preserved: { 'failover.example.com/job-id': 'job-42', checkpoint: 's3://ckpt/7' },
      missed: [],
    },
    {
      name: 'a rule that finds nothing: the eviction goes ahead, the others are kept, an event names it',
      status: { jobId: 'job-42' },
      preserved: { 'failover.example.com/job-id': 'job-42' },
      missed: ['checkpoint'],
    },
    {
      name: 'no status was ever collected: every rule is named in the event',
      preserved: {},
      missed: ['failover.example.com/job-id', 'checkpoint'],
    },
  ];
  it.each(cases)('$name', async ({ status, preserved, missed }) => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await fleet(m, [
      cluster('m1', true),
      cluster('m2'),
      binding('job', ['m1'], {
        replicas: 1,
        clusters: [{ name: 'm1', replicas: 1 }],
        placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] }, spreadConstraints: [{ maxGroups: 1 }] },
        failover: { cluster: { purgeMode: 'Gracefully', statePreservation: { rules } } },
      }),
    ]);
    // Health only from one reporter, the status from another: the status stays.
    if (status) await report(m, 'job', [{ clusterName: 'm1', health: 'Healthy', status }]);
    await report(m, 'job', [{ clusterName: 'm1', health: 'Healthy' }]);

    expect(await evictFrom(m, 'm1')).toEqual(['evicted']);
    const job = await stored(m, 'job');
    expect(job.spec.clusters?.map((c) => c.name)).toEqual(['m2']);
    expect(job.spec.gracefulEvictionTasks).toEqual([
      expect.objectContaining({
        fromCluster: 'm1',
        reason: 'TaintUntolerated',
        producer: 'TaintManager',
        purgeMode: 'Gracefully',
        preservedLabelState: preserved,
        clustersBeforeFailover: ['m1'],
      }),
    ]);
    const notPreserved = await eventsOf(m, 'job', 'StateNotPreserved');
    expect(notPreserved.map((e) => (e.details?.missed as Array<{ aliasLabelName: string }>).map((r) => r.aliasLabelName))).toEqual(
      missed.length > 0 ? [missed] : [],
    );
    if (missed.length > 0) {
      expect(notPreserved[0]).toMatchObject({ kind: 'ResourceBinding', type: 'Warning', details: { cluster: 'm1' } });
      expect(notPreserved[0].message).toMatch(/^evicted from m1; \d statePreservation rule\(s\) preserved nothing/);
    }
    expect(await eventsOf(m, 'job', 'Evicted')).toHaveLength(1);
  });
});

describe('statePreservation on application failover (failover.application)', () => {
  const cases: Array<{ name: string; status?: Record<string, unknown>; preserved: Record<string, string>; missed: string[] }> = [
    {
      name: 'the status reported before the failure is preserved',
      status: { jobId: 'job-7', checkpoint: { path: '/data/ckpt-3' } },
      preserved: { 'failover.example.com/job-id': 'job-7', checkpoint: '/data/ckpt-3' },
      missed: [],
    },
    {
      name: 'a rule that finds nothing is recorded in an event beside ApplicationFailover',
      status: { checkpoint: { path: '/data/ckpt-3' } },
      preserved: { checkpoint: '/data/ckpt-3' },
      missed: ['failover.example.com/job-id'],
    },
  ];
  it.each(cases)('$name', async ({ status, preserved, missed }) => {
    const m = memoryPlane();
    await fleet(m, [
      cluster('m1'),
      cluster('m2'),
      binding('flink', ['m1'], {
        replicas: 1,
        clusters: [{ name: 'm1', replicas: 1 }],
        placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] }, spreadConstraints: [{ maxGroups: 1, minGroups: 1 }] },
        failover: { application: { decisionConditions: { tolerationSeconds: 0 }, purgeMode: 'Never', statePreservation: { rules } } },
      }),
    ]);
    await report(m, 'flink', [{ clusterName: 'm1', health: 'Healthy', status }]);
    const outcome = await report(m, 'flink', [{ clusterName: 'm1', health: 'Unhealthy' }]);
    expect(outcome?.evictedClusters).toEqual(['m1']);

    const flink = await stored(m, 'flink');
    expect(flink.spec.gracefulEvictionTasks).toEqual([
      expect.objectContaining({
        fromCluster: 'm1',
        reason: 'ApplicationFailure',
        producer: 'ApplicationFailover',
        suppressDeletion: true,
        preservedLabelState: preserved,
        clustersBeforeFailover: ['m1'],
      }),
    ]);
    // The evicted cluster's status item is dropped after it was read.
    expect(flink.status.aggregatedStatus?.map((i) => i.clusterName)).toEqual([]);
    const notPreserved = await eventsOf(m, 'flink', 'StateNotPreserved');
    expect(notPreserved.map((e) => (e.details?.missed as Array<{ aliasLabelName: string }>).map((r) => r.aliasLabelName))).toEqual(
      missed.length > 0 ? [missed] : [],
    );
    expect(await eventsOf(m, 'flink', 'ApplicationFailover')).toHaveLength(1);
  });
});

describe('a binding evicted after its toleration is not placed straight back (the issue)', () => {
  it('NoExecute tolerated for 6 s, Duplicated over [c01, c12], one cluster: evicted from c01, placed on c12, not back on c01', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await fleet(m, [
      cluster('c01', true),
      cluster('c12'),
      binding('web', ['c01'], {
        replicas: 1,
        clusters: [{ name: 'c01', replicas: 1 }],
        placement: {
          clusterAffinity: { clusterNames: ['c01', 'c12'] },
          clusterTolerations: [{ key: 'test/failed', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 6 }],
          spreadConstraints: [{ spreadByField: 'cluster', maxGroups: 1 }],
          replicaScheduling: { replicaSchedulingType: 'Duplicated' },
        },
      }),
    ]);
    await manageCluster(m.plane, 'c01');
    m.clock.advance(6_000);
    expect(await evictFrom(m, 'c01')).toEqual(['evicted']);
    const web = await stored(m, 'web');
    expect(web.spec.clusters).toEqual([{ name: 'c12', replicas: 1 }]);
    expect(web.status.conditions?.find((c) => c.type === 'Scheduled')).toMatchObject({ status: 'True' });
    // Nothing left to evict from c01: the binding is not there any more.
    expect((await manageCluster(m.plane, 'c01')).planned).toBe(0);
  });
});
