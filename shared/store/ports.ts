/**
 * Storage ports. Decisions never see these; controllers do. The Table adapter is the only one today;
 * a Karmada API server adapter would map etag to resourceVersion.
 */

export interface Versioned<T> {
  value: T;
  etag: string;
}

/** A keyed collection of JSON documents with optimistic concurrency. */
export interface DocumentStore<T> {
  get(id: string): Promise<Versioned<T> | undefined>;
  list(): Promise<Array<Versioned<T> & { id: string }>>;
  /** Fails with ConcurrencyError when the id exists. */
  create(id: string, value: T): Promise<string>;
  /** Fails with ConcurrencyError when the stored version is not `etag` (or is gone). */
  replace(id: string, value: T, etag: string): Promise<string>;
  /** False when absent; ConcurrencyError when `etag` is given and stale. */
  delete(id: string, etag?: string): Promise<boolean>;
}

/** Lost an optimistic-concurrency race: someone else wrote first. Retry from a fresh read. */
export class ConcurrencyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConcurrencyError';
  }
}

export interface EventRecord {
  time: string;
  kind: string;
  name: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  details?: Record<string, unknown>;
}

export interface EventQuery {
  kind?: string;
  name?: string;
  since?: string;
  limit: number;
}

/** Append-only record of decisions (design decision 11): who, what, why, when. */
export interface EventLog {
  append(events: EventRecord[]): Promise<void>;
  /** Matching events, oldest first, at most `limit` (the newest ones when there are more). */
  list(query: EventQuery): Promise<EventRecord[]>;
}

/** A lease that one holder at a time may keep by renewing it (timer singletons). */
export interface LeaseStore {
  /** True when `owner` holds `name` until now + ttl after the call. */
  acquire(name: string, owner: string, ttlMs: number): Promise<boolean>;
  release(name: string, owner: string): Promise<void>;
}
