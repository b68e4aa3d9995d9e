import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';
import { achievedRate, applyObjects, binding, cluster, ledger, sleep } from '../helpers/fleet';

describe('fleet-health tiers', () => {
  let host: HostProcess;
  beforeAll(async () => {
    host = await startHostProcess({ FAILOVER_ENABLED: 'true', RESOURCE_EVICTION_RATE: '10', SECONDARY_RESOURCE_EVICTION_RATE: '2' });
  }, 30_000);
  afterAll(async () => host?.stop());

  it('halts a small fleet with 7 of 10 failed, then slows to the secondary rate with 12 of 20', async () => {
    await applyObjects(host.url, Array.from({ length: 10 }, (_, i) => cluster(`t${i + 1}`, i < 7)));
    await applyObjects(host.url, Array.from({ length: 12 }, (_, i) => binding(`w${i}`, ['t1'])));
    await waitFor(async () => ((await ledger(host.url, '?cluster=t1')).length === 12 ? true : undefined), 10_000, 100);
    await sleep(3000);
    expect((await api(host.url, 'GET', 'fleet')).body).toMatchObject({ total: 10, faulty: 7, tier: 'halted', rate: 0, pending: 12 });
    expect(await ledger(host.url, '?state=done')).toHaveLength(0);

    // Ten more clusters, five of them failed: 12 of 20 is above 55 % in a large fleet.
    await applyObjects(host.url, Array.from({ length: 10 }, (_, i) => cluster(`t${i + 11}`, i < 5)));
    await waitFor(async () => ((await api(host.url, 'GET', 'fleet')).body.tier === 'secondary' ? true : undefined), 5000, 100);
    const rows = await waitFor(async () => {
      const done = await ledger(host.url, '?cluster=t1&state=done');
      return done.length >= 8 ? done : undefined;
    }, 15_000, 200);
    const rate = achievedRate(rows);
    expect(rate).toBeGreaterThan(2 * 0.85);
    expect(rate).toBeLessThan(2 * 1.15);
  });
});

describe('the Failover gate', () => {
  let host: HostProcess;
  beforeAll(async () => {
    host = await startHostProcess({ RESOURCE_EVICTION_RATE: '10' });
  }, 30_000);
  afterAll(async () => host?.stop());

  it('evicts nothing when FAILOVER_ENABLED is off, whoever added the taint', async () => {
    await applyObjects(host.url, [...Array.from({ length: 4 }, (_, i) => cluster(`g${i + 1}`, i === 0)), ...Array.from({ length: 3 }, (_, i) => binding(`gated${i}`, ['g1']))]);
    await waitFor(async () => ((await ledger(host.url, '?cluster=g1')).length === 3 ? true : undefined), 10_000, 100);
    await sleep(3000);
    expect((await ledger(host.url, '?cluster=g1')).map((r) => r.state)).toEqual(['pending', 'pending', 'pending']);
    expect((await api(host.url, 'GET', 'fleet')).body).toMatchObject({ failoverEnabled: false, pending: 3, scheduled: 0 });
  });
});
