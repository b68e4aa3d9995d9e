/**
 * Fault injection for the memory adapters: make one exact call fail, to simulate a storage fault or a crash
 * at a chosen step of a controller.
 *
 * - `failNext(method, error)` makes the next call of `method` reject with `error` before it touches
 *   anything (`when: 'before'`, the default), or after its write was applied (`when: 'after'`: the write
 *   happened but the caller never learns it, like a crash or a lost response). `skip: n` lets n calls of
 *   that method through first. Planned faults fire once each, in the order they were planned.
 * - `beforeWrite(method, args)`, when set, runs before every write method (after the `'before'` faults) and
 *   may throw (or reject) to fail that call with nothing written; it sees the caller's arguments.
 *
 * Only calls made by the adapter's users count: an adapter's internal steps (the due entries a
 * `recordEvictions` writes, the fallback of a `commitEviction`) are not separate calls.
 */
export type FaultWhen = 'before' | 'after';

export interface FaultOptions {
  when?: FaultWhen;
  /** Calls of the method to let through before this fault fires. */
  skip?: number;
}

export type BeforeWrite<M extends string = string> = (method: M, args: readonly unknown[]) => void | Promise<void>;

interface PlannedFault {
  method: string;
  error: Error;
  when: FaultWhen;
  skip: number;
}

export class Faults<M extends string = string> {
  private planned: PlannedFault[] = [];
  beforeWrite?: BeforeWrite<M>;

  failNext(method: M, error: Error, options: FaultOptions = {}): void {
    this.planned.push({ method, error, when: options.when ?? 'before', skip: options.skip ?? 0 });
  }

  /** Faults planned that have not fired yet (a test can check that its fault was reached). */
  get pending(): ReadonlyArray<{ method: M; when: FaultWhen; skip: number }> {
    return this.planned.map(({ method, when, skip }) => ({ method: method as M, when, skip }));
  }

  clear(): void {
    this.planned = [];
    this.beforeWrite = undefined;
  }

  /** Runs one call of `method` under the planned faults; `write` says whether `beforeWrite` applies. */
  async run<R>(method: M, args: readonly unknown[], write: boolean, body: () => R | Promise<R>): Promise<R> {
    // Always asynchronous, like a storage call: concurrent callers interleave between calls.
    await Promise.resolve();
    const index = this.planned.findIndex((fault) => fault.method === method);
    let fault: PlannedFault | undefined;
    if (index >= 0) {
      const planned = this.planned[index];
      if (planned.skip > 0) planned.skip--;
      else fault = this.planned.splice(index, 1)[0];
    }
    if (fault?.when === 'before') throw fault.error;
    if (write && this.beforeWrite) await this.beforeWrite(method, args);
    const result = await body();
    if (fault?.when === 'after') throw fault.error;
    return result;
  }
}
