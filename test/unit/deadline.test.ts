import { describe, expect, it } from 'vitest';
import { type Clock, ManualClock } from '../../shared/clock';
import { awaitDeadline } from '../../shared/queue/deadline';

describe('deadline messages', () => {
  const clock = new ManualClock('2026-01-01T00:00:10.000Z');
  it.each<[string, string | undefined, boolean, string | undefined]>([
    ['no deadline: act now', undefined, true, undefined],
    ['already passed: act now', '2026-01-01T00:00:09.000Z', true, undefined],
    ['within lead + 3 s: wait, then act', '2026-01-01T00:00:10.050Z', true, undefined],
    ['further off (surfaced early or beyond 7 days): queue again, do not act', '2026-01-01T00:00:16.000Z', false, '2026-01-01T00:00:16.000Z'],
  ])('%s', async (_name, dueAt, acts, requeued) => {
    let again: string | undefined;
    const started = Date.now();
    expect(await awaitDeadline(clock, dueAt, 2, async (due) => void (again = due.toISOString()))).toBe(acts);
    expect(again).toBe(requeued);
    if (dueAt === '2026-01-01T00:00:10.050Z') expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it('acts only once the clock reads the deadline, even when the timer fires a little early', async () => {
    // A clock slower than the timers (as a timer rounded to the millisecond can fire before the clock reads
    // its deadline): after sleeping the whole wait it still reads a few milliseconds before the deadline.
    const start = Date.now();
    const behind: Clock = { now: () => new Date(start + Math.floor((Date.now() - start) * 0.8)) };
    const due = new Date(behind.now().getTime() + 30);
    expect(await awaitDeadline(behind, due.toISOString(), 2, async () => undefined)).toBe(true);
    expect(behind.now().getTime()).toBeGreaterThanOrEqual(due.getTime());
  });
});
