import { afterAll, beforeAll, expect, it } from 'vitest';
import { applyObjects, binding, cluster, ledger } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

let host: HostProcess;
beforeAll(async () => {
  host = await startHostProcess({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '10' });
}, 30_000);
afterAll(async () => host?.stop());

it('clears a Directly task at the next sweep, keeps a Gracefully one while nothing is healthy, and takes workload health reports', async () => {
  await applyObjects(host.url, [cluster('s1'), cluster('s2'), cluster('s3')]);
  await applyObjects(host.url, [
    binding('direct', ['s1', 's2'], { failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 0 } } }),
    binding('gentle', ['s1', 's2']),
  ]);
  await applyObjects(host.url, [cluster('s1', true)]);
  await waitFor(async () => ((await ledger(host.url, '?cluster=s1&state=done')).length === 2 ? true : undefined), 10_000, 100);

  // The sweep runs every 10 s: the Directly task goes, with an event saying the old copy may be deleted.
  const direct = await waitFor(
    async () => {
      const body = (await api(host.url, 'GET', 'resourcebindings/default/direct')).body;
      return (body.spec.gracefulEvictionTasks ?? []).length === 0 ? body : undefined;
    },
    15_000,
    250,
  );
  expect(direct.spec.clusters.map((c: { name: string }) => c.name)).not.toContain('s1');
  const events = (await api(host.url, 'GET', 'events?kind=ResourceBinding&name=default/direct')).body.items.map((e: { reason: string }) => e.reason);
  expect(events).toContain('OldCopyRemoved');

  // The scheduler places the gentle workload again (s2 kept, s3 added). Its Gracefully task stays while a
  // target is not Healthy, and goes once every target is.
  const placed = await waitFor(
    async () => {
      const body = (await api(host.url, 'GET', 'resourcebindings/default/gentle')).body;
      return body.status.schedulerObservedGeneration === body.metadata.generation ? body : undefined;
    },
    10_000,
    200,
  );
  expect(placed.spec.clusters).toEqual([
    { name: 's2', replicas: 2 },
    { name: 's3', replicas: 2 },
  ]);
  expect(placed.status.conditions).toEqual([expect.objectContaining({ type: 'Scheduled', status: 'True' })]);
  const partial = await api(host.url, 'POST', 'resourcebindings/default/gentle/status', {
    aggregatedStatus: [
      { clusterName: 's2', applied: true, health: 'Healthy' },
      { clusterName: 's3', applied: true, health: 'Unhealthy' },
    ],
  });
  expect(partial.status).toBe(200);
  expect(partial.body.spec.gracefulEvictionTasks).toEqual([expect.objectContaining({ fromCluster: 's1', purgeMode: 'Gracefully' })]);
  const healthy = await api(host.url, 'POST', 'resourcebindings/default/gentle/status', {
    aggregatedStatus: [
      { clusterName: 's2', health: 'Healthy' },
      { clusterName: 's3', health: 'Healthy' },
    ],
  });
  expect(healthy.body.clearedTasks).toEqual([{ fromCluster: 's1', why: 'ResourceHealth: every target cluster is Healthy' }]);
  expect(healthy.body.spec.gracefulEvictionTasks).toEqual([]);

  const bad = await api(host.url, 'POST', 'resourcebindings/default/gentle/status', { aggregatedStatus: [{ clusterName: 's2', health: 'Fine' }] });
  expect(bad).toMatchObject({ status: 400, body: { errors: [{ path: 'aggregatedStatus[0].health' }] } });
  expect((await api(host.url, 'POST', 'resourcebindings/default/nothing/status', { aggregatedStatus: [] })).status).toBe(404);
}, 40_000);
