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
  if (wait > 0) await sleep(wait);
  return true;
}
