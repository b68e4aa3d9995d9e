import { describe, expect, it } from 'vitest';
import { drainCluster, uncordonCluster } from '../../shared/controllers/drain';
import { runPacer, setPaused } from '../../shared/controllers/pacer';
import type { EvictionMessage } from '../../shared/controllers/ports';
import { manageCluster } from '../../shared/controllers/taintManager';
import { bindingKey } from '../../shared/failover/bindingModel';
import { CORDON_TAINT } from '../../shared/failover/drain';
import { binding, cluster } from '../helpers/fleet';
import { applyTo, second } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane, takeEvictions } from '../helpers/memoryPlane';

/** Drain and uncordon on the in-memory ports: cordon, paced evacuation through the ledger, idempotence. */

const web = (n: number) => binding(`web-${n}`, ['m1'], n === 0 ? { failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 0 } } } : {});
const rows = async (m: MemoryPlane) => (await m.ledger.scanEvictions({ cluster: 'm1' })).map((r) => r.record);
const placedOn = async (m: MemoryPlane, name: string) =>
  (await m.bindings.get(bindingKey({ kind: 'ResourceBinding', namespace: 'default', name })))?.value.spec.clusters?.map((c) => c.name);

async function fleet(settings: Record<string, string> = {}) {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: '2', ...settings });
  await applyTo(m, [cluster('m1'), cluster('m2'), cluster('m3'), ...Array.from({ length: 6 }, (_, n) => web(n))]);
  return m;
}

async function run(m: MemoryPlane, seconds: number) {
  const queued: EvictionMessage[] = [];
  const ran = [];
  for (let i = 0; i < seconds; i++) ran.push(...(await second(m, queued)));
  return ran;
}

describe('drain', () => {
  it('cordons, then moves every binding at the global rate with each purge mode, even with the Failover gate off', async () => {
    const m = await fleet({ FAILOVER_ENABLED: 'false' });
    const started = m.clock.now().getTime();
    expect(await drainCluster(m.plane, 'm1')).toEqual({ cluster: 'm1', cordoned: true, planned: 6, alreadyDecided: 0 });
    const stored = (await m.clusters.get('m1'))!.value;
    expect(stored.taints).toEqual([expect.objectContaining({ ...CORDON_TAINT, manual: true })]);
    expect((await rows(m)).map((r) => `${r.reason} ${r.state} ${r.purgeMode}`).sort()).toEqual([
      'Drain pending Directly',
      ...Array<string>(5).fill('Drain pending Gracefully'),
    ]);

    const ran = await run(m, 8);
    expect(ran.map((r) => r.outcome)).toEqual(Array<string>(6).fill('evicted'));
    // Paced: 2/s configured, so six evictions span 2.5 s.
    const slots = ran.map((r) => Date.parse(r.message.slot) - started).sort((a, b) => a - b);
    expect(slots[5] - slots[0]).toBe(2500);
    for (let n = 0; n < 6; n++) expect(await placedOn(m, `web-${n}`)).not.toContain('m1');
    const tasks = (await m.bindings.get(bindingKey({ kind: 'ResourceBinding', namespace: 'default', name: 'web-1' })))!.value.spec.gracefulEvictionTasks;
    expect(tasks).toEqual([expect.objectContaining({ fromCluster: 'm1', reason: 'Drain', producer: 'ClusterDrain', purgeMode: 'Gracefully' })]);
    // The cordon keeps the scheduler away: nothing went back to m1.
    expect((await rows(m)).every((r) => r.state === 'done')).toBe(true);

    // Idempotent: a second drain finds nothing left to move.
    expect(await drainCluster(m.plane, 'm1')).toEqual({ cluster: 'm1', cordoned: false, planned: 0, alreadyDecided: 0 });
    const events = (await m.events.list({ kind: 'Cluster', name: 'm1', limit: 100 })).map((e) => e.reason);
    expect(events.filter((r) => r === 'Cordoned')).toHaveLength(1);
    expect(events).toContain('DrainStarted');
  });

  it('obeys pause; uncordon abandons the waiting rows and removes the taint', async () => {
    const m = await fleet();
    await setPaused(m.plane, true);
    await drainCluster(m.plane, 'm1');
    expect(await run(m, 3)).toEqual([]);
    expect((await rows(m)).map((r) => r.state)).toEqual(Array<string>(6).fill('pending'));

    expect(await uncordonCluster(m.plane, 'm1')).toEqual({ cluster: 'm1', uncordoned: true, abandoned: 6, abandonedAtSlot: 0 });
    expect((await m.clusters.get('m1'))!.value.taints).toEqual([]);
    await setPaused(m.plane, false);
    expect(await run(m, 3)).toEqual([]);
    expect(await uncordonCluster(m.plane, 'm1')).toEqual({ cluster: 'm1', uncordoned: false, abandoned: 0, abandonedAtSlot: 0 });
    for (let n = 0; n < 6; n++) expect(await placedOn(m, `web-${n}`)).toEqual(['m1']);
  });

  it('a scheduled drain row whose cluster was uncordoned meanwhile is abandoned by the worker, not executed', async () => {
    const m = await fleet();
    await drainCluster(m.plane, 'm1');
    const queued: EvictionMessage[] = [];
    await runPacer(m.plane); // the pacer schedules; the messages wait in the queue
    queued.push(...takeEvictions(m).map((s) => s.message));
    expect(queued.length).toBeGreaterThan(0);
    const ended = await uncordonCluster(m.plane, 'm1');
    expect(ended.abandonedAtSlot).toBe(queued.length);
    expect(ended.abandoned + ended.abandonedAtSlot).toBe(6);
    const ran = [];
    for (let i = 0; i < 5; i++) ran.push(...(await second(m, queued)));
    expect(new Set(ran.map((r) => r.outcome))).toEqual(new Set(['recovered']));
    expect((await rows(m)).every((r) => r.state === 'abandoned')).toBe(true);
  });

  it('takes over a failure’s waiting rows, and a recovery does not end the drain', async () => {
    const m = await fleet({ FAILOVER_ENABLED: 'false' });
    await applyTo(m, [{ ...cluster('m1'), spec: { taints: [{ key: 'test/failed', effect: 'NoExecute' }] } }]);
    await manageCluster(m.plane, 'm1');
    expect((await rows(m)).map((r) => r.reason)).toEqual(Array<string>(6).fill('TaintUntolerated'));
    expect(await run(m, 2)).toEqual([]); // the gate holds a failure's evictions

    expect(await drainCluster(m.plane, 'm1')).toMatchObject({ cordoned: true, planned: 6 });
    expect((await rows(m)).map((r) => r.reason)).toEqual(Array<string>(6).fill('Drain'));
    // The cluster recovers (the failure's taint goes): the taint manager leaves the drain's rows alone.
    await applyTo(m, [{ ...cluster('m1'), spec: { taints: [CORDON_TAINT] } }]);
    expect((await manageCluster(m.plane, 'm1')).abandoned).toBe(0);
    expect((await run(m, 6)).map((r) => r.outcome)).toEqual(Array<string>(6).fill('evicted'));
  });

  it('an unknown cluster is a 404', async () => {
    const m = await fleet();
    await expect(drainCluster(m.plane, 'nope')).rejects.toMatchObject({ status: 404 });
    await expect(uncordonCluster(m.plane, 'nope')).rejects.toMatchObject({ status: 404 });
  });
});
