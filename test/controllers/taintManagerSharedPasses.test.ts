import { describe, expect, it, vi } from 'vitest';
import { offerShortPass } from '../../shared/controllers/pacer';
import { handleTaintManagerMessage, manageCluster, resyncTaintManager } from '../../shared/controllers/taintManager';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * Taint-manager messages handled at once (a host takes them from the queue in one batch) share the passes
 * that do not depend on their cluster: one scan of the blocked rows, one listing of the bindings awaiting a
 * failback. Each message still gets a pass that started after its change was stored.
 */

const apply = (m: MemoryPlane, objects: unknown[]) => applyTo(m, objects);

/** `count` failing clusters with a binding each, and one blocked row on `z` (a binding with nowhere to go). */
async function fleetWithBlockedRow(count: number) {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
  const failing = Array.from({ length: count }, (_, i) => `f${i}`);
  await apply(m, [
    cluster('z', true),
    cluster('spare'),
    ...failing.map((name) => cluster(name, true)),
    binding('stuck', ['z']),
    ...failing.map((name) => binding(`on-${name}`, [name], { placement: { clusterAffinity: { clusterNames: [name, 'spare'] } } })),
  ]);
  await manageCluster(m.plane, 'z');
  const [row] = await m.ledger.scanEvictions({ cluster: 'z' });
  await m.ledger.updateEviction({ ...row.record, state: 'blocked' }, row.etag);
  const blockedScans = vi.spyOn(m.ledger, 'scanEvictions');
  const flaggedListings = vi.spyOn(m.bindings, 'listFlagged');
  const scans = () => blockedScans.mock.calls.filter(([filter]) => filter.state === 'blocked').length;
  return { m, failing, scans, listings: () => flaggedListings.mock.calls.length };
}

describe('taint-manager messages share the cluster-independent passes', () => {
  it('ten messages at once: each cluster is planned, the blocked row is retried, with one scan and one listing', async () => {
    const { m, failing, scans, listings } = await fleetWithBlockedRow(10);
    const outcomes = await Promise.all(failing.map((name) => handleTaintManagerMessage(m.plane, { cluster: name, reason: 'taints-changed' })));
    expect(outcomes.map((o) => o.planned)).toEqual(failing.map(() => 1));
    expect((await m.ledger.scanEvictions({ cluster: 'z' })).map((r) => r.record.state)).toEqual(['pending']);
    expect(scans()).toBe(1);
    expect(listings()).toBe(1);
  });

  it('a message handled after the last pass began gets a pass of its own', async () => {
    const { m, failing, scans, listings } = await fleetWithBlockedRow(2);
    await handleTaintManagerMessage(m.plane, { cluster: failing[0], reason: 'taints-changed' });
    await handleTaintManagerMessage(m.plane, { cluster: failing[1], reason: 'taints-changed' });
    expect(scans()).toBe(2);
    expect(listings()).toBe(2);
  });

  it('a message whose blocked-rows pass fails fails too, and its redelivery retries the blocked row', async () => {
    const { m, failing, scans } = await fleetWithBlockedRow(2);
    m.ledger.failNext('scanEvictions', new Error('storage down'));
    await expect(handleTaintManagerMessage(m.plane, { cluster: failing[0], reason: 'taints-changed' })).rejects.toThrow('storage down');
    // Redelivered: the pass runs again and the blocked row is retried.
    await handleTaintManagerMessage(m.plane, { cluster: failing[0], reason: 'taints-changed' });
    expect(scans()).toBe(2);
    expect((await m.ledger.scanEvictions({ cluster: 'z' })).map((r) => r.record.state)).toEqual(['pending']);
  });
});

describe('one cluster is planned by one pass at a time', () => {
  it('a resync that reaches a cluster while a message plans it waits, then finds the rows decided: they are written once', async () => {
    const { m, failing } = await fleetWithBlockedRow(1);
    const recorded = vi.spyOn(m.ledger, 'recordEvictions');
    let resync: ReturnType<typeof resyncTaintManager> | undefined;
    // The message's planning is about to write its rows: the resync starts now and runs as far as it can.
    m.ledger.faults.beforeWrite = async (method) => {
      if (method !== 'recordEvictions' || resync) return;
      resync = resyncTaintManager(m.plane);
      await new Promise((r) => setTimeout(r, 20));
    };
    const outcome = await handleTaintManagerMessage(m.plane, { cluster: failing[0], reason: 'taints-changed' });
    const resynced = await resync!;
    expect(recorded.mock.calls.filter(([rows]) => rows.some((r) => r.record.cluster === failing[0]))).toHaveLength(1);
    expect(outcome.planned).toBe(1);
    expect(resynced.planned).toBe(0);
    expect((await m.ledger.scanEvictions({ cluster: failing[0] })).map((r) => r.record.state)).toEqual(['pending']);
  });
});

describe('the resync while failures are being planned here', () => {
  it('waits for the next tick, once: the one after it plans as always', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await apply(m, [cluster('f1', true), cluster('spare'), binding('app', ['f1'])]);
    const listings = vi.spyOn(m.ledger, 'listClusterRows');
    // The planning loop runs here (it offers its short pass while it does).
    offerShortPass(m.plane, async () => ({ tier: 'primary', rate: 10, scheduled: 0 }));
    try {
      expect(await resyncTaintManager(m.plane)).toMatchObject({ planned: 0, deferred: true });
      expect(listings).not.toHaveBeenCalled();
      expect(await m.ledger.listEvictions('f1')).toEqual([]);
      expect(await resyncTaintManager(m.plane)).toMatchObject({ planned: 1 });
      expect(listings).toHaveBeenCalled();
    } finally {
      offerShortPass(m.plane, undefined);
    }
    // With no planning here, every resync runs.
    const other = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await apply(other, [cluster('f1', true), cluster('spare'), binding('app', ['f1'])]);
    expect(await resyncTaintManager(other.plane)).toMatchObject({ planned: 1 });
  });
});
