/**
 * Runs `task` over `items` with at most `limit` running at once; results in input order. For I/O-bound
 * work over many independent objects (templates applied in bulk, a policy change deriving them all).
 */
export async function mapConcurrent<T, R>(items: readonly T[], limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * A pass that callers share when it is fresh enough for them: a caller takes a `ticket()` once the change it
 * needs the pass to see is stored, and `after(ticket)` returns a pass that began after that: the one waiting
 * to begin, or the last one that began (running or finished), or else a new one, which begins once the
 * running one has ended: passes never overlap, and at most one waits. Ten taint-manager messages handled at
 * once then cost one scan of the blocked rows, not ten; a message and the resync never plan one cluster at
 * once. A pass that fails is not shared with later callers. The last result is kept (for the late callers
 * it serves) until the next pass begins.
 */
export class SharedPass<T> {
  private begun = 0;
  private latest: { seq: number; result: Promise<T> } | undefined;
  private waiting: Promise<T> | undefined;

  constructor(private readonly pass: () => Promise<T>) {}

  /** How many passes have begun: a pass that begins later serves the caller. */
  ticket(): number {
    return this.begun;
  }

  after(ticket: number): Promise<T> {
    if (this.waiting) return this.waiting;
    if (this.latest && this.latest.seq > ticket) return this.latest.result;
    const previous = this.latest?.result;
    if (!previous) return this.begin();
    const waiting = previous.then(
      () => this.begin(),
      () => this.begin(),
    );
    this.waiting = waiting;
    return waiting;
  }

  private begin(): Promise<T> {
    this.waiting = undefined;
    const seq = ++this.begun;
    const result = this.pass();
    this.latest = { seq, result };
    result.catch(() => {
      if (this.latest?.seq === seq) this.latest = undefined;
    });
    return result;
  }
}

/**
 * Cuts `items` into batches of at most `size`, in order, none naming a key twice: an item whose key its batch
 * already holds starts the next batch, so a caller naming one object twice gets it applied in order.
 */
export function distinctBatches<T>(items: readonly T[], size: number, keyOf: (item: T) => string): T[][] {
  const batches: T[][] = [];
  let batch: T[] = [];
  let keys = new Set<string>();
  for (const item of items) {
    const key = keyOf(item);
    if (batch.length >= size || keys.has(key)) {
      batches.push(batch);
      batch = [];
      keys = new Set();
    }
    batch.push(item);
    keys.add(key);
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/**
 * At most `limit` tasks running at once across every caller that shares it, the rest waiting in order of
 * arrival: bulk writes of one process kept from queueing more requests at storage than it serves at a time,
 * so that a small request sent meanwhile (a pacer pass) does not wait behind all of them.
 */
export class Limiter {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running < this.limit) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter, or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
