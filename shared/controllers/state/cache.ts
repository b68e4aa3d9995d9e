/**
 * A short-lived per-process copy of something read from storage, per control plane and key. The control
 * plane is the scope (tests build several, each with its own storage); entries older than `maxAgeMs` are
 * read again, and a writer that changed the value drops or replaces its own copy at once.
 */
export class RecentCache<T> {
  private readonly entries = new WeakMap<object, Map<string, { at: number; value: T }>>();

  constructor(private readonly ttlMs: number) {}

  /** The value if this process read or wrote it less than `maxAgeMs` ago. */
  peek(scope: object, key = '', maxAgeMs = this.ttlMs): T | undefined {
    const hit = this.entries.get(scope)?.get(key);
    return hit && Date.now() - hit.at < maxAgeMs ? hit.value : undefined;
  }

  async get(scope: object, load: () => Promise<T>, options: { key?: string; maxAgeMs?: number } = {}): Promise<T> {
    const key = options.key ?? '';
    const hit = this.peek(scope, key, options.maxAgeMs ?? this.ttlMs);
    if (hit !== undefined) return hit;
    // Aged from when the read was sent, not answered: storage served it at some moment in between, so a
    // slow answer (a stalled connection) does not stretch how stale a value may be when it is used.
    const sentAt = Date.now();
    const value = await load();
    this.set(scope, value, key, sentAt);
    return value;
  }

  set(scope: object, value: T, key = '', at = Date.now()): void {
    let map = this.entries.get(scope);
    if (!map) this.entries.set(scope, (map = new Map<string, { at: number; value: T }>()));
    map.set(key, { at, value });
  }

  /** Replaces a value this process still holds, keeping its age (an update read since does not make it younger). */
  replace(scope: object, value: T, key = ''): void {
    const hit = this.entries.get(scope)?.get(key);
    if (hit) hit.value = value;
  }

  forget(scope: object, key?: string): void {
    if (key === undefined) this.entries.delete(scope);
    else this.entries.get(scope)?.delete(key);
  }
}
