import { describe, expect, it } from 'vitest';
import { MIN_SLOT_LEAD_MS, RUN_HERE_LEAD_MS, RUN_HERE_WITHIN_MS, runPacer } from '../../shared/controllers/pacer';
import type { EvictionBatch } from '../../shared/controllers/ports';
import { manageCluster } from '../../shared/controllers/taintManager';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { MemoryPlane, memoryPlane } from '../helpers/memoryPlane';

/**
 * A pacer pass whose caller executes the nearest evictions itself (`runHere`: the Karmada watch, which cannot
 * hand messages off) starts a fresh series RUN_HERE_LEAD_MS ahead instead of MIN_SLOT_LEAD_MS; the messages
 * due within RUN_HERE_WITHIN_MS go to the caller, the rest to the queue; two passes still never hand out a
 * slot closer than 1/rate to another (the stored next free slot, ETag-guarded).
 */
async function failed(rate: number, count: number): Promise<MemoryPlane> {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: String(rate) });
  await applyTo(m, [
    cluster('m1', true),
    ...Array.from({ length: 11 }, (_, i) => cluster(`m${i + 2}`)),
    ...Array.from({ length: count }, (_, i) => binding(`app${i}`, ['m1'])),
  ]);
  await manageCluster(m.plane, 'm1');
  return m;
}

const slotsOf = (batches: EvictionBatch[]) => batches.flatMap((batch) => batch.evictions.map((e) => Date.parse(e.slot)));
const queued = (m: MemoryPlane) => m.evictions.takeAll().map((message) => message.message);

describe('pacer pass that runs the nearest evictions itself', () => {
  it('starts a fresh series at its lead, gives the caller the first second and queues the rest, 1/rate apart', async () => {
    const m = await failed(5, 8);
    const now = m.clock.now().getTime();
    const here: EvictionBatch[] = [];
    expect((await runPacer(m.plane, { runHere: (batch) => here.push(batch) > 0 })).scheduled).toBe(8);
    const mine = slotsOf(here);
    const sent = slotsOf(queued(m));
    expect(mine[0] - now).toBe(RUN_HERE_LEAD_MS);
    expect(mine.every((slot) => slot - now < RUN_HERE_LEAD_MS + RUN_HERE_WITHIN_MS)).toBe(true);
    expect(sent.length).toBeGreaterThan(0);
    const all = [...mine, ...sent].sort((a, b) => a - b);
    expect(all.slice(1).map((s, i) => s - all[i])).toEqual(Array(7).fill(200));
  });

  it('sends what the caller refuses (its invocation is about to end)', async () => {
    const m = await failed(5, 3);
    await runPacer(m.plane, { runHere: () => false });
    expect(slotsOf(queued(m))).toHaveLength(3);
  });

  it('starts MIN_SLOT_LEAD_MS ahead without it', async () => {
    const m = await failed(5, 2);
    const now = m.clock.now().getTime();
    await runPacer(m.plane);
    expect(Math.min(...slotsOf(queued(m))) - now).toBe(MIN_SLOT_LEAD_MS);
  });

  it('a pass right after another continues its series: never closer than 1/rate', async () => {
    const m = await failed(2, 3);
    const now = m.clock.now().getTime();
    await runPacer(m.plane);
    // A second failure planned a moment later, paced at once by a pass that runs its nearest evictions.
    await applyTo(m, [cluster('n1', true), binding('late', ['n1'])]);
    await manageCluster(m.plane, 'n1');
    m.clock.set(new Date(now + 100));
    const here: EvictionBatch[] = [];
    await runPacer(m.plane, { runHere: (batch) => here.push(batch) > 0 });
    const slots = [...slotsOf(queued(m)), ...slotsOf(here)].sort((a, b) => a - b);
    expect(slots).toHaveLength(4);
    expect(slots.slice(1).map((s, i) => s - slots[i])).toEqual([500, 500, 500]);
    expect(slots[0] - now).toBe(MIN_SLOT_LEAD_MS);
  });
});
