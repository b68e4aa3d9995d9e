import { describe, expect, it } from 'vitest';
import { PlaneCaches, RecentCache } from '../../shared/cache';
import { ManualClock } from '../../shared/clock';

const cache = new RecentCache<string>('recentCacheTest', 1000);

/** A load the test answers when it wants, counting how many were sent. */
function loads() {
  const pending: Array<(value: string) => void> = [];
  return {
    pending,
    load: () => new Promise<string>((resolve) => pending.push(resolve)),
  };
}

describe('RecentCache.getAged', () => {
  const cases: Array<{ name: string; advanceMs: number; maxAgeMs?: number; loaded: boolean; ageMs: number }> = [
    { name: 'a fresh copy is handed out with its age', advanceMs: 400, loaded: false, ageMs: 400 },
    { name: 'a copy as old as the limit is read again', advanceMs: 1000, loaded: true, ageMs: 0 },
    { name: 'a tighter limit reads again', advanceMs: 400, maxAgeMs: 100, loaded: true, ageMs: 0 },
  ];
  it.each(cases)('$name', async ({ advanceMs, maxAgeMs, loaded, ageMs }) => {
    const scope = { caches: new PlaneCaches(), clock: new ManualClock() };
    cache.set(scope, 'stored');
    scope.clock.advance(advanceMs);
    const answer = await cache.getAged(scope, async () => 'read', maxAgeMs === undefined ? {} : { maxAgeMs });
    expect(answer).toEqual({ value: loaded ? 'read' : 'stored', ageMs });
  });

  it('shares a read on its way that was sent within the limit, with its age', async () => {
    const scope = { caches: new PlaneCaches(), clock: new ManualClock() };
    const { pending, load } = loads();
    const first = cache.getAged(scope, load, { maxAgeMs: 100 });
    scope.clock.advance(60);
    const second = cache.getAged(scope, load, { maxAgeMs: 100 });
    scope.clock.advance(60);
    // Sent 120 ms ago: too old for this caller, who sends its own.
    const third = cache.getAged(scope, load, { maxAgeMs: 100 });
    expect(pending).toHaveLength(2);
    pending[0]('a');
    pending[1]('b');
    expect(await Promise.all([first, second, third])).toEqual([
      { value: 'a', ageMs: 0 },
      { value: 'a', ageMs: 60 },
      { value: 'b', ageMs: 0 },
    ]);
  });

  it('does not keep a read that a writer overtook while it was on its way', async () => {
    const scope = { caches: new PlaneCaches(), clock: new ManualClock() };
    const { pending, load } = loads();
    const read = cache.getAged(scope, load);
    // The writer stores what it wrote; the read was served before the write and answers after it.
    cache.set(scope, 'written');
    pending[0]('served before the write');
    expect((await read).value).toBe('served before the write');
    expect(cache.peek(scope)).toBe('written');
  });

  it('does not share a read that was on its way when the copy was forgotten (it may predate the write)', async () => {
    const scope = { caches: new PlaneCaches(), clock: new ManualClock() };
    const { pending, load } = loads();
    const before = cache.getAged(scope, load);
    cache.forget(scope);
    const after = cache.getAged(scope, load);
    expect(pending).toHaveLength(2);
    pending[0]('before the write');
    pending[1]('after the write');
    expect((await before).value).toBe('before the write');
    expect((await after).value).toBe('after the write');
    expect(cache.peek(scope)).toBe('after the write');
  });

  it('keeps a read aged from when it was sent, not answered', async () => {
    const scope = { caches: new PlaneCaches(), clock: new ManualClock() };
    const { pending, load } = loads();
    const read = cache.getAged(scope, load);
    scope.clock.advance(700);
    pending[0]('slow');
    await read;
    expect(cache.peek(scope, '', 701)).toBe('slow');
    expect(cache.peek(scope, '', 700)).toBeUndefined();
  });
});
