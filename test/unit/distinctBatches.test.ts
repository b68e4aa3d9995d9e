import { describe, expect, it } from 'vitest';
import { distinctBatches } from '../../shared/concurrency';

describe('distinctBatches: batches of at most a size, none naming a key twice, in order', () => {
  const cases: Array<{ name: string; items: string[]; size: number; want: string[][] }> = [
    { name: 'none', items: [], size: 3, want: [] },
    { name: 'cut at the size', items: ['a', 'b', 'c', 'd', 'e'], size: 2, want: [['a', 'b'], ['c', 'd'], ['e']] },
    {
      name: 'a key again starts the next batch',
      items: ['a', 'b', 'a', 'c'],
      size: 10,
      want: [
        ['a', 'b'],
        ['a', 'c'],
      ],
    },
    { name: 'both rules', items: ['a', 'a', 'b', 'c', 'd'], size: 2, want: [['a'], ['a', 'b'], ['c', 'd']] },
  ];
  it.each(cases)('$name', ({ items, size, want }) => {
    expect(distinctBatches(items, size, (item) => item)).toEqual(want);
  });
});
