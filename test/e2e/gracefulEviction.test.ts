import { afterAll, beforeAll, expect, it } from 'vitest';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';
import { applyObjects, binding, cluster, ledger } from '../helpers/fleet';

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
  const direct = await waitFor(async () => {
    const body = (await api(host.url, 'GET', 'resourcebindings/default/direct')).body;
    return (body.spec.gracefulEvictionTasks ?? []).length === 0 ? body : undefined;
  }, 15_000, 250);
  expect(direct.spec.clusters).toEqual([{ name: 's2', replicas: 2 }]);
  const events = (await api(host.url, 'GET', 'events?kind=ResourceBinding&name=default/direct')).body.items.map((e: { reason: string }) => e.reason);
  expect(events).toContain('OldCopyRemoved');

  // A Gracefully task stays: the binding has not been scheduled for its new generation, so its new copy
  // cannot count as healthy, whatever health is reported.
  const report = await api(host.url, 'POST', 'resourcebindings/default/gentle/status', { aggregatedStatus: [{ clusterName: 's2', applied: true, health: 'Healthy' }] });
  expect(report.status).toBe(200);
  expect(report.body.status.aggregatedStatus).toEqual([{ clusterName: 's2', applied: true, health: 'Healthy' }]);
  expect(report.body.spec.gracefulEvictionTasks).toEqual([expect.objectContaining({ fromCluster: 's1', purgeMode: 'Gracefully' })]);

  const bad = await api(host.url, 'POST', 'resourcebindings/default/gentle/status', { aggregatedStatus: [{ clusterName: 's2', health: 'Fine' }] });
  expect(bad).toMatchObject({ status: 400, body: { errors: [{ path: 'aggregatedStatus[0].health' }] } });
  expect((await api(host.url, 'POST', 'resourcebindings/default/nothing/status', { aggregatedStatus: [] })).status).toBe(404);
}, 40_000);
