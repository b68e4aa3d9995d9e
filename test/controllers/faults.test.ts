import { describe, expect, it } from 'vitest';
import { executeEviction, repairInFlight } from '../../shared/controllers/evictionWorker';
import { runPacer } from '../../shared/controllers/pacer';
import type { EvictionMessage } from '../../shared/controllers/ports';
import { scheduleAll } from '../../shared/controllers/scheduler';
import { handleTaintManagerMessage, manageCluster } from '../../shared/controllers/taintManager';
import type { EvictionRecord } from '../../shared/failover/bindingModel';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane, takeEvictions } from '../helpers/memoryPlane';

/**
 * The defects found under host kills plus storage faults, each made deterministic on the in-memory ports:
 * a fault or a "kill" at the exact step, then the app's own recovery (redelivery, the repair timer, the
 * resyncs). Each asserts the invariant docs/concepts.md promises.
 */

const apply = (m: MemoryPlane, objects: unknown[]) => applyTo(m, objects);
const key = (name: string) => `rb:default:${name}`;
const rows = async (m: MemoryPlane, name: string) => (await m.ledger.scanEvictions({ cluster: name })).map((r) => r.record);
const stored = async (m: MemoryPlane, name: string) => (await m.bindings.get(key(name)))!.value;
const evictedEvents = async (m: MemoryPlane, name: string) => (await m.events.all()).filter((e) => e.reason === 'Evicted' && e.name === `default/${name}`);
const recover = (m: MemoryPlane, name: string) => apply(m, [cluster(name)]);

/** Plans `name`'s evictions and runs one pacer tick; returns the messages it queued, in slot order. */
async function planAndPace(m: MemoryPlane, name: string): Promise<EvictionMessage[]> {
  await manageCluster(m.plane, name);
  await runPacer(m.plane);
  return takeEvictions(m)
    .map((s) => s.message)
    .sort((a, b) => a.slot.localeCompare(b.slot));
}

async function executeAtSlot(m: MemoryPlane, message: EvictionMessage) {
  if (Date.parse(message.slot) > m.clock.now().getTime()) m.clock.set(message.slot);
  return executeEviction(m.plane, message);
}

const onM1 = (names: string[], spec: Record<string, unknown> = {}) =>
  names.map((n) => binding(n, ['m1'], { placement: { clusterAffinity: { clusterNames: ['m1', 'm2'] } }, ...spec }));

describe('1. an eviction and its ledger commit cannot be separated by a crash', () => {
  it.each([
    ['the worker dies after writing the binding, before the commit', 'before'],
    ['the commit lands but its answer is lost (a reset), and the worker dies', 'after'],
  ] as const)('%s: the binding is evicted once, the row ends done, Evicted is recorded once, the binding is placed again', async (_name, when) => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await apply(m, [cluster('m1', true), cluster('m2'), cluster('m3'), ...onM1(['web'])]);
    const [message] = await planAndPace(m, 'm1');
    m.ledger.failNext('commitEviction', new Error('host killed'), { when });
    await expect(executeAtSlot(m, message)).rejects.toThrow('host killed');
    // What is left: the binding carries the eviction; the row says scheduled (before) or done (after).
    expect((await stored(m, 'web')).spec.clusters?.map((c) => c.name)).not.toContain('m1');

    // Within seconds, without the message (it stays invisible for the queue hold): the repair, then the scheduler's resync.
    m.clock.advance(11_000);
    await repairInFlight(m.plane);
    await scheduleAll(m.plane);
    // A late redelivery of the same message changes nothing.
    expect(await executeEviction(m.plane, message)).toBe('duplicate');

    const web = await stored(m, 'web');
    expect((await rows(m, 'm1')).map((r) => r.state)).toEqual(['done']);
    expect(web.spec.gracefulEvictionTasks?.map((t) => t.fromCluster)).toEqual(['m1']);
    expect(web.spec.clusters?.map((c) => c.name)).toEqual(['m2']);
    expect(web.status.schedulerObservedGeneration).toBe(web.generation);
    expect(await evictedEvents(m, 'web')).toHaveLength(1);
  });

  it('a repair running while the worker is between its two writes finishes it once (the worker sees the row done)', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await apply(m, [cluster('m1', true), cluster('m2'), ...onM1(['web'])]);
    const [message] = await planAndPace(m, 'm1');
    // The repair runs at the exact moment the worker commits (its slot long past, as under a stalled host).
    m.ledger.faults.beforeWrite = async (method) => {
      if (method !== 'commitEviction') return;
      m.ledger.faults.beforeWrite = undefined;
      m.clock.advance(11_000);
      expect(await repairInFlight(m.plane)).toEqual({ finished: 1 });
    };
    expect(await executeAtSlot(m, message)).toBe('duplicate');
    expect((await rows(m, 'm1')).map((r) => r.state)).toEqual(['done']);
    expect((await stored(m, 'web')).spec.gracefulEvictionTasks).toHaveLength(1);
    expect(await evictedEvents(m, 'web')).toHaveLength(1);
  });
});

describe('2. no eviction after a recovery', () => {
  it('(a) an abandon pass concurrent with a pacer tick: the rows the tick scheduled are abandoned by their worker, none evicts; the event counts the rows really moved', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '1' });
    const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    await apply(m, [cluster('m1', true), cluster('m2'), cluster('m3'), ...onM1(names)]);
    await manageCluster(m.plane, 'm1');
    await recover(m, 'm1');
    // The pacer ticks exactly while the abandon pass writes: it schedules some rows under the pass.
    let ticked = false;
    m.ledger.faults.beforeWrite = async (method) => {
      if (method !== 'updateEvictions' || ticked) return;
      ticked = true;
      await runPacer(m.plane);
    };
    // The pacer's fleet view is a second old: it still sees m1 faulty (that is the race).
    await handleTaintManagerMessage(m.plane, { cluster: 'm1', reason: 'taints-changed' });
    m.ledger.faults.beforeWrite = undefined;
    expect(ticked).toBe(true);
    const scheduled = takeEvictions(m).map((s) => s.message);
    expect(scheduled.length).toBeGreaterThan(0);
    const abandonedByPass = (await rows(m, 'm1')).filter((r) => r.state === 'abandoned').length;
    const event = (await m.events.all()).find((e) => e.reason === 'EvictionsAbandoned')!;
    expect(event.details?.count).toBe(abandonedByPass);
    expect(abandonedByPass + scheduled.length).toBe(names.length);

    for (const message of scheduled.sort((a, b) => a.slot.localeCompare(b.slot))) expect(await executeAtSlot(m, message)).toBe('recovered');
    expect((await rows(m, 'm1')).every((r) => r.state === 'abandoned')).toBe(true);
    for (const n of names) expect((await stored(m, n)).spec.clusters?.map((c) => c.name)).toEqual(['m1']);
  });

  it('(b) a planning batch that lands after the abandon pass: its rows never evict', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10' });
    await apply(m, [cluster('m1', true), cluster('m2'), cluster('m3'), ...onM1(['web'])]);
    // A planning run reads the cluster while it is faulty and stalls before writing its batch ...
    let stalled: (() => void) | undefined;
    m.ledger.faults.beforeWrite = (method) => (method === 'recordEvictions' ? new Promise<void>((resolve) => (stalled = resolve)) : undefined);
    const planning = manageCluster(m.plane, 'm1');
    await new Promise((r) => setTimeout(r, 10));
    expect(stalled).toBeDefined();
    // ... the cluster recovers and the abandon pass runs (nothing to abandon yet) ...
    m.ledger.faults.beforeWrite = undefined;
    await recover(m, 'm1');
    await handleTaintManagerMessage(m.plane, { cluster: 'm1', reason: 'taints-changed' });
    // ... then the batch lands.
    stalled!();
    expect((await planning).planned).toBe(1);
    await runPacer(m.plane);
    for (const { message } of takeEvictions(m)) expect(await executeAtSlot(m, message)).toBe('recovered');
    expect((await rows(m, 'm1')).map((r) => r.state)).toEqual(['abandoned']);
    expect((await stored(m, 'web')).spec.clusters?.map((c) => c.name)).toEqual(['m1']);
  });
});

describe('3. smaller defects', () => {
  it('scheduled rows whose messages were lost go back in line and are paced, never sent at once', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '2' });
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    await apply(m, [cluster('m1', true), cluster('m2'), cluster('m3'), ...onM1(names)]);
    const lost = await planAndPace(m, 'm1');
    expect(lost.length).toBeGreaterThan(2);
    m.clock.advance(15_000);
    expect((await repairInFlight(m.plane)).requeued).toBe(lost.length);
    const slots: number[] = [];
    for (let tick = 0; tick < 10; tick++) {
      await runPacer(m.plane);
      for (const { message } of takeEvictions(m).sort((a, b) => a.message.slot.localeCompare(b.message.slot))) {
        slots.push(Date.parse(message.slot));
        expect(await executeAtSlot(m, message)).toBe('evicted');
      }
      m.clock.advance(1000);
    }
    expect(slots.length).toBe(names.length);
    for (let i = 1; i < slots.length; i++) expect(slots[i] - slots[i - 1]).toBeGreaterThanOrEqual(500);
  });

  it('a Divided binding on two failed clusters: each leaves through its own paced eviction with a task, neither is dropped by the re-division', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '10', UNHEALTHY_CLUSTER_THRESHOLD: '0.9' });
    const divided = {
      replicas: 4,
      clusters: [
        { name: 'm1', replicas: 2 },
        { name: 'm2', replicas: 1 },
        { name: 'm3', replicas: 1 },
      ],
      placement: { clusterAffinity: { clusterNames: ['m1', 'm2', 'm3', 'm4'] }, replicaScheduling: { replicaSchedulingType: 'Divided' } },
    };
    await apply(m, [
      cluster('m1', true),
      cluster('m2', true),
      cluster('m3'),
      cluster('m4'),
      { ...binding('web', []), spec: { ...binding('web', []).spec, ...divided } },
    ]);
    await manageCluster(m.plane, 'm2');
    const messages = await planAndPace(m, 'm1');
    expect(messages).toHaveLength(2);
    const outcomes = [];
    for (const message of messages) outcomes.push(await executeAtSlot(m, message));
    expect(outcomes).toEqual(['evicted', 'evicted']);
    const web = await stored(m, 'web');
    expect(web.spec.gracefulEvictionTasks?.map((t) => t.fromCluster).sort()).toEqual(['m1', 'm2']);
    expect(web.spec.clusters?.map((c) => c.name)).toEqual(['m3', 'm4']);
    expect((await m.ledger.scanEvictions({})).map((r: { record: EvictionRecord }) => r.record.state)).toEqual(['done', 'done']);
  });
});
