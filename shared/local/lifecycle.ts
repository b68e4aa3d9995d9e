// The longest delay a Node timer holds (2^31 - 1 ms).
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * What the local host's runners share so that a stop is clean: a stop flag, sleeps that a stop cuts short,
 * and the set of in-flight invocations the stop waits for.
 *
 * Sleeps are plain timers kept in a set, not `timers/promises` with an AbortSignal. Every timer loop and
 * every queue poller sleeps at the same time, and each such sleep added an `abort` listener to the one
 * shared signal: with more than ten timer and queue functions Node printed MaxListenersExceededWarning at
 * start. Here a stop wakes the sleepers directly, so the number of functions costs no listeners at all.
 */
export class HostLifecycle {
  private stopped = false;
  private readonly sleepers = new Map<NodeJS.Timeout, () => void>();
  private readonly inFlight = new Set<Promise<unknown>>();

  get stopping(): boolean {
    return this.stopped;
  }

  /**
   * Waits `ms`; true when the time passed, false when the host stops first (or had already stopped).
   * Waits longer than a Node timer can hold (about 24.8 days, e.g. a yearly schedule) are taken in steps:
   * Node would otherwise warn (TimeoutOverflowWarning) and fire after 1 ms, running the timer far too early.
   */
  sleep(ms: number): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wait = (left: number) => {
        const step = Math.min(Math.max(0, left), MAX_TIMEOUT_MS);
        const timer = setTimeout(() => {
          this.sleepers.delete(timer);
          if (left > step) wait(left - step);
          else resolve(true);
        }, step);
        this.sleepers.set(timer, () => resolve(false));
      };
      wait(ms);
    });
  }

  /** Counts `work` as in flight until it settles; `drain` waits for it. */
  track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    const done = () => this.inFlight.delete(work);
    work.then(done, done);
    return work;
  }

  /** Takes no new work from here on and wakes every sleeping loop so it can see that. */
  stop(): void {
    this.stopped = true;
    for (const [timer, wake] of this.sleepers) {
      clearTimeout(timer);
      wake();
    }
    this.sleepers.clear();
  }

  /** Waits for the invocations in flight now to settle (successfully or not). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }
}
