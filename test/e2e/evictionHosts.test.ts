import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { achievedRate, applyObjects, binding, cluster, ledger } from '../helpers/fleet';
import { api, startHostProcess, waitFor } from '../helpers/hostProcess';

let env: TestStorage;
beforeAll(async () => {
  env = await startTestStorage();
});
afterAll(async () => env.close());

it('two hosts sharing one storage account keep the global rate; killing one mid-way loses and duplicates nothing', async () => {
  const settings = { AzureWebJobsStorage: env.azurite.connectionString, FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '5', LOCAL_QUEUE_HOLD_SECONDS: '6' };
  const [a, b] = await Promise.all([startHostProcess(settings), startHostProcess(settings)]);
  try {
    await applyObjects(
      a.url,
      Array.from({ length: 12 }, (_, i) => cluster(`h${i + 1}`)),
    );
    await applyObjects(
      a.url,
      Array.from({ length: 30 }, (_, i) => binding(`job${i}`, ['h1', 'h2'])),
    );
    await applyObjects(a.url, [cluster('h1', true)]);
    await waitFor(async () => ((await ledger(b.url, '?state=done')).length >= 10 ? true : undefined), 15_000, 50);
    expect(await a.stop('SIGKILL')).toBe(null);

    const rows = await waitFor(
      async () => {
        const items = await ledger(b.url, '?cluster=h1');
        return items.length === 30 && items.every((i) => i.state === 'done') ? items : undefined;
      },
      40_000,
      250,
    );
    // Rate over the evictions made before the kill, while both hosts ran.
    const beforeKill = rows.sort((x, y) => Date.parse(x.executedAt!) - Date.parse(y.executedAt!)).slice(0, 10);
    const rate = achievedRate(beforeKill);
    expect(rate).toBeGreaterThan(5 * 0.85);
    expect(rate).toBeLessThan(5 * 1.15);
    for (let i = 0; i < 30; i++) {
      const spec = (await api(b.url, 'GET', `resourcebindings/default/job${i}`)).body.spec;
      const names = spec.clusters.map((c: { name: string }) => c.name);
      expect(names).toContain('h2');
      expect(names).not.toContain('h1');
      expect(spec.gracefulEvictionTasks.filter((t: { fromCluster: string }) => t.fromCluster === 'h1')).toHaveLength(1);
    }
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}, 90_000);
