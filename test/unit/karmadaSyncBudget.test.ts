import { describe, expect, it } from 'vitest';
import { watchBudgetSeconds } from '../../functions/karmadaSync';

/** The Karmada watch ends a second before the timer's next tick, wherever in the period it started. */
describe('watchBudgetSeconds', () => {
  const cases: Array<[string, number, number]> = [
    ['started on the tick', 20_000, 9],
    ['started a little late', 20_120, 8.88],
    ['started late in the period', 28_500, 0.5],
    ['started inside the margin: no watch, the next tick comes at once', 29_200, 0],
    ['started a millisecond before the tick', 29_999, 0],
  ];
  it.each(cases)('%s', (_name, now, seconds) => {
    expect(watchBudgetSeconds(now)).toBeCloseTo(seconds, 6);
  });
});
