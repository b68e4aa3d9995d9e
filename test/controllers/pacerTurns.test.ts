import { describe, expect, it } from 'vitest';
import { executeEviction } from '../../shared/controllers/evictionWorker';
import { runPacer } from '../../shared/controllers/pacer';
import type { EvictionMessage } from '../../shared/controllers/ports';
import { manageCluster } from '../../shared/controllers/taintManager';
import { binding, cluster } from '../helpers/fleet';
import { applyTo } from '../helpers/memoryLoop';
import { memoryPlane } from '../helpers/memoryPlane';

/**
 * Clusters that fail together take turns for the pacer's slots: each one's first eviction goes within a
 * slot or so of the others', not after every row of the clusters planned before it, and the rate and the
 * contiguous series of slots stay as they were. On the manual clock, at 4/s, clusters planned a second apart.
 */

const RATE = 4;
const INTERVAL_MS = 1000 / RATE;

/** Fails the clusters (name → bindings on it alone), planning each one a second after the one before. */
async function failedTogether(failed: Record<string, number>) {
  const m = memoryPlane({ RESOURCE_EVICTION_RATE: String(RATE) });
  const names = Object.keys(failed);
  await applyTo(m, [
    ...names.map((name) => cluster(name, true)),
    ...Array.from({ length: 17 }, (_, i) => cluster(`healthy${i}`)),
    ...names.flatMap((name) => Array.from({ length: failed[name] }, (_, i) => binding(`${name}-w${i}`, [name]))),
  ]);
  for (const name of names) {
    await manageCluster(m.plane, name);
    m.clock.advance(1000);
  }
  return m;
}

/** Pacer ticks a second apart, each eviction executed at its slot; the evictions in slot order. */
async function drain(m: Awaited<ReturnType<typeof failedTogether>>, ticks: number): Promise<EvictionMessage[]> {
  const done: EvictionMessage[] = [];
  const queued: EvictionMessage[] = [];
  for (let i = 0; i < ticks; i++) {
    const tickAt = m.clock.now().getTime();
    await runPacer(m.plane);
    for (const message of m.evictions.takeAll()) queued.push(...message.message.evictions);
    queued.sort((a, b) => a.slot.localeCompare(b.slot));
    while (queued.length > 0 && Date.parse(queued[0].slot) < tickAt + 1000) {
      const message = queued.shift()!;
      m.clock.set(new Date(Math.max(m.clock.now().getTime(), Date.parse(message.slot))));
      expect(await executeEviction(m.plane, message)).toBe('evicted');
      done.push(message);
    }
    m.clock.set(new Date(tickAt + 1000));
  }
  return done;
}

describe('pacer turns: clusters that fail together drain side by side', () => {
  const cases: Array<{ name: string; failed: Record<string, number>; firstSix: string[] }> = [
    { name: 'three clusters of ten', failed: { a: 10, b: 10, c: 10 }, firstSix: ['a', 'b', 'c', 'a', 'b', 'c'] },
    // A lane that runs out leaves its share of the slots to the others: no slot goes unused.
    { name: 'one large, two small', failed: { a: 20, b: 1, c: 2 }, firstSix: ['a', 'b', 'c', 'a', 'c', 'a'] },
  ];
  it.each(cases)('$name: turns in the order of planning, 250 ms apart, every binding once', async ({ failed, firstSix }) => {
    const m = await failedTogether(failed);
    const total = Object.values(failed).reduce((a, b) => a + b, 0);
    const done = await drain(m, Math.ceil(total / RATE) + 4);
    expect(done.map((e) => e.cluster).slice(0, 6)).toEqual(firstSix);
    expect(new Set(done.map((e) => e.bindingKey)).size).toBe(total);
    const slots = done.map((e) => Date.parse(e.slot));
    expect(slots.slice(1).map((s, i) => s - slots[i])).toEqual(Array.from({ length: total - 1 }, () => INTERVAL_MS));
    for (const name of Object.keys(failed)) {
      const rows = (await m.ledger.scanEvictions({ cluster: name })).map((r) => r.record);
      expect(rows.map((r) => r.state)).toEqual(Array.from({ length: failed[name] }, () => 'done'));
    }
  });
});
