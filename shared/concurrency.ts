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
 * needs the pass to see is stored, and `after(ticket)` returns a pass that started after that (one running,
 * or the last one finished) or starts one, once the one running (if any) has ended: passes never overlap.
 * Ten taint-manager messages handled at once then cost one scan of the blocked rows, not ten; a message and
 * the resync never plan one cluster at once. A pass that fails is not shared with later callers.
 */
export class SharedPass<T> {
  private started = 0;
  private latest: { seq: number; result: Promise<T> } | undefined;

  constructor(private readonly pass: () => Promise<T>) {}

  ticket(): number {
    return this.started;
  }

  after(ticket: number): Promise<T> {
    if (this.latest && this.latest.seq > ticket) return this.latest.result;
    const seq = ++this.started;
    const previous = this.latest?.result;
    const result = previous ? previous.then(this.pass, this.pass) : this.pass();
    this.latest = { seq, result };
    result.catch(() => {
      if (this.latest?.seq === seq) this.latest = undefined;
    });
    return result;
  }
}
