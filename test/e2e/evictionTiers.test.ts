import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TableLedger } from '../../shared/store/ledgerTable';
import { TABLES } from '../../shared/store/tableStorage';
import { startTestStorage, TestStorage } from '../helpers/azurite';
import { achievedRate, applyObjects, binding, cluster, ledger, sleep } from '../helpers/fleet';
import { api, HostProcess, startHostProcess, waitFor } from '../helpers/hostProcess';

describe('fleet-health tiers', () => {
  // Storage outside the host, so that the test can read the pacer's own row (`~pacer`: the tier it acts on).
  let env: TestStorage;
  let host: HostProcess;
  beforeAll(async () => {
    env = await startTestStorage();
    host = await startHostProcess({
      AzureWebJobsStorage: env.azurite.connectionString,
      FAILOVER_ENABLED: 'true',
      RESOURCE_EVICTION_RATE: '10',
      SECONDARY_RESOURCE_EVICTION_RATE: '2',
    });
  }, 30_000);
  afterAll(async () => {
    await host?.stop();
    await env?.close();
  });

  it('halts a small fleet with 7 of 10 failed, then slows to the secondary rate with 12 of 20', async () => {
    await applyObjects(
      host.url,
      Array.from({ length: 10 }, (_, i) => cluster(`t${i + 1}`, i < 7)),
    );
    // The bindings come once the pacer has seen the whole fleet (its own row says halted). The fleet was
    // empty (primary tier) when the host started, and a pacer that judged the fleet from its cached snapshot
    // (up to a second old) scheduled the first rows of this halted fleet at the primary rate; the worker's
    // halt check, a tick behind, then let them through when the next tick was late. The pacer now judges the
    // fleet afresh when it has rows to claim (test/controllers/pacerFleetSnapshot.test.ts); this test is about the halt.
    const pacer = new TableLedger(env.storage.table(TABLES.ledger), env.storage.table(TABLES.journal));
    await waitFor(
      async () => {
        const { state } = await pacer.getPacerState();
        return state.tier === 'halted' && state.total === 10 && state.unhealthy === 7 ? true : undefined;
      },
      10_000,
      100,
    );
    await applyObjects(
      host.url,
      Array.from({ length: 12 }, (_, i) => binding(`w${i}`, ['t1'])),
    );
    await waitFor(async () => ((await ledger(host.url, '?cluster=t1')).length === 12 ? true : undefined), 10_000, 100);
    await sleep(3000);
    expect((await api(host.url, 'GET', 'fleet')).body).toMatchObject({ total: 10, faulty: 7, tier: 'halted', rate: 0, pending: 12, scheduled: 0 });
    expect(await ledger(host.url, '?state=done')).toHaveLength(0);
    // Never scheduled at all: a row the worker put back (halted at its slot) carries a message.
    expect((await ledger(host.url, '?cluster=t1')).map((r) => [r.state, r.scheduledFor, r.message])).toEqual(
      Array.from({ length: 12 }, () => ['pending', null, null]),
    );

    // Ten more clusters, five of them failed: 12 of 20 is above 55 % in a large fleet.
    await applyObjects(
      host.url,
      Array.from({ length: 10 }, (_, i) => cluster(`t${i + 11}`, i < 5)),
    );
    await waitFor(async () => ((await api(host.url, 'GET', 'fleet')).body.tier === 'secondary' ? true : undefined), 5000, 100);
    const rows = await waitFor(
      async () => {
        const done = await ledger(host.url, '?cluster=t1&state=done');
        return done.length >= 8 ? done : undefined;
      },
      15_000,
      200,
    );
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
    await applyObjects(host.url, [
      ...Array.from({ length: 4 }, (_, i) => cluster(`g${i + 1}`, i === 0)),
      ...Array.from({ length: 3 }, (_, i) => binding(`gated${i}`, ['g1'])),
    ]);
    await waitFor(async () => ((await ledger(host.url, '?cluster=g1')).length === 3 ? true : undefined), 10_000, 100);
    await sleep(3000);
    expect((await ledger(host.url, '?cluster=g1')).map((r) => r.state)).toEqual(['pending', 'pending', 'pending']);
    expect((await api(host.url, 'GET', 'fleet')).body).toMatchObject({ failoverEnabled: false, pending: 3, scheduled: 0 });
  });
});
