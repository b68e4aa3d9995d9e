import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { achievedRate, applyObjects, binding, cluster, ledger, sleep } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

/**
 * A 12-cluster fleet, one failed cluster with 30 bindings that do not tolerate it, two that tolerate it for
 * 3 s, one that tolerates it forever: evictions at the configured rate (5/s here), the tolerating ones later,
 * the last one never.
 */
let host: HostProcess;
beforeAll(async () => {
  host = await startHostProcess({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '5' });
}, 30_000);
afterAll(async () => host?.stop());

describe('paced eviction on a running host', () => {
  it('evicts at the configured rate, lets tolerating bindings wait, and keeps the forever-tolerating one', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `m${i + 1}`);
    await applyObjects(
      host.url,
      names.map((n) => cluster(n)),
    );
    const tolerateFor = (seconds?: number) => ({
      placement: {
        clusterTolerations: [{ key: 'test/failed', operator: 'Exists', effect: 'NoExecute', ...(seconds !== undefined ? { tolerationSeconds: seconds } : {}) }],
      },
    });
    await applyObjects(host.url, [
      ...Array.from({ length: 30 }, (_, i) => binding(`app${i}`, ['m1'])),
      binding('patient1', ['m1'], tolerateFor(3)),
      binding('patient2', ['m1'], tolerateFor(3)),
      binding('stays', ['m1'], tolerateFor()),
    ]);
    const taintedAt = Date.now();
    await applyObjects(host.url, [cluster('m1', true)]);
    const fleet = await waitFor(async () => {
      const body = (await api(host.url, 'GET', 'fleet')).body;
      return body.faulty === 1 ? body : undefined;
    }, 5000);
    expect(fleet).toMatchObject({ total: 12, faulty: 1, tier: 'primary', rate: 5, failoverEnabled: true, paused: false });

    const rows = await waitFor(
      async () => {
        const items = await ledger(host.url, '?cluster=m1');
        return items.length === 32 && items.every((i) => i.state === 'done') ? items : undefined;
      },
      20_000,
      200,
    );
    const rate = achievedRate(rows);
    expect(rate).toBeGreaterThan(5 * 0.9);
    expect(rate).toBeLessThan(5 * 1.1);
    for (const patient of rows.filter((r) => r.binding.name.startsWith('patient'))) {
      expect(Date.parse(patient.executedAt!) - taintedAt).toBeGreaterThanOrEqual(3000);
    }
    expect(rows.map((r) => r.binding.name)).not.toContain('stays');

    const moved = (await api(host.url, 'GET', 'resourcebindings/default/app0')).body;
    expect(moved.spec.clusters.map((c: { name: string }) => c.name)).not.toContain('m1');
    expect(moved.spec.gracefulEvictionTasks).toEqual([
      expect.objectContaining({ fromCluster: 'm1', purgeMode: 'Gracefully', replicas: 2, reason: 'TaintUntolerated', producer: 'TaintManager' }),
    ]);
    const stays = (await api(host.url, 'GET', 'resourcebindings/default/stays')).body;
    expect(stays.spec.clusters).toEqual([{ name: 'm1', replicas: 2 }]);
    const events = (await api(host.url, 'GET', 'events?kind=ResourceBinding&name=default/app0')).body.items;
    expect(events.map((e: { reason: string }) => e.reason)).toContain('Evicted');
  });

  it('pause stops evictions within seconds and resume restarts them', async () => {
    expect((await api(host.url, 'POST', 'failover/pause')).body).toEqual({ paused: true, failoverEnabled: true });
    await applyObjects(host.url, [cluster('p1'), ...Array.from({ length: 5 }, (_, i) => binding(`paused${i}`, ['p1']))]);
    await applyObjects(host.url, [cluster('p1', true)]);
    await sleep(3500);
    // Only this test's bindings: the scheduler may have placed one left over from the test above on p1.
    const ours = (rows: Awaited<ReturnType<typeof ledger>>) => rows.filter((r) => r.binding.name.startsWith('paused'));
    const waiting = ours(await ledger(host.url, '?cluster=p1'));
    expect(waiting).toHaveLength(5);
    expect(waiting.every((r) => r.state === 'pending')).toBe(true);
    expect((await api(host.url, 'GET', 'fleet')).body).toMatchObject({ paused: true });
    expect((await api(host.url, 'GET', 'fleet')).body.pending).toBeGreaterThanOrEqual(5);
    await api(host.url, 'POST', 'failover/resume');
    await waitFor(async () => (ours(await ledger(host.url, '?cluster=p1&state=done')).length === 5 ? true : undefined), 10_000, 200);
  });
});
