import { describe, expect, it } from 'vitest';
import { executeEviction, executeEvictionBatch, WorkerOutcome } from '../../shared/controllers/evictionWorker';
import { MAX_EVICTIONS_PER_MESSAGE, runPacer, setPaused } from '../../shared/controllers/pacer';
import type { EvictionMessage } from '../../shared/controllers/ports';
import { manageCluster, resyncTaintManager } from '../../shared/controllers/taintManager';
import { binding, cluster } from '../helpers/fleet';
import { applyTo, second } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane, takeEvictions } from '../helpers/memoryPlane';

/**
 * The cluster-failover path on the in-memory ports, table-driven: taint manager → ledger → pacer → queue →
 * worker → binding. Fast (no Azurite); the adapters behave as the Table ones (test/integration/ports.contract.test.ts).
 */

const fleet = applyTo;

const rowsOf = async (m: MemoryPlane, name: string) => (await m.ledger.scanEvictions({ cluster: name })).map((r) => r.record);

describe('taint manager: who must leave a faulty cluster', () => {
  const cases: Array<{ name: string; spec: Record<string, unknown>; taint?: string; planned: number; tolerated: number }> = [
    { name: 'NoExecute, no toleration: leaves now', spec: {}, planned: 1, tolerated: 0 },
    {
      name: 'NoExecute tolerated forever: stays',
      spec: { placement: { clusterTolerations: [{ key: 'test/failed', operator: 'Exists', effect: 'NoExecute' }] } },
      planned: 0,
      tolerated: 1,
    },
    {
      name: 'NoExecute tolerated for 60 s: leaves then',
      spec: { placement: { clusterTolerations: [{ key: 'test/failed', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 }] } },
      planned: 1,
      tolerated: 0,
    },
    { name: 'PreferNoExecute without failover.cluster: stays', spec: {}, taint: 'PreferNoExecute', planned: 0, tolerated: 1 },
    {
      name: 'PreferNoExecute with failover.cluster: leaves',
      spec: { failover: { cluster: { purgeMode: 'Directly', tolerationSeconds: 0 } } },
      taint: 'PreferNoExecute',
      planned: 1,
      tolerated: 0,
    },
  ];
  it.each(cases)('$name', async ({ spec, taint, planned, tolerated }) => {
    const m = memoryPlane();
    const failed = { ...cluster('m1'), spec: { taints: [{ key: 'test/failed', effect: taint ?? 'NoExecute' }] } };
    await fleet(m, [failed, cluster('m2'), binding('web', ['m1'], spec)]);
    const outcome = await manageCluster(m.plane, 'm1');
    expect({ planned: outcome.planned, tolerated: outcome.tolerated }).toEqual({ planned, tolerated });
    expect((await rowsOf(m, 'm1')).map((r) => r.state)).toEqual(planned ? ['pending'] : []);
    // Re-running never decides twice.
    expect((await manageCluster(m.plane, 'm1')).planned).toBe(0);
  });
});

describe('eviction worker outcomes', () => {
  const cases: Array<{
    name: string;
    setup?: (m: MemoryPlane) => Promise<void>;
    affinity?: string[];
    outcome: WorkerOutcome;
    row: string;
    placedOn: string[];
    tasks: string[];
  }> = [
    {
      name: 'evicts: the cluster leaves, a task keeps the old copy, the scheduler places it again',
      outcome: 'evicted',
      row: 'done',
      placedOn: ['m2'],
      tasks: ['m1'],
    },
    {
      name: 'postponed while paused: the row waits, pending',
      setup: (m) => setPaused(m.plane, true),
      outcome: 'postponed',
      row: 'pending',
      placedOn: ['m1'],
      tasks: [],
    },
    {
      name: 'left: the binding no longer runs there',
      setup: async (m) => void (await fleet(m, [binding('web', ['m2'], { placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } } })])),
      outcome: 'left',
      row: 'abandoned',
      placedOn: ['m2'],
      tasks: [],
    },
    { name: 'blocked: nowhere to go, it stays', affinity: ['m1'], outcome: 'blocked', row: 'blocked', placedOn: ['m1'], tasks: [] },
  ];
  it.each(cases)('$name', async ({ setup, affinity, outcome, row, placedOn, tasks }) => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await fleet(m, [
      cluster('m1', true),
      cluster('m2'),
      cluster('m3'),
      binding('web', ['m1'], { placement: { clusterAffinity: { clusterNames: affinity ?? ['m1', 'm2'] } } }),
    ]);
    await manageCluster(m.plane, 'm1');
    // The pacer claims the row first; what happens before its slot decides the outcome.
    await runPacer(m.plane);
    const [{ message }] = takeEvictions(m);
    await setup?.(m);
    m.clock.set(message.slot);
    expect(await executeEviction(m.plane, message)).toBe(outcome);
    expect((await rowsOf(m, 'm1')).map((r) => r.state)).toEqual([row]);
    const stored = (await m.bindings.get('rb:default:web'))!.value;
    expect(stored.spec.clusters?.map((c) => c.name)).toEqual(placedOn);
    expect((stored.spec.gracefulEvictionTasks ?? []).map((t) => t.fromCluster)).toEqual(tasks);
    // A redelivered message changes nothing more.
    const before = JSON.stringify([await rowsOf(m, 'm1'), (await m.bindings.get('rb:default:web'))!.value.spec]);
    await executeEviction(m.plane, message);
    expect(JSON.stringify([await rowsOf(m, 'm1'), (await m.bindings.get('rb:default:web'))!.value.spec])).toBe(before);
  });

  it('paces a cluster of 12 bindings at the configured rate and evicts each exactly once', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '2' });
    const names = Array.from({ length: 12 }, (_, i) => `w${i}`);
    await fleet(m, [
      cluster('m1', true),
      cluster('m2'),
      cluster('m3'),
      ...names.map((n) => binding(n, ['m1'], { placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } } })),
    ]);
    await manageCluster(m.plane, 'm1');
    const slots: number[] = [];
    const queued: EvictionMessage[] = [];
    for (let tick = 0; tick < 20 && slots.length < names.length; tick++) {
      for (const { message, outcome } of await second(m, queued)) {
        expect(outcome).toBe('evicted');
        slots.push(Date.parse(message.slot));
      }
    }
    expect(slots).toHaveLength(12);
    // Slots 1/rate apart: 0.5 s.
    for (let i = 1; i < slots.length; i++) expect(slots[i] - slots[i - 1]).toBe(500);
    expect((await rowsOf(m, 'm1')).every((r) => r.state === 'done')).toBe(true);
    for (const n of names) expect((await m.bindings.get(`rb:default:${n}`))!.value.spec.gracefulEvictionTasks).toHaveLength(1);
  });
});

describe('seed 002: failover.cluster.gracePeriodSeconds', () => {
  it('gives the graceful-eviction task the grace period the decision froze', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await fleet(m, [
      cluster('m1', true),
      cluster('m2'),
      binding('web', ['m1'], {
        placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } },
        failover: { cluster: { purgeMode: 'Graciously', gracePeriodSeconds: 100, tolerationSeconds: 0 } },
      }),
    ]);
    await manageCluster(m.plane, 'm1');
    const queued: EvictionMessage[] = [];
    const ran = [];
    for (let tick = 0; tick < 5 && ran.length === 0; tick++) ran.push(...(await second(m, queued)));
    expect(ran.map((r) => r.outcome)).toEqual(['evicted']);
    expect((await m.bindings.get('rb:default:web'))!.value.spec.gracefulEvictionTasks).toMatchObject([
      { fromCluster: 'm1', purgeMode: 'Gracefully', gracePeriodSeconds: 100 },
    ]);
  });
});

describe('eviction messages', () => {
  it('carry the slots less than a second apart, at most 16 a message, in slot order', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '20' });
    const names = Array.from({ length: 70 }, (_, i) => `w${String(i).padStart(2, '0')}`);
    await fleet(m, [cluster('m1', true), cluster('m2'), ...names.map((n) => binding(n, ['m1']))]);
    await manageCluster(m.plane, 'm1');
    await runPacer(m.plane);
    const messages = m.evictions.takeAll();
    const slots = messages.map((sent) => sent.message.evictions.map((e) => Date.parse(e.slot)));
    // A 3 s window at 20/s: 61 slots, in 4 messages of at most 16, each spanning under a second.
    expect(slots.flat()).toHaveLength(61);
    expect(messages.length).toBeLessThanOrEqual(5);
    for (const group of slots) {
      expect(group.length).toBeLessThanOrEqual(MAX_EVICTIONS_PER_MESSAGE);
      expect(group[group.length - 1] - group[0]).toBeLessThan(1000);
      expect([...group].sort((a, b) => a - b)).toEqual(group);
    }
    // Visible SLOT_LEAD_SECONDS (2 s) before its first slot, in whole seconds.
    for (const sent of messages) {
      const first = Date.parse(sent.message.evictions[0].slot);
      expect(sent.delaySeconds).toBe(Math.max(0, Math.floor((first - Date.parse(sent.sentAt.toISOString())) / 1000) - 2));
    }
  });

  it("runs a message's evictions side by side, one binding's one after another", async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    // `both` is on two failing clusters: its two evictions share the message and must not overlap.
    // Eight healthy clusters: two failing of ten keeps the fleet's rate up.
    const healthy = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'h7', 'h8'].map((name) => cluster(name));
    await fleet(m, [cluster('m1', true), cluster('m2', true), ...healthy, binding('a', ['m1']), binding('b', ['m1']), binding('both', ['m1', 'm2'])]);
    await manageCluster(m.plane, 'm1');
    await manageCluster(m.plane, 'm2');
    await runPacer(m.plane);
    const [sent] = m.evictions.takeAll();
    expect(sent.message.evictions.map((e) => e.bindingKey).sort()).toEqual(['rb:default:a', 'rb:default:b', 'rb:default:both', 'rb:default:both']);
    m.clock.set(sent.message.evictions[sent.message.evictions.length - 1].slot);
    // Every binding read takes a while: count the reads in flight at once, in all and per binding.
    const get = m.plane.bindings.get.bind(m.plane.bindings);
    let inFlight = 0;
    let most = 0;
    const perBinding = new Map<string, number>();
    let mostForOne = 0;
    m.plane.bindings.get = async (id: string) => {
      inFlight++;
      perBinding.set(id, (perBinding.get(id) ?? 0) + 1);
      most = Math.max(most, inFlight);
      mostForOne = Math.max(mostForOne, perBinding.get(id)!);
      await new Promise((r) => setTimeout(r, 20));
      inFlight--;
      perBinding.set(id, perBinding.get(id)! - 1);
      return get(id);
    };
    expect((await executeEvictionBatch(m.plane, sent.message)).sort()).toEqual(['evicted', 'evicted', 'evicted', 'evicted']);
    expect(most).toBe(3);
    expect(mostForOne).toBe(1);
  });

  it('one eviction that throws does not hold up the others of its message; the message is retried', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await fleet(m, [cluster('m1', true), cluster('m2'), binding('a', ['m1']), binding('b', ['m1']), binding('c', ['m1'])]);
    await manageCluster(m.plane, 'm1');
    await runPacer(m.plane);
    const [sent] = m.evictions.takeAll();
    expect(sent.message.evictions).toHaveLength(3);
    m.clock.set(sent.message.evictions[2].slot);
    m.bindings.failNext('get', new Error('storage down'));
    await expect(executeEvictionBatch(m.plane, sent.message)).rejects.toThrow('storage down');
    expect((await rowsOf(m, 'm1')).map((r) => r.state).sort()).toEqual(['done', 'done', 'scheduled']);
    // The redelivery settles the rest; the ones already done are duplicates.
    expect((await executeEvictionBatch(m.plane, sent.message)).sort()).toEqual(['duplicate', 'duplicate', 'evicted']);
  });
});

describe('due entries', () => {
  it('a pending row whose due entry a pacer deleted (the race with a row put back in line) is found again by the resync', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await fleet(m, [cluster('m1', true), cluster('m2'), binding('web', ['m1'])]);
    await manageCluster(m.plane, 'm1');
    // The due entry goes (as a stale pacer's delete would take it): the pacer no longer sees the row.
    await m.ledger.deleteDue(await m.ledger.listDue('9999', 100));
    expect((await runPacer(m.plane)).scheduled).toBe(0);
    m.clock.advance(11_000);
    await resyncTaintManager(m.plane);
    const queued: EvictionMessage[] = [];
    const ran = [];
    for (let tick = 0; tick < 5 && ran.length === 0; tick++) ran.push(...(await second(m, queued)));
    expect(ran.map((r) => r.outcome)).toEqual(['evicted']);
  });
});
