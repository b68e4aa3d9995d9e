import { describe, expect, it } from 'vitest';
import { sleep, systemClock } from '../../shared/clock';
import { planAndPaceHere } from '../../shared/controllers/paceAndRun';
import { handleTaintManagerMessage, manageCluster } from '../../shared/controllers/taintManager';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { memoryPlane } from '../helpers/memoryPlane';

/**
 * Clusters failing together, planned side by side as the taint manager's messages are: each one's first rows
 * are stored and given slots before the rest of its plan, and short passes hand out slots only a moment
 * ahead, so every cluster's first eviction comes within the first few slots, clusters taking turns. On the
 * system clock (the passes run every 200 ms, and the first evictions run here at their slots).
 */
describe('planning and pacing here, three clusters of 100 failing at once', () => {
  it('gives each cluster a slot among the first few, 20 ms apart, each binding once', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '50' });
    const failed = ['f1', 'f2', 'f3'];
    await applyTo(m, [
      ...failed.map((name) => cluster(name, true)),
      ...Array.from({ length: 27 }, (_, i) => cluster(`h${i}`)),
      ...failed.flatMap((name) => Array.from({ length: 100 }, (_, i) => binding(`${name}-app${i}`, [name]))),
    ]);
    const plane = { ...m.plane, clock: systemClock };
    const started = Date.now();
    await Promise.all(failed.map((name) => planAndPaceHere(plane, () => handleTaintManagerMessage(plane, { cluster: name, reason: 'taints-changed' }))));
    const rows = (await Promise.all(failed.map((name) => m.ledger.listEvictions(name)))).flat();
    expect(rows).toHaveLength(300);
    const slotted = rows.filter((row) => row.record.scheduledFor).sort((a, b) => a.record.scheduledFor!.localeCompare(b.record.scheduledFor!));
    const slots = slotted.map((row) => Date.parse(row.record.scheduledFor!));
    // One series: 20 ms apart, no slot twice, no binding twice.
    expect(slots.slice(1).every((slot, i) => slot - slots[i] === 20)).toBe(true);
    expect(new Set(slotted.map((row) => row.record.bindingKey)).size).toBe(slotted.length);
    // The first cluster planned takes at most a third of the first short pass's 39 slots (three are being
    // planned); the others' first slots follow, and from then on they take turns. Without the short passes
    // f2 and f3 would wait behind f1's first 32 rows at least (a full pass: all 100 of them).
    const firstOf = (name: string) => slotted.findIndex((row) => row.record.cluster === name);
    for (const name of failed) {
      expect(firstOf(name)).toBeGreaterThanOrEqual(0);
      expect(firstOf(name)).toBeLessThanOrEqual(15);
    }
    const afterFirsts = slotted.slice(15, 45).map((row) => row.record.cluster);
    for (const name of failed) expect(afterFirsts.filter((c) => c === name)).toHaveLength(10);
    expect(slots[0] - started).toBeLessThan(1000);
    // The first of them were run here, at their slots.
    expect(rows.filter((row) => row.record.state === 'done').length).toBeGreaterThan(0);
  });
});

/**
 * A failed cluster f1 with 100 bindings among 30 clusters, and a ledger over the plane's that records its
 * plan writes and the slots handed out as `steps`.
 */
async function oneFailedCluster() {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: '50' });
  await applyTo(m, [
    cluster('f1', true),
    ...Array.from({ length: 29 }, (_, i) => cluster(`h${i}`)),
    ...Array.from({ length: 100 }, (_, i) => binding(`app${i}`, ['f1'])),
  ]);
  const steps: string[] = [];
  const ledger = Object.create(m.ledger) as typeof m.ledger;
  ledger.recordEvictions = (rows, options) => (
    steps.push(`record ${rows.length}${options?.background ? ' in the background' : ''}`),
    m.ledger.recordEvictions(rows, options)
  );
  ledger.putPacerState = async (state, etag) => {
    const written = await m.ledger.putPacerState(state, etag);
    if (written) steps.push('slots handed out');
    return written;
  };
  return { m, steps, ledger };
}

describe('a planner while the planning loop runs here', () => {
  it('stores its first 32 rows, has them slotted, then writes the rest in the background', async () => {
    const { m, steps, ledger } = await oneFailedCluster();
    const plane = { ...m.plane, ledger, clock: systemClock };
    await planAndPaceHere(plane, () => handleTaintManagerMessage(plane, { cluster: 'f1', reason: 'taints-changed' }));
    expect(steps.slice(0, 3)).toEqual(['record 32', 'slots handed out', 'record 68 in the background']);
    // Without the loop (the Karmada watch plans and then runs one pass) every row is written at once.
    const other = memoryPlane({ RESOURCE_EVICTION_RATE: '50' });
    await applyTo(other, [cluster('f1', true), ...Array.from({ length: 100 }, (_, i) => binding(`app${i}`, ['f1']))]);
    const calls: number[] = [];
    const otherLedger = Object.create(other.ledger) as typeof other.ledger;
    otherLedger.recordEvictions = (rows, options) => (calls.push(rows.length), other.ledger.recordEvictions(rows, options));
    await handleTaintManagerMessage({ ...other.plane, ledger: otherLedger }, { cluster: 'f1', reason: 'taints-changed' });
    expect(calls).toEqual([100]);
  });
});

describe("a planner's first rows and their due entries", () => {
  it('are handed to the short passes once stored, while their due entries are still being written', async () => {
    const { m, steps, ledger } = await oneFailedCluster();
    // Storage answers the due entries' write slowly (as when the other clusters' scans queue before it).
    ledger.recordEvictions = async (rows, options) => {
      const etags = await m.ledger.recordEvictions(rows, { ...options, onStored: undefined });
      options?.onStored?.(etags);
      await sleep(500);
      steps.push(`due entries of ${rows.length} written`);
      return etags;
    };
    const plane = { ...m.plane, ledger, clock: systemClock };
    await planAndPaceHere(plane, () => handleTaintManagerMessage(plane, { cluster: 'f1', reason: 'taints-changed' }));
    expect(steps.slice(0, 2)).toEqual(['slots handed out', 'due entries of 32 written']);
    const rows = await m.ledger.listEvictions('f1');
    expect(rows).toHaveLength(100);
    expect(rows.filter((row) => row.record.scheduledFor).length).toBeGreaterThan(0);
  });
});

describe('a message that plans nothing while other rows are due', () => {
  it('paces them with short passes and leaves the series a full look-ahead out for the timer', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '50' });
    await applyTo(m, [
      cluster('f1', true),
      ...Array.from({ length: 29 }, (_, i) => cluster(`h${i}`)),
      ...Array.from({ length: 400 }, (_, i) => binding(`app${i}`, ['f1'])),
    ]);
    const plane = { ...m.plane, clock: systemClock };
    await manageCluster(plane, 'f1');
    await planAndPaceHere(plane, () => sleep(300));
    const { state } = await m.ledger.getPacerState();
    // The short passes handed out f1's first slots; the full pass after them carried the series 4 s and more out.
    expect(Date.parse(state.nextSlotAt) - Date.now()).toBeGreaterThan(3000);
  });
});

describe('the planning loop while a planner has yet to hand over its first rows', () => {
  it('reads no due rows from storage meanwhile, then slots the rows handed over at once', async () => {
    const { m, steps, ledger } = await oneFailedCluster();
    // A slow listing of the cluster (storage busy): three of the loop's passes go by before the rows are stored.
    ledger.listClusterRows = async (name) => {
      await sleep(700);
      return m.ledger.listClusterRows(name);
    };
    ledger.listDue = (until, limit) => (steps.push('due rows read'), m.ledger.listDue(until, limit));
    const plane = { ...m.plane, ledger, clock: systemClock };
    await planAndPaceHere(plane, () => handleTaintManagerMessage(plane, { cluster: 'f1', reason: 'taints-changed' }));
    expect(steps.slice(0, 2)).toEqual(['record 32', 'slots handed out']);
  });
});

/**
 * Two clusters failing together, f2's listing slow (storage busy). f1's first rows are slotted at once; the
 * rest of its plan (68 rows, seconds of writes at scale) waits until f2's first eviction has had its slot too,
 * or a second at most, so those writes do not hold up f2's listing, first rows, pass and first eviction.
 */
describe('the rest of a plan while another cluster planned here has had no eviction yet', () => {
  async function twoFailed(f2ListingMs: number) {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '50' });
    await applyTo(m, [
      cluster('f1', true),
      cluster('f2', true),
      ...Array.from({ length: 28 }, (_, i) => cluster(`h${i}`)),
      ...['f1', 'f2'].flatMap((name) => Array.from({ length: 100 }, (_, i) => binding(`${name}-app${i}`, [name]))),
    ]);
    const steps: Array<{ step: string; at: number }> = [];
    const ledger = Object.create(m.ledger) as typeof m.ledger;
    ledger.recordEvictions = (rows, options) => (
      steps.push({ step: `record ${rows[0].record.cluster} ${rows.length}${options?.background ? ' in the background' : ''}`, at: Date.now() }),
      m.ledger.recordEvictions(rows, options)
    );
    ledger.listClusterRows = async (name) => {
      if (name === 'f2') await sleep(f2ListingMs);
      return m.ledger.listClusterRows(name);
    };
    ledger.putPacerState = async (state, etag) => {
      const written = await m.ledger.putPacerState(state, etag);
      if (written) steps.push({ step: 'slots handed out', at: Date.now() });
      return written;
    };
    const plane = { ...m.plane, ledger, clock: systemClock };
    await Promise.all(['f1', 'f2'].map((name) => planAndPaceHere(plane, () => handleTaintManagerMessage(plane, { cluster: name, reason: 'taints-changed' }))));
    const at = (step: string) => steps.find((s) => s.step === step)?.at ?? Number.NaN;
    return { steps: steps.map((s) => s.step), at };
  }

  it('waits for the first eviction of the other before it is written', async () => {
    const { steps } = await twoFailed(400);
    // Without the wait f1's rest was written right after its first slots, while f2 was still being listed.
    expect(steps.slice(0, 2)).toEqual(['record f1 32', 'slots handed out']);
    const f2First = steps.indexOf('record f2 32');
    const rest = steps.findIndex((step) => step.endsWith('in the background'));
    expect(f2First).toBeGreaterThan(0);
    expect(rest).toBeGreaterThan(f2First);
    expect(steps.slice(f2First, rest)).toContain('slots handed out');
  });

  it('is not waited for by a plan that fits in its first rows: that message ends at once', async () => {
    const m = memoryPlane({ RESOURCE_EVICTION_RATE: '50' });
    await applyTo(m, [
      cluster('small', true),
      cluster('f2', true),
      ...Array.from({ length: 28 }, (_, i) => cluster(`h${i}`)),
      ...Array.from({ length: 10 }, (_, i) => binding(`small-app${i}`, ['small'])),
      ...Array.from({ length: 100 }, (_, i) => binding(`f2-app${i}`, ['f2'])),
    ]);
    const ledger = Object.create(m.ledger) as typeof m.ledger;
    ledger.listClusterRows = async (name) => {
      if (name === 'f2') await sleep(1500);
      return m.ledger.listClusterRows(name);
    };
    const plane = { ...m.plane, ledger, clock: systemClock };
    const started = Date.now();
    const ended: Record<string, number> = {};
    await Promise.all(
      ['small', 'f2'].map((name) =>
        planAndPaceHere(plane, async () => {
          await handleTaintManagerMessage(plane, { cluster: name, reason: 'taints-changed' });
          ended[name] = Date.now() - started;
        }),
      ),
    );
    // Its ten rows are all first rows. Waiting for f2's first eviction (a second at most) would end it after
    // the blocked rows' retry had found its own evictions blocked meanwhile.
    expect(ended.small).toBeLessThan(700);
    expect(ended.f2).toBeGreaterThan(1500);
  });

  it('waits a second at most for a cluster whose listing takes longer', async () => {
    const { at } = await twoFailed(2500);
    const waited = at('record f1 68 in the background') - at('record f1 32');
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(at('record f1 68 in the background')).toBeLessThan(at('record f2 32'));
  });
});
