import { describe, expect, it } from 'vitest';
import { PlaneCaches } from '../../shared/cache';
import { executeEviction } from '../../shared/controllers/evictionWorker';
import { announcePassHere, runPacer, SHORT_PASSES_LEASE_MS } from '../../shared/controllers/pacer';
import type { EvictionMessage } from '../../shared/controllers/ports';
import { manageCluster } from '../../shared/controllers/taintManager';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * The pacer's slots form one contiguous series across its ticks and across the queue messages that carry
 * them: a tick that comes late continues the series where it stands. On the manual clock: one failed cluster
 * with 30 bindings that leave at once and 3 that tolerate the taint for 3 s (due while the others are still
 * leaving), at 4/s: 33 slots 250 ms apart, whatever the ticks' timing.
 */

const RATE = 4;
const INTERVAL_MS = 1000 / RATE;

async function failedCluster(): Promise<MemoryPlane> {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: String(RATE) });
  const patient = { placement: { clusterTolerations: [{ key: 'test/failed', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 3 }] } };
  await applyTo(m, [
    cluster('m1', true),
    ...Array.from({ length: 11 }, (_, i) => cluster(`m${i + 2}`)),
    ...Array.from({ length: 30 }, (_, i) => binding(`free${i}`, ['m1'])),
    ...Array.from({ length: 3 }, (_, i) => binding(`patient${i}`, ['m1'], patient)),
  ]);
  await manageCluster(m.plane, 'm1');
  return m;
}

/**
 * Runs the pacer at each tick (ms after the start) and, between ticks, each eviction whose slot comes before
 * the next tick, at its slot (as the queue and the worker's wait do). Returns the messages in the order sent.
 */
async function run(m: MemoryPlane, ticks: number[]): Promise<EvictionMessage[][]> {
  const start = m.clock.now().getTime();
  const sent: EvictionMessage[][] = [];
  const queued: EvictionMessage[] = [];
  for (let i = 0; i < ticks.length; i++) {
    m.clock.set(new Date(start + ticks[i]));
    await runPacer(m.plane);
    for (const message of m.evictions.takeAll()) {
      sent.push(message.message.evictions);
      queued.push(...message.message.evictions);
    }
    queued.sort((a, b) => a.slot.localeCompare(b.slot));
    const until = i + 1 < ticks.length ? start + ticks[i + 1] : Number.POSITIVE_INFINITY;
    while (queued.length > 0 && Date.parse(queued[0].slot) < until) {
      const message = queued.shift()!;
      m.clock.set(new Date(Math.max(m.clock.now().getTime(), Date.parse(message.slot))));
      expect(await executeEviction(m.plane, message)).toBe('evicted');
    }
  }
  return sent;
}

const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]);

/** A pass's `runHere` that keeps the evictions it is given. */
const collect = () => {
  const here: EvictionMessage[] = [];
  return { here, runHere: (batch: { evictions: EvictionMessage[] }) => (here.push(...batch.evictions), true) };
};

describe('pacer slots: one contiguous series across ticks and messages', () => {
  const cases: Array<{ name: string; ticks: number[] }> = [
    { name: 'a tick every second', ticks: [0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000] },
    // The tick after the first comes 3.5 s late (a slow run on a busy host): the series used to restart
    // MIN_SLOT_LEAD_MS after it, leaving a slot unused between one tick's last message and the next's first.
    { name: 'a late tick after the first', ticks: [0, 3500, 4500, 5500, 6500, 7500, 8500, 9500] },
    { name: 'every tick late, each 3.5 s after the one before', ticks: [0, 3500, 7000, 10_500, 14_000] },
    { name: 'late and early ticks mixed', ticks: [0, 1000, 4500, 5000, 8700, 9000, 9400, 12_000] },
  ];
  it.each(cases)('$name: 33 slots 250 ms apart, the tolerating bindings after the others', async ({ ticks }) => {
    const m = await failedCluster();
    const sent = await run(m, ticks);
    const slots = sent.flat().map((e) => Date.parse(e.slot));
    expect(slots).toHaveLength(33);
    expect([...slots].sort((a, b) => a - b)).toEqual(slots);
    expect(gaps(slots)).toEqual(Array.from({ length: 32 }, () => INTERVAL_MS));
    // Each message carries a run of slots; the next message starts one interval after it.
    for (let i = 1; i < sent.length; i++) expect(Date.parse(sent[i][0].slot) - Date.parse(sent[i - 1][sent[i - 1].length - 1].slot)).toBe(INTERVAL_MS);
    // The tolerating bindings became due mid-stream and took the slots after the 30 that were due first.
    expect(
      sent
        .flat()
        .slice(30)
        .map((e) => e.record?.name),
    ).toEqual(expect.arrayContaining(['patient0', 'patient1', 'patient2']));
    // Executed at those slots: 8 s from the first to the last.
    const rows = (await m.ledger.scanEvictions({ cluster: 'm1' })).map((r) => r.record);
    expect(rows.every((r) => r.state === 'done')).toBe(true);
    const executed = rows.map((r) => Date.parse(r.executedAt!)).sort((a, b) => a - b);
    expect(executed[32] - executed[0]).toBe(32 * INTERVAL_MS);
  });

  it('a tick too late for the next slot to be reached shifts the series by the excess, and drops no slot it hands out', async () => {
    const m = await failedCluster();
    // The first tick hands out 1.5 s to 4.5 s; the next comes at 4.2 s: 4.75 s can no longer be reached
    // (a message needs up to DELIVERY_LEAD_MS), so the series goes on from 5.2 s, 250 ms apart again.
    const sent = await run(m, [0, 4200, 5200, 6200, 7200, 8200, 9200, 10_200, 11_200]);
    const slots = sent.flat().map((e) => Date.parse(e.slot) - Date.parse(sent[0][0].slot));
    expect(slots).toHaveLength(33);
    expect(gaps(slots).filter((gap) => gap !== INTERVAL_MS)).toEqual([700]);
  });

  it('ticks that keep coming 4 s apart: the pacer looks further ahead, so only the first late one shifts the series', async () => {
    const m = await failedCluster();
    const sent = await run(m, [0, 4000, 8000, 12_000, 16_000]);
    const slots = sent.flat().map((e) => Date.parse(e.slot));
    expect(slots).toHaveLength(33);
    // 4.75 s was out of reach at 4 s (a message needs up to a second): the series went on from 5 s.
    expect(gaps(slots).filter((gap) => gap !== INTERVAL_MS)).toEqual([2 * INTERVAL_MS]);
  });
});

describe('a pass that runs its first evictions itself', () => {
  it('is not overtaken by a timer tick: while it is announced, ticks hand out no slots; after, they pace again', async () => {
    const m = await failedCluster();
    const release = announcePassHere(m.plane);
    // The timer's tick while a pass here is on its way: busy, nothing scheduled, nothing sent.
    expect(await runPacer(m.plane)).toMatchObject({ scheduled: 0, skipped: 'busy' });
    expect(m.evictions.messages()).toEqual([]);
    // The pass itself is not held by its own announcement.
    const here: number[] = [];
    const outcome = await runPacer(m.plane, { runHere: (batch) => (here.push(batch.evictions.length), true) });
    expect(outcome.scheduled).toBeGreaterThan(0);
    expect(here.length).toBeGreaterThan(0);
    release();
    release();
    m.clock.advance(1000);
    expect((await runPacer(m.plane)).skipped).not.toBe('busy');
  });
});

describe('a timer tick that yields to a pass here', () => {
  it('leaves the pacer row to that pass even when the fleet changed, so the pass does not lose it', async () => {
    const m = await failedCluster();
    const before = await m.plane.ledger.getPacerState();
    // One more cluster failed since the row was written: a tick would record the fleet's change.
    await applyTo(m, [cluster('m2', true)]);
    const release = announcePassHere(m.plane);
    expect(await runPacer(m.plane)).toMatchObject({ scheduled: 0, skipped: 'busy' });
    expect((await m.plane.ledger.getPacerState()).etag).toBe(before.etag);
    // The pass here writes the change itself, with its slots, on its first try.
    const outcome = await runPacer(m.plane, { runHere: () => true });
    expect(outcome.skipped).toBeUndefined();
    expect(outcome.scheduled).toBeGreaterThan(0);
    expect((await m.plane.ledger.getPacerState()).state.unhealthy).toBe(2);
    release();
  });
});

describe('short passes while failures are being planned', () => {
  /** Twenty clusters, two of them failed (m1 and m2), each with 30 bindings that leave at once. */
  async function twoFailed(): Promise<MemoryPlane> {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: String(RATE) });
    await applyTo(m, [
      cluster('m1', true),
      cluster('m2', true),
      ...Array.from({ length: 18 }, (_, i) => cluster(`h${i}`)),
      ...Array.from({ length: 30 }, (_, i) => binding(`one${i}`, ['m1'])),
      ...Array.from({ length: 30 }, (_, i) => binding(`two${i}`, ['m2'])),
    ]);
    return m;
  }

  it('hand out slots only their look-ahead ahead, contiguous from pass to pass, all run here', async () => {
    const m = await twoFailed();
    await manageCluster(m.plane, 'm1');
    const { here, runHere } = collect();
    const start = m.clock.now().getTime();
    for (let pass = 0; pass < 5; pass++) {
      const before = here.length;
      const at = m.clock.now().getTime();
      await runPacer(m.plane, { runHere, lookAheadMs: 800 });
      for (const e of here.slice(before)) expect(Date.parse(e.slot) - at).toBeLessThanOrEqual(800);
      m.clock.advance(200);
    }
    expect(m.evictions.messages()).toEqual([]);
    const slots = here.map((e) => Date.parse(e.slot));
    // 50 ms lead, then every 250 ms up to 800 ms past the last pass (at 800 ms): 0.05 … 1.55 s.
    expect(slots[0] - start).toBe(50);
    expect(gaps(slots).every((gap) => gap === INTERVAL_MS)).toBe(true);
    expect(slots).toHaveLength(7);
  });

  it('let a cluster planned a moment after another take turns with it at once; a full pass would have put it behind a look-ahead of slots', async () => {
    const shortPasses = await twoFailed();
    const full = await twoFailed();
    const firstSlotOfM2 = async (m: MemoryPlane, options: { lookAheadMs?: number }) => {
      await manageCluster(m.plane, 'm1');
      const { here, runHere } = collect();
      await runPacer(m.plane, { runHere, ...options });
      m.clock.advance(200);
      const planned = m.clock.now().getTime();
      await manageCluster(m.plane, 'm2');
      for (let pass = 0; pass < 10 && !here.some((e) => e.cluster === 'm2'); pass++) {
        await runPacer(m.plane, { runHere, ...options });
        for (const message of m.evictions.takeAll()) here.push(...message.message.evictions);
        m.clock.advance(200);
      }
      const m2 = here.filter((e) => e.cluster === 'm2').map((e) => Date.parse(e.slot));
      return Math.min(...m2) - planned;
    };
    // Short passes: m1 held slots up to 800 ms past the first pass; m2's first is the next slot after them.
    expect(await firstSlotOfM2(shortPasses, { lookAheadMs: 800 })).toBeLessThanOrEqual(800 + INTERVAL_MS);
    // A full pass had given m1 4.5 s of slots (all 30 of its rows at 4/s would take 7.5 s).
    expect(await firstSlotOfM2(full, {})).toBeGreaterThanOrEqual(4000);
  });
});

describe('from short passes back to the timer', () => {
  it('a full pass run here after the short ones carries the series out, so the timer continues it without a gap', async () => {
    const slotsOf = async (withFullPass: boolean) => {
      const m = await failedCluster();
      const here: EvictionMessage[] = [];
      const runHere = (batch: { evictions: EvictionMessage[] }) => (here.push(...batch.evictions), true);
      await runPacer(m.plane, { runHere, lookAheadMs: 800 });
      m.clock.advance(200);
      await runPacer(m.plane, { runHere, lookAheadMs: 800 });
      if (withFullPass) await runPacer(m.plane, { runHere, allHere: true });
      // The timer's tick once the short passes' lease has lapsed: its slots go by queue, a poll's lead ahead.
      m.clock.advance(SHORT_PASSES_LEASE_MS);
      await runPacer(m.plane);
      const queued = m.evictions.takeAll().flatMap((message) => message.message.evictions);
      return [...here, ...queued].map((e) => Date.parse(e.slot)).sort((a, b) => a - b);
    };
    expect(gaps(await slotsOf(true)).every((gap) => gap === INTERVAL_MS)).toBe(true);
    // Without it the tick restarts the series a second out: slots in between go unused.
    expect(gaps(await slotsOf(false)).some((gap) => gap > INTERVAL_MS)).toBe(true);
  });
});

describe('short passes on one host, the timer on another', () => {
  it("the other host's ticks hand out nothing while the short passes run the series, then continue it without a gap", async () => {
    const m = await failedCluster();
    // Another host: the same storage and queues, its own process state (nothing announced there).
    const other = { ...m.plane, caches: new PlaneCaches() };
    const { here, runHere } = collect();
    await runPacer(m.plane, { runHere, lookAheadMs: 800 });
    m.clock.advance(200);
    await runPacer(m.plane, { runHere, lookAheadMs: 800 });
    // Its tick a moment later would continue the series a poll's lead (a second) out, past slots still free.
    m.clock.advance(100);
    const before = await m.plane.ledger.getPacerState();
    expect(await runPacer(other)).toMatchObject({ scheduled: 0, skipped: 'busy' });
    expect(m.evictions.messages()).toEqual([]);
    expect((await m.plane.ledger.getPacerState()).etag).toBe(before.etag);
    m.clock.advance(100);
    await runPacer(m.plane, { runHere, lookAheadMs: 800 });
    await runPacer(m.plane, { runHere, allHere: true });
    // Once the lease has lapsed, the other host's ticks pace again, continuing the series.
    m.clock.advance(SHORT_PASSES_LEASE_MS);
    for (let tick = 0; tick < 8; tick++) {
      expect((await runPacer(other)).skipped).toBeUndefined();
      m.clock.advance(1000);
    }
    const queued = m.evictions.takeAll().flatMap((message) => message.message.evictions);
    expect(queued.length).toBeGreaterThan(0);
    const slots = [...here, ...queued].map((e) => Date.parse(e.slot)).sort((a, b) => a - b);
    expect(slots).toHaveLength(33);
    expect(gaps(slots).every((gap) => gap === INTERVAL_MS)).toBe(true);
  });
});

describe('a short pass given the rows just planned here (the planning loop pool)', () => {
  /** The failed cluster's pending rows as stored, by row id, and a ledger that counts the pass's reads of due rows. */
  async function pooled() {
    const m = await failedCluster();
    const rows = (await m.ledger.listEvictions('m1')).filter((row) => row.record.state === 'pending');
    const planned = new Map(rows.map((row) => [`${row.record.cluster}|${row.record.bindingKey}`, row]));
    const reads: string[] = [];
    const ledger = Object.create(m.ledger) as typeof m.ledger;
    ledger.listDue = (...args) => (reads.push('listDue'), m.ledger.listDue(...args));
    ledger.pendingDue = (...args) => (reads.push('pendingDue'), m.ledger.pendingDue(...args));
    return { m, plane: { ...m.plane, ledger }, planned, reads };
  }

  it('hands out slots to them without reading due rows from storage, and lets go of the rows it slotted', async () => {
    const { m, plane, planned, reads } = await pooled();
    const { here, runHere } = collect();
    const outcome = await runPacer(plane, { runHere, lookAheadMs: 800, planned });
    expect(reads).toEqual([]);
    // 50 ms lead, then every 250 ms up to 800 ms ahead: 4 slots, in the same series as a pass that reads storage.
    expect(outcome.scheduled).toBe(4);
    expect(here.map((e) => Date.parse(e.slot) - m.clock.now().getTime())).toEqual([50, 300, 550, 800]);
    // 33 rows planned (the 3 tolerating ones due 3 s later), 4 slotted.
    expect(planned.size).toBe(33 - 4);
    for (const e of here) expect(planned.has(`m1|${e.bindingKey}`)).toBe(false);
    const scheduled = (await m.ledger.listEvictions('m1')).filter((row) => row.record.state === 'scheduled');
    expect(scheduled.map((row) => row.record.bindingKey).sort()).toEqual(here.map((e) => e.bindingKey).sort());
    // The due groups stay: a pass that reads storage finds the rest of the rows.
    m.clock.advance(1000);
    await runPacer(m.plane, { runHere, lookAheadMs: 800 });
    expect(new Set(here.map((e) => e.bindingKey)).size).toBe(here.length);
    expect(here.length).toBeGreaterThan(4);
  });

  it('leaves a row changed since it was planned where it is: its ETag fails, no eviction goes for it', async () => {
    const { m, plane, planned } = await pooled();
    const [first] = planned.values();
    // Another pass (another host) scheduled it first.
    const moved = await m.ledger.updateEviction({ ...first.record, state: 'scheduled', scheduledFor: m.clock.now().toISOString() }, first.etag);
    expect(moved).not.toBe(false);
    const { here, runHere } = collect();
    await runPacer(plane, { runHere, lookAheadMs: 800, planned });
    expect(here.map((e) => e.bindingKey)).not.toContain(first.record.bindingKey);
    expect(here).toHaveLength(3);
    expect(planned.has(`m1|${first.record.bindingKey}`)).toBe(false);
  });

  it('reads storage as before once the pool is empty', async () => {
    const { plane, reads } = await pooled();
    const { runHere } = collect();
    await runPacer(plane, { runHere, lookAheadMs: 800, planned: new Map() });
    expect(reads).toContain('listDue');
  });
});

describe('a short pass and a pool that cannot serve it', () => {
  it('reads storage when the pool holds only rows due later, and slots the rows due now', async () => {
    const m = await failedCluster();
    const rows = (await m.ledger.listEvictions('m1')).filter((row) => row.record.state === 'pending');
    // Only the three tolerating rows (due 3 s from now) are held: nothing in the pool is due within the pass.
    const later = rows.filter((row) => Date.parse(row.record.dueAt) > m.clock.now().getTime());
    expect(later).toHaveLength(3);
    const planned = new Map(later.map((row) => [`m1|${row.record.bindingKey}`, row]));
    const { here, runHere } = collect();
    const outcome = await runPacer(m.plane, { runHere, lookAheadMs: 800, planned });
    expect(outcome.scheduled).toBe(4);
    expect(here.every((e) => !planned.has(`m1|${e.bindingKey}`))).toBe(true);
    expect(planned.size).toBe(3);
  });

  it('lets go of rows a planner handed over while the pass read them from storage', async () => {
    const m = await failedCluster();
    const rows = (await m.ledger.listEvictions('m1')).filter((row) => row.record.state === 'pending');
    const planned = new Map<string, (typeof rows)[number]>();
    const { here, runHere } = collect();
    // The pass begins with an empty pool (it reads storage); the planner hands its rows over meanwhile.
    const pass = runPacer(m.plane, { runHere, lookAheadMs: 800, planned });
    for (const row of rows) planned.set(`m1|${row.record.bindingKey}`, row);
    expect((await pass).scheduled).toBe(4);
    // The rows it slotted leave the pool (their ETags changed): the next pass does not spend its slots on them.
    for (const e of here) expect(planned.has(`m1|${e.bindingKey}`)).toBe(false);
    m.clock.advance(800);
    // Its three slots (the series continues at 1.05 s, up to 800 ms ahead) all go to rows still pending.
    expect((await runPacer(m.plane, { runHere, lookAheadMs: 800, planned })).scheduled).toBe(3);
    expect(new Set(here.map((e) => e.bindingKey)).size).toBe(7);
    expect(here).toHaveLength(7);
  });
});

describe('a short pass sharing its room among the clusters planned here', () => {
  /** Ten failed clusters of a hundred, five bindings each, at 50/s; their pending rows as the planning loop's pool. */
  async function tenPooled() {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '50' });
    const failed = Array.from({ length: 10 }, (_, i) => `f${i}`);
    await applyTo(m, [
      ...failed.map((name) => cluster(name, true)),
      ...Array.from({ length: 90 }, (_, i) => cluster(`h${i}`)),
      ...failed.flatMap((name) => Array.from({ length: 5 }, (_, i) => binding(`${name}-app${i}`, [name]))),
    ]);
    for (const name of failed) await manageCluster(m.plane, name);
    const rows = (await Promise.all(failed.map((name) => m.ledger.listEvictions(name)))).flat();
    return { m, failed, planned: new Map(rows.map((row) => [`${row.record.cluster}|${row.record.bindingKey}`, row])) };
  }

  it('gives every cluster a slot when the room is not a multiple of them', async () => {
    const { m, failed, planned } = await tenPooled();
    const { here, runHere } = collect();
    // From 50 ms to 450 ms ahead at 50/s: 21 slots for ten clusters. Shared rounded up (3 each) the first seven
    // took them all.
    const outcome = await runPacer(m.plane, { runHere, lookAheadMs: 450, planned, lanesExpected: 10 });
    expect(outcome.scheduled).toBe(21);
    expect(new Set(here.map((e) => e.cluster))).toEqual(new Set(failed));
    expect(Object.keys(outcome.firstSlots ?? {}).sort()).toEqual([...failed].sort());
  });

  it('gives each cluster one slot while planners here have yet to hand over their first rows', async () => {
    const { m, failed, planned } = await tenPooled();
    const { here, runHere } = collect();
    const outcome = await runPacer(m.plane, { runHere, lookAheadMs: 800, planned, lanesExpected: 12, firstRowsAwaited: true });
    // One each, 20 ms apart from the 50 ms lead: the series stays 0.25 s ahead, and the clusters whose first rows
    // come next take the slots after it, not 0.8 s of slots later.
    expect(outcome.scheduled).toBe(10);
    expect(here.map((e) => e.cluster).sort()).toEqual([...failed].sort());
    const { state } = await m.ledger.getPacerState();
    expect(Date.parse(state.nextSlotAt) - m.clock.now().getTime()).toBe(50 + 10 * 20);
  });
});
