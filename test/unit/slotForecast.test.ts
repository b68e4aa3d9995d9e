import { describe, expect, it } from 'vitest';
import { forecastSlots, WaitingRow } from '../../shared/failover/slotForecast';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const row = (id: string, dueOffsetMs: number, extra: Partial<WaitingRow> = {}): WaitingRow => ({
  id,
  cluster: 'm1',
  bindingKey: `rb:ns:${id}`,
  dueAt: T0 + dueOffsetMs,
  ...extra,
});

describe('forecastSlots (the pacer order and spacing, without its window)', () => {
  const cases: Array<{ name: string; rows: WaitingRow[]; nextSlotAt: number; rate: number; want: Record<string, number> }> = [
    {
      name: 'due now, 2/s: half a second apart from the earliest slot',
      rows: [row('a', 0), row('b', 0), row('c', 0)],
      nextSlotAt: 0,
      rate: 2,
      want: { a: 1500, b: 2000, c: 2500 },
    },
    { name: 'a later due time waits for it', rows: [row('a', 0), row('b', 10_000)], nextSlotAt: 0, rate: 1, want: { a: 1500, b: 10_000 } },
    { name: 'after the slots already handed out', rows: [row('a', 0)], nextSlotAt: T0 + 5000, rate: 1, want: { a: 5000 } },
    { name: 'a scheduled row keeps its slot', rows: [row('a', 0, { scheduledFor: T0 + 800 }), row('b', 0)], nextSlotAt: 0, rate: 1, want: { a: 800, b: 1500 } },
    {
      name: 'due order, then cluster, then binding',
      rows: [row('z', 0, { cluster: 'm2' }), row('y', 0, { cluster: 'm1' })],
      nextSlotAt: 0,
      rate: 1,
      want: { y: 1500, z: 2500 },
    },
    {
      name: 'clusters due together take turns, the one due first leading',
      rows: [row('a1', 0), row('a2', 0), row('a3', 0), row('b1', 500, { cluster: 'm2' }), row('b2', 500, { cluster: 'm2' })],
      nextSlotAt: 0,
      rate: 1,
      want: { a1: 1500, b1: 2500, a2: 3500, b2: 4500, a3: 5500 },
    },
    { name: 'rate 0 forecasts nothing', rows: [row('a', 0)], nextSlotAt: 0, rate: 0, want: {} },
  ];
  it.each(cases)('$name', ({ rows, nextSlotAt, rate, want }) => {
    const slots = forecastSlots(rows, nextSlotAt, T0 + 1500, rate);
    expect(Object.fromEntries([...slots].map(([id, at]) => [id, at - T0]))).toEqual(want);
  });
});
