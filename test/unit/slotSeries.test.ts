import { describe, expect, it } from 'vitest';
import { assignSlots, earliestSlot, slotHorizon } from '../../shared/failover/evictionDecision';
import { forecastSlots } from '../../shared/failover/slotForecast';

/**
 * The slot series (pure): a tick continues the series at its next free slot while a message can still reach
 * the worker by then, so slots stay contiguous across ticks; a series that has run out starts afresh.
 * Times in ms; leads as the pacer's (fresh 1.5 s, delivery 1 s); 4/s.
 */
const LEADS = { freshMs: 1500, deliveryMs: 1000 };

describe('earliestSlot', () => {
  const cases: Array<{ name: string; nextFreeSlot: number; now: number; want: number }> = [
    { name: 'a queue idle for long starts a fresh series', nextFreeSlot: 0, now: 10_000, want: 11_500 },
    { name: 'a series whose next slot just passed starts afresh', nextFreeSlot: 9_999, now: 10_000, want: 11_500 },
    { name: 'a running series, tick on time', nextFreeSlot: 13_750, now: 10_000, want: 11_000 },
    { name: 'a running series, tick late: its next slot is closer than the fresh lead', nextFreeSlot: 11_250, now: 10_000, want: 11_000 },
    { name: 'a running series, tick later still: its next slot can no longer be reached', nextFreeSlot: 10_500, now: 10_000, want: 11_000 },
  ];
  it.each(cases)('$name', ({ nextFreeSlot, now, want }) => expect(earliestSlot(nextFreeSlot, now, LEADS)).toBe(want));
});

describe('slotHorizon', () => {
  const LOOK_AHEAD = { baseMs: 4500, deliveryMs: 1000, tickMs: 1000, maxMs: 10_000 };
  const cases: Array<{ name: string; nextFreeSlot: number; now: number; previousTickAt: number; want: number }> = [
    { name: 'ticks a second apart: the window', nextFreeSlot: 13_750, now: 10_000, previousTickAt: 9_000, want: 14_500 },
    { name: 'the previous tick 2 s ago: still the window', nextFreeSlot: 12_750, now: 10_000, previousTickAt: 8_000, want: 14_500 },
    {
      name: 'the previous tick 3 s ago: a next one 4 s away needs more than the window',
      nextFreeSlot: 11_750,
      now: 10_000,
      previousTickAt: 7_000,
      want: 15_000,
    },
    { name: 'the previous tick 4 s ago: far enough for a next tick 5 s away', nextFreeSlot: 11_000, now: 10_000, previousTickAt: 6_000, want: 16_000 },
    { name: 'a long stall: at most the maximum', nextFreeSlot: 10_500, now: 10_000, previousTickAt: 0, want: 20_000 },
    { name: 'a series that ran out: the window, however long ago the last tick', nextFreeSlot: 9_000, now: 10_000, previousTickAt: 0, want: 14_500 },
  ];
  it.each(cases)('$name', ({ nextFreeSlot, now, previousTickAt, want }) => expect(slotHorizon(nextFreeSlot, now, previousTickAt, LOOK_AHEAD)).toBe(want));
});

describe('assignSlots from earliestSlot: ticks of one series', () => {
  // Each tick: its time, the rows due (times), the horizon (tick + 4.5 s); `nextFreeSlot` carries over.
  const cases: Array<{ name: string; ticks: Array<{ at: number; due: number[] }>; want: number[][] }> = [
    {
      name: 'ticks a second apart: one window, then a second of slots each',
      ticks: [
        { at: 0, due: Array.from({ length: 20 }, () => 0) },
        { at: 1000, due: Array.from({ length: 7 }, () => 0) },
      ],
      want: [Array.from({ length: 13 }, (_, i) => 1500 + i * 250), [4750, 5000, 5250, 5500]],
    },
    {
      name: 'a tick 3.5 s late continues at 4.75 s (it restarted at 5 s: a slot lost at the change of tick)',
      ticks: [
        { at: 0, due: Array.from({ length: 30 }, () => 0) },
        { at: 3500, due: Array.from({ length: 17 }, () => 0) },
      ],
      want: [Array.from({ length: 13 }, (_, i) => 1500 + i * 250), Array.from({ length: 14 }, (_, i) => 4750 + i * 250)],
    },
    {
      name: 'a tick 4.2 s late: 4.75 s is out of reach, the series shifts to 5.2 s',
      ticks: [
        { at: 0, due: Array.from({ length: 13 }, () => 0) },
        { at: 4200, due: [0, 0] },
      ],
      want: [Array.from({ length: 13 }, (_, i) => 1500 + i * 250), [5200, 5450]],
    },
    {
      name: 'a row due mid-stream takes the next slot of the series, not its due time',
      ticks: [
        { at: 0, due: [0, 0, 0, 0, 0, 0] },
        { at: 1000, due: [0, 0, 3000] },
      ],
      want: [
        [1500, 1750, 2000, 2250, 2500, 2750],
        [3000, 3250, 3500],
      ],
    },
    {
      name: 'the series ran out (nothing due for a while): the next rows start afresh',
      ticks: [
        { at: 0, due: [0] },
        { at: 5000, due: [5000] },
      ],
      want: [[1500], [6500]],
    },
  ];
  it.each(cases)('$name', ({ ticks, want }) => {
    let nextFreeSlot = 0;
    const got: number[][] = [];
    for (const tick of ticks) {
      const result = assignSlots(tick.due, nextFreeSlot, earliestSlot(nextFreeSlot, tick.at, LEADS), 4, tick.at + 4500);
      got.push(result.slots);
      nextFreeSlot = result.nextFreeSlot;
    }
    expect(got).toEqual(want);
  });
});

describe('forecastSlots follows the same series rule when told the time', () => {
  const rows = [
    { id: 'a', cluster: 'm1', bindingKey: 'rb:ns:a', dueAt: 0 },
    { id: 'b', cluster: 'm1', bindingKey: 'rb:ns:b', dueAt: 0 },
  ];
  const cases: Array<{ name: string; nextSlotAt: number; running?: boolean; want: number[] }> = [
    { name: 'a running series continues at its next slot', nextSlotAt: 11_250, running: true, want: [11_250, 11_500] },
    { name: 'without the time: from the fresh lead, as before', nextSlotAt: 11_250, want: [11_500, 11_750] },
    { name: 'a running series out of reach shifts to the delivery lead', nextSlotAt: 10_250, running: true, want: [11_000, 11_250] },
    { name: 'a series that ran out starts afresh', nextSlotAt: 9_000, running: true, want: [11_500, 11_750] },
  ];
  it.each(cases)('$name', ({ nextSlotAt, running, want }) => {
    const slots = forecastSlots(rows, nextSlotAt, 10_000 + 1500, 4, running ? { now: 10_000, deliveryLeadMs: 1000 } : undefined);
    expect([slots.get('a'), slots.get('b')]).toEqual(want);
  });
});
