import { afterAll, beforeAll, expect, it } from 'vitest';
import { applyObjects, binding, cluster, ledger, sleep } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

let host: HostProcess;
beforeAll(async () => {
  host = await startHostProcess({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '2' });
}, 30_000);
afterAll(async () => host?.stop());

it('abandons the rest when the cluster recovers mid-way, and none of them ever evicts', async () => {
  await applyObjects(
    host.url,
    Array.from({ length: 12 }, (_, i) => cluster(`r${i + 1}`)),
  );
  await applyObjects(
    host.url,
    Array.from({ length: 20 }, (_, i) => binding(`svc${i}`, ['r1'])),
  );
  await applyObjects(host.url, [cluster('r1', true)]);
  await waitFor(async () => ((await ledger(host.url, '?state=done')).length >= 3 ? true : undefined), 10_000, 50);
  await applyObjects(host.url, [cluster('r1', false)]);
  const settled = await waitFor(
    async () => {
      const rows = await ledger(host.url, '?cluster=r1');
      return rows.every((r) => r.state === 'done' || r.state === 'abandoned') ? rows : undefined;
    },
    10_000,
    100,
  );
  const done = settled.filter((r) => r.state === 'done').length;
  expect(done).toBeGreaterThanOrEqual(3);
  expect(done).toBeLessThan(20);
  expect(settled.filter((r) => r.state === 'abandoned').every((r) => r.message?.includes('recovered'))).toBe(true);
  await sleep(3000);
  const later = await ledger(host.url, '?cluster=r1&state=done');
  expect(later.length).toBe(done);
  // The bindings whose eviction was abandoned still run on r1.
  const stayed = settled.filter((r) => r.state === 'abandoned').map((r) => r.binding.name);
  for (const name of stayed.slice(0, 3)) {
    expect((await api(host.url, 'GET', `resourcebindings/default/${name}`)).body.spec.clusters).toEqual([{ name: 'r1', replicas: 2 }]);
  }
  const events = (await api(host.url, 'GET', 'events?kind=Cluster&name=r1')).body.items.map((e: { reason: string }) => e.reason);
  expect(events).toEqual(expect.arrayContaining(['EvictionsEnqueued', 'EvictionsAbandoned']));
});
