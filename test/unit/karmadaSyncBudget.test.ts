import { describe, expect, it } from 'vitest';
import { endMarginMs, watchBudgetSeconds } from '../../functions/karmadaSync';

/** The Karmada watch ends a margin before the timer's next tick, wherever in the period it started. */
describe('watchBudgetSeconds', () => {
  const cases: Array<[string, number, number, number]> = [
    ['started on the tick', 20_000, 1000, 9],
    ['started a little late', 20_120, 1000, 8.88],
    ['started late in the period', 28_500, 1000, 0.5],
    ['started inside the margin: no watch, the next tick comes at once', 29_200, 1000, 0],
    ['started a millisecond before the tick', 29_999, 1000, 0],
    ['a short margin: the watch ends 250 ms before the tick', 20_000, 250, 9.75],
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
