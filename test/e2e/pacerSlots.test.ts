import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, binding, cluster, ledger } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

/**
 * One host at 4 evictions/s: 30 bindings that leave a failed cluster at once and 3 that tolerate it for 3 s
 * (due while the 30 are still leaving). The pacer's slots are one series across its ticks and messages, so
 * the 33 evictions take 32 intervals: 8.0 s from the first to the last.
 */
let host: HostProcess;
beforeAll(async () => {
  host = await startHostProcess({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '4' });
}, 30_000);
afterAll(async () => host?.stop());

describe('pacer slots on one host', () => {
  it('evicts 33 bindings at 4/s in 8.0 s, the tolerating ones after their toleration', async () => {
    await applyObjects(
      host.url,
      Array.from({ length: 12 }, (_, i) => cluster(`m${i + 1}`)),
    );
    const patient = { placement: { clusterTolerations: [{ key: 'test/failed', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 3 }] } };
    await applyObjects(host.url, [
      ...Array.from({ length: 30 }, (_, i) => binding(`free${i}`, ['m1'])),
      ...Array.from({ length: 3 }, (_, i) => binding(`patient${i}`, ['m1'], patient)),
    ]);
    const taintedAt = Date.now();
    await applyObjects(host.url, [cluster('m1', true)]);
    await waitFor(async () => ((await api(host.url, 'GET', 'fleet')).body.faulty === 1 ? true : undefined), 5000);

    const rows = await waitFor(
      async () => {
        const items = await ledger(host.url, '?cluster=m1');
        return items.length === 33 && items.every((i) => i.state === 'done') ? items : undefined;
      },
      30_000,
      200,
    );
    const executed = rows.map((r) => Date.parse(r.executedAt!)).sort((a, b) => a - b);
    const spanMs = executed[32] - executed[0];
    expect(spanMs).toBeGreaterThanOrEqual(8000 - 250);
    expect(spanMs).toBeLessThanOrEqual(8000 + 250);
    for (const r of rows.filter((row) => row.binding.name.startsWith('patient'))) {
      expect(Date.parse(r.executedAt!) - taintedAt).toBeGreaterThanOrEqual(3000);
    }
  }, 60_000);
});
