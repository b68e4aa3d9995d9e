import type { Clock } from './clock';

/**
 * What one process keeps of what it read from storage, per control plane: a named store per cache, held by
 * the plane (`plane.caches`), so a plane built for a test or another host starts empty, and what a process
 * holds can be listed by name.
 */
export class PlaneCaches {
  private readonly stores = new Map<string, Map<string, { at: number; value: unknown }>>();
  /** Other per-process state, by name (PlaneState): what a pass shares, what was seen last, when a pass last ran. */
  readonly kept = new Map<string, unknown>();

  /** The entries of the cache `name` (created on first use). */
  store(name: string): Map<string, { at: number; value: unknown }> {
    let store = this.stores.get(name);
    if (!store) this.stores.set(name, (store = new Map<string, { at: number; value: unknown }>()));
    return store;
  }

  /** Each cache's and each kept state's name, with how many entries it holds now (1 for a single value). */
  sizes(): Record<string, number> {
    const sizeOf = (value: unknown) => (value instanceof Map || value instanceof Set ? value.size : 1);
    return Object.fromEntries([
      ...[...this.stores].map(([name, store]) => [name, store.size] as const),
      ...[...this.kept].map(([name, value]) => [name, sizeOf(value)] as const),
    ]);
  }

  /** Drops everything (a test's reset, or a process that must read everything again). */
  clear(): void {
    this.stores.clear();
    this.kept.clear();
  }
}

/** What a cache is kept by: the plane's caches, aged by the plane's clock. */
export interface CacheScope {
  caches: PlaneCaches;
  clock: Clock;
}

const names = new Set<string>();

/**
 * A short-lived copy of something read from storage, one per plane and key, in the plane's store named
 * `name`. Entries older than `ttlMs` by the plane's clock are read again; a writer that changed the value
 * drops or replaces its own copy at once.
 */
export class RecentCache<T> {
  constructor(
    readonly name: string,
    private readonly ttlMs: number,
  ) {
    // One module owns each name: two caches in one store would read each other's values.
    if (names.has(name)) throw new Error(`a cache named "${name}" already exists`);
    names.add(name);
  }

  private entries(scope: CacheScope) {
    return scope.caches.store(this.name) as Map<string, { at: number; value: T }>;
  }

  /** The value if this process read or wrote it less than `maxAgeMs` ago. */
  peek(scope: CacheScope, key = '', maxAgeMs = this.ttlMs): T | undefined {
    return this.young(this.entries(scope).get(key), scope.clock.now().getTime(), maxAgeMs)?.value;
  }

  /** An entry (a copy, or a read on its way) with its age at `now`, when younger than `maxAgeMs`. */
  private young<V>(entry: { at: number; value: V } | undefined, now: number, maxAgeMs: number): { value: V; ageMs: number } | undefined {
    return entry && now - entry.at < maxAgeMs ? { value: entry.value, ageMs: now - entry.at } : undefined;
  }

  async get(scope: CacheScope, load: () => Promise<T>, options: { key?: string; maxAgeMs?: number } = {}): Promise<T> {
    return (await this.getAged(scope, load, options)).value;
  }

  /**
   * As `get`, with how old the value was when asked for: 0 when it was read now. A value is aged from when
   * its read was sent, not answered: storage served it at some moment in between, so a slow answer (a
   * stalled connection) does not stretch how stale a value may be when it is used. A read on its way that was
   * sent within `maxAgeMs` is shared instead of sending another.
   */
  async getAged(scope: CacheScope, load: () => Promise<T>, options: { key?: string; maxAgeMs?: number } = {}): Promise<{ value: T; ageMs: number }> {
    const key = options.key ?? '';
    const maxAgeMs = options.maxAgeMs ?? this.ttlMs;
    const askedAt = scope.clock.now().getTime();
    const entries = this.entries(scope);
    const hit = entries.get(key);
    const copy = this.young(hit, askedAt, maxAgeMs);
    if (copy) return copy;
    const inFlight = this.inFlight(scope);
    const shared = this.young(inFlight.get(key), askedAt, maxAgeMs);
    if (shared) return { value: await shared.value, ageMs: shared.ageMs };
    const read = load();
    inFlight.set(key, { at: askedAt, value: read });
    try {
      const value = await read;
      // Kept unless a writer set or dropped the value while this read was on its way (it may predate the
      // write), or a later read took its place.
      if (entries.get(key) === hit && inFlight.get(key)?.value === read) this.set(scope, value, key, askedAt);
      return { value, ageMs: 0 };
    } finally {
      if (inFlight.get(key)?.value === read) inFlight.delete(key);
    }
  }

  private inFlight(scope: CacheScope) {
    return scope.caches.store(`${this.name}:inFlight`) as Map<string, { at: number; value: Promise<T> }>;
  }

  set(scope: CacheScope, value: T, key = '', at = scope.clock.now().getTime()): void {
    this.entries(scope).set(key, { at, value });
  }

  /** Replaces a value this process still holds, keeping its age (an update read since does not make it younger). */
  replace(scope: CacheScope, value: T, key = ''): void {
    const hit = this.entries(scope).get(key);
    if (hit) hit.value = value;
  }

  /** Drops the copy, and any read on its way: it may have been sent before the write that made the caller forget. */
  forget(scope: CacheScope, key?: string): void {
    for (const store of [this.entries(scope), this.inFlight(scope)]) {
      if (key === undefined) store.clear();
      else store.delete(key);
    }
  }
}

/**
 * One named piece of per-process state kept by the plane (`plane.caches.kept`), read and written as a
 * WeakMap keyed by the plane would be: a plane built for a test or another host starts without it.
 */
export class PlaneState<T> {
  constructor(readonly name: string) {
    if (names.has(name)) throw new Error(`a cache named "${name}" already exists`);
    names.add(name);
  }

  get(scope: CacheScope): T | undefined {
    return scope.caches.kept.get(this.name) as T | undefined;
  }

  set(scope: CacheScope, value: T): this {
    scope.caches.kept.set(this.name, value);
    return this;
  }

  delete(scope: CacheScope): boolean {
    return scope.caches.kept.delete(this.name);
  }

  /** The state, created by `create` the first time. */
  of(scope: CacheScope, create: () => T): T {
    let value = this.get(scope);
    if (value === undefined) this.set(scope, (value = create()));
    return value;
  }
}
