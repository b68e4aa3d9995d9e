import { type Clock, sleep } from '../clock';

/**
 * The handler side of a deadline message (visible `leadSeconds` before its deadline): waits out the rest
 * and answers true, or answers false after re-queueing a deadline still too far off (Storage queues delay
 * at most 7 days, and a message may surface early).
 */
export async function awaitDeadline(clock: Clock, dueAt: string | undefined, leadSeconds: number, requeue: (dueAt: Date) => Promise<void>): Promise<boolean> {
  if (!dueAt) return true;
  const due = new Date(dueAt);
  const wait = due.getTime() - clock.now().getTime();
  if (wait > (leadSeconds + 3) * 1000) {
    await requeue(due);
    return false;
  }
  if (wait > 0) {
    await sleep(wait);
    // A timer may fire a millisecond or two before the clock reads its deadline. Acting then would find the
    // window not yet elapsed, and this message (the deadline's own) would be gone: the change would wait
    // for the next resync. So the last milliseconds are waited out too.
    for (let tries = 0, left = due.getTime() - clock.now().getTime(); left > 0 && left <= EARLY_WAKE_MS && tries < 5; tries++) {
      await sleep(left + 1);
      left = due.getTime() - clock.now().getTime();
    }
  }
  return true;
}

/** How early a timer may fire, as measured by the clock, at most (Node rounds timer deadlines to the millisecond). */
const EARLY_WAKE_MS = 20;
