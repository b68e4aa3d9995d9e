import { describe, expect, it } from 'vitest';
import {
  ClusterCandidate,
  compareDue,
  DueCandidate,
  interleave,
  isStarving,
  orderDue,
  orderRows,
  startAfter,
  STARVATION_SECONDS,
  turnsOf,
} from '../../shared/failover/priority';

/** The pacer's order (pure): priority, then due time; a row due for STARVATION_SECONDS goes first. */

const N = STARVATION_SECONDS * 1000;

describe('compareDue: which of two due rows takes the next slot', () => {
  const now = 1_000_000;
  const row = (priority: number, dueAgoMs: number): DueCandidate => ({ priority, dueAt: now - dueAgoMs });
  const cases: Array<[string, DueCandidate, DueCandidate, 'first' | 'second']> = [
    ['higher priority first', row(1000, 0), row(0, 5000), 'first'],
    ['equal priority: earlier due first', row(5, 1000), row(5, 2000), 'second'],
    ['negative priority after none', row(-10, 9000), row(0, 0), 'second'],
    ['a row not yet due goes after a due one, whatever its priority', { priority: 1e9, dueAt: now + 1 }, row(0, 0), 'second'],
    ['two rows not yet due: earlier due first', { priority: 0, dueAt: now + 10 }, { priority: 9, dueAt: now + 20 }, 'first'],
    ['a starving row before a higher priority', row(0, N), row(1e9, 0), 'first'],
    ['just under the bound: priority still wins', row(0, N - 1), row(1e9, 0), 'second'],
    ['two starving rows: oldest due first, whatever the priority', row(0, N + 5000), row(1e9, N), 'first'],
  ];
  it.each(cases)('%s', (_name, a, b, winner) => {
    const sign = Math.sign(compareDue(a, b, now));
    expect(sign).toBe(winner === 'first' ? -1 : 1);
    expect(Math.sign(compareDue(b, a, now))).toBe(-sign);
  });

  it('orders a mixed queue', () => {
    const now2 = 10 * N;
    const items = [
      { id: 'low-new', priority: 0, dueAt: now2 - 1000 },
      { id: 'high-new', priority: 100, dueAt: now2 - 500 },
      { id: 'mid-old', priority: 50, dueAt: now2 - 20_000 },
      { id: 'low-starving', priority: 0, dueAt: now2 - N - 1 },
      { id: 'future-high', priority: 1000, dueAt: now2 + 1500 },
      { id: 'high-starving', priority: 100, dueAt: now2 - 2 * N },
    ];
    expect(orderDue(items, now2).map((i) => i.id)).toEqual(['high-starving', 'low-starving', 'high-new', 'mid-old', 'low-new', 'future-high']);
    expect(isStarving(items[3], now2)).toBe(true);
  });
});

/**
 * The starvation bound, shown by simulation: the pacer gives one slot every 1/r seconds to the first row in
 * `orderDue`; higher-priority rows keep arriving faster than the rate, so without the bound a low-priority
 * row would never go. With it, the low row due at `d` goes by d + N + Q/r (+ one slot), Q being the rows due
 * at or before d still waiting at d + N.
 */
describe('starvation bound: no row waits for ever behind a stream of higher-priority rows', () => {
  interface Row extends DueCandidate {
    id: string;
  }

  /** Runs the queue for `seconds`; returns when each row got its slot (ms). */
  function simulate(options: { rate: number; arrivalsPerSecond: number; backlog: number; seconds: number; starvationMs: number }): Map<string, number> {
    const { rate, arrivalsPerSecond, backlog, seconds, starvationMs } = options;
    const waiting: Row[] = [];
    // At t = 0: a backlog of high rows due at 0, and the low row due at 0 too.
    for (let i = 0; i < backlog; i++) waiting.push({ id: `backlog-${i}`, priority: 1000, dueAt: 0 });
    waiting.push({ id: 'low', priority: 0, dueAt: 0 });
    const sent = new Map<string, number>();
    const interval = 1000 / rate;
    let nextArrival = 1000 / arrivalsPerSecond;
    let arrivals = 0;
    for (let slot = interval; slot <= seconds * 1000; slot += interval) {
      while (nextArrival <= slot) {
        waiting.push({ id: `high-${arrivals++}`, priority: 1000, dueAt: nextArrival });
        nextArrival += 1000 / arrivalsPerSecond;
      }
      const [first] = orderDue(waiting, slot, starvationMs);
      if (!first) continue;
      waiting.splice(waiting.indexOf(first), 1);
      sent.set(first.id, slot);
    }
    return sent;
  }

  const cases = [
    { rate: 0.5, arrivalsPerSecond: 1, backlog: 0 },
    { rate: 0.5, arrivalsPerSecond: 5, backlog: 10 },
    { rate: 1, arrivalsPerSecond: 2, backlog: 30 },
    { rate: 0.1, arrivalsPerSecond: 1, backlog: 3 },
    { rate: 10, arrivalsPerSecond: 50, backlog: 500 },
  ];
  it.each(cases)('rate $rate/s, $arrivalsPerSecond higher-priority rows/s arriving, backlog $backlog', ({ rate, arrivalsPerSecond, backlog }) => {
    const horizon = STARVATION_SECONDS + backlog / rate + 120 / rate;
    const sent = simulate({ rate, arrivalsPerSecond, backlog, seconds: horizon, starvationMs: N });
    // Q: the backlog due at or before the low row (due at 0) that the rate had not served by N.
    const servedByN = Math.floor((N / 1000) * rate);
    const q = Math.max(0, backlog - servedByN);
    const bound = N + (q / rate) * 1000 + 1000 / rate;
    expect(sent.get('low')).toBeDefined();
    expect(sent.get('low')!).toBeLessThanOrEqual(bound);
    // Not earlier than it should: before N, priority wins (the arrivals are faster than the rate).
    expect(sent.get('low')!).toBeGreaterThanOrEqual(Math.min(N, (backlog / rate) * 1000));

    // Without the bound the low row never goes while higher-priority rows keep coming.
    const unbounded = simulate({ rate, arrivalsPerSecond, backlog, seconds: horizon, starvationMs: Number.POSITIVE_INFINITY });
    expect(unbounded.get('low')).toBeUndefined();
  });
});

describe('turnsOf and orderRows: failed clusters take turns among due rows of one priority', () => {
  const now = 10 * N;
  type Row = ClusterCandidate & { id: string };
  const row = (id: string, cluster: string, dueAgoMs: number, extra: Partial<Row> = {}): Row => ({ id, cluster, priority: 0, dueAt: now - dueAgoMs, ...extra });
  const cases: Array<{ name: string; rows: Row[]; want: string[]; turns?: string[][][] }> = [
    {
      name: "two clusters planned a few seconds apart: each one's first row before the first cluster's second",
      rows: [row('a1', 'a', 5000), row('a2', 'a', 5000), row('a3', 'a', 5000), row('b1', 'b', 1000), row('b2', 'b', 1000)],
      want: ['a1', 'b1', 'a2', 'b2', 'a3'],
      turns: [
        [
          ['a1', 'a2', 'a3'],
          ['b1', 'b2'],
        ],
      ],
    },
    {
      name: 'the cluster due first leads each round; within a cluster, due order',
      rows: [row('b1', 'b', 1000), row('a2', 'a', 3000), row('a1', 'a', 4000), row('c1', 'c', 2000)],
      want: ['a1', 'c1', 'b1', 'a2'],
    },
    {
      name: 'a higher priority goes first, its clusters taking turns among themselves',
      rows: [
        row('a1', 'a', 9000),
        row('a2', 'a', 9000),
        row('b1', 'b', 100, { priority: 5 }),
        row('c1', 'c', 200, { priority: 5 }),
        row('c2', 'c', 200, { priority: 5 }),
      ],
      want: ['c1', 'b1', 'c2', 'a1', 'a2'],
      turns: [[['c1', 'c2'], ['b1']], [['a1', 'a2']]],
    },
    {
      name: 'starving rows go first, oldest first, each a turn of its own',
      rows: [row('a1', 'a', 1000), row('s2', 'b', N + 10), row('s1', 'a', N + 20), row('b1', 'b', 2000)],
      want: ['s1', 's2', 'b1', 'a1'],
      turns: [[['s1']], [['s2']], [['b1'], ['a1']]],
    },
    {
      name: 'rows not yet due and rows waiting for a budget keep their own place',
      rows: [row('f1', 'a', -1000), row('p1', 'b', 3000, { parkedFor: 'ns/budget' }), row('a1', 'a', 2000), row('b1', 'b', 1000)],
      want: ['p1', 'a1', 'b1', 'f1'],
      turns: [[['p1']], [['a1'], ['b1']], [['f1']]],
    },
  ];
  it.each(cases)('$name', ({ rows, want, turns }) => {
    expect(orderRows(rows, now).map((r) => r.id)).toEqual(want);
    if (turns) expect(turnsOf(rows, now).map((turn) => turn.map((lane) => lane.map((r) => r.id)))).toEqual(turns);
  });

  it("interleave takes each lane's first, then each one's second", () => {
    expect(interleave([[1, 2, 3], [10], [20, 21]])).toEqual([1, 10, 20, 2, 21, 3]);
    expect(interleave<number>([])).toEqual([]);
  });
});

describe('startAfter: clusters take turns across passes', () => {
  const lane = (cluster: string) => [{ cluster }];
  const order = (lanes: ReadonlyArray<ReadonlyArray<{ cluster: string }>>) => lanes.map((l) => l[0].cluster);
  it.each([
    { name: 'no last cluster: as they are', last: undefined, expected: ['a', 'b', 'c'] },
    { name: 'the first took the last slot: the second goes first', last: 'a', expected: ['b', 'c', 'a'] },
    { name: 'the middle one: wraps around', last: 'b', expected: ['c', 'a', 'b'] },
    { name: 'the last one: as they are', last: 'c', expected: ['a', 'b', 'c'] },
    { name: 'a cluster with no lane here: as they are', last: 'z', expected: ['a', 'b', 'c'] },
  ])('$name', ({ last, expected }) => {
    expect(order(startAfter([lane('a'), lane('b'), lane('c')], last))).toEqual(expected);
  });
});
