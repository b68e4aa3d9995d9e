import { describe, expect, it } from 'vitest';
import { endMarginMs, watchBudgetSeconds } from '../../functions/karmadaSync';

/** The Karmada watch runs about 55 s and ends a margin before a whole second (the timer ticks every second). */
describe('watchBudgetSeconds', () => {
  const cases: Array<[string, number, number, number]> = [
    ['started on a tick', 20_000, 1000, 54],
    ['started a little after a tick: ends before the tick 55 s on', 20_120, 1000, 54.88],
    ['started late in a second', 20_900, 1000, 54.1],
    ['a short margin', 20_000, 250, 54.75],
    ['the longest margin', 20_000, 2000, 53],
  ];
  it.each(cases)('%s', (_name, now, margin, seconds) => {
    expect(watchBudgetSeconds(now, margin)).toBeCloseTo(seconds, 6);
  });
});

/** The margin follows how long the invocations took to end after their watches: twice that, within bounds. */
describe('endMarginMs', () => {
  const cases: Array<[string, number | undefined, number]> = [
    ['before any end: a second', undefined, 1000],
    ['ends that took nothing: the floor', 0, 250],
    ['an end of 40 ms: the floor', 40, 250],
    ['an end of 300 ms: twice that', 300, 600],
    ['an end of 5 s (a loaded host): the ceiling', 5000, 2000],
  ];
  it.each(cases)('%s', (_name, lastEnd, margin) => {
    expect(endMarginMs(lastEnd)).toBe(margin);
  });
});
