import type { EvictionRecord, EvictionState, PlacementFacts } from '../failover/bindingModel';

/**
 * Storage and queue ports. Decisions never see these; controllers do. Each has a Table (or Storage queue)
 * adapter for the app and an in-memory adapter for fast controller tests; a Karmada API server adapter
 * would map etag to resourceVersion.
 */

export interface Versioned<T> {
  value: T;
  etag: string;
}

/** A keyed collection of JSON documents with optimistic concurrency. */
export interface DocumentStore<T> {
  get(id: string): Promise<Versioned<T> | undefined>;
  /**
   * Every document, or only those `where` accepts: a store filters as it reads (page by page), so a scan
   * that keeps a few documents never holds them all in memory.
   */
  list(where?: (value: T) => boolean): Promise<Array<Versioned<T> & { id: string }>>;
  /**
   * The documents whose id starts with `prefix` (and that `where` accepts), where the store can select them
   * by key instead of reading every document; absent: callers list and filter (`listByPrefix`).
   */
  listPrefix?(prefix: string, where?: (value: T) => boolean): Promise<Array<Versioned<T> & { id: string }>>;
  /** Fails with ConcurrencyError when the id exists. */
  create(id: string, value: T): Promise<string>;
  /** Fails with ConcurrencyError when the stored version is not `etag` (or is gone). */
  replace(id: string, value: T, etag: string): Promise<string>;
  /** False when absent; ConcurrencyError when `etag` is given and stale. */
  delete(id: string, etag?: string): Promise<boolean>;
  /**
   * How many bytes `value` takes stored and the most one document may take, where the store has such a
   * limit (absent: no limit, as in memory): a writer refuses up front what the store would refuse half-way.
   */
  measure?(value: unknown): { bytes: number; limit: number };
}

/**
 * A DocumentStore whose documents carry boolean flags the store can query by (Table columns written in the
 * same entity write as the document, so a flag is never out of step with its document): a timer asks for
 * the documents that need it instead of listing them all.
 */
export interface FlaggedDocumentStore<T, F extends string> extends DocumentStore<T> {
  listFlagged(flag: F): Promise<Array<Versioned<T> & { id: string }>>;
}

/** A DocumentStore that can also write many documents unconditionally, batched (a relist's snapshot). */
export interface BulkDocumentStore<T> extends DocumentStore<T> {
  upsertMany(entries: Array<{ id: string; value: T }>): Promise<void>;
}

/**
 * A DocumentStore that can also write many documents conditionally, batched: an entry without an ETag is
 * created (it must not exist), one with an ETag replaced at it. The new ETag per entry, or undefined for
 * an entry that lost a race (someone else wrote it first): the caller decides that one again alone.
 */
export interface BatchDocumentStore<T> extends DocumentStore<T> {
  writeMany(entries: Array<{ id: string; value: T; etag?: string }>): Promise<Array<string | undefined>>;
}

/** Whether a store writes batches (the Table and memory adapters do; Karmada's API server does not). */
export const canWriteMany = <T>(store: DocumentStore<T>): store is BatchDocumentStore<T> =>
  typeof (store as Partial<BatchDocumentStore<T>>).writeMany === 'function';

/** Lost an optimistic-concurrency race: someone else wrote first. Retry from a fresh read. */
export class ConcurrencyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConcurrencyError';
  }
}

export interface EventRecord {
  /**
   * Makes the write idempotent: events with the same id (and time) are one event, so a step that is
   * retried after a crash records its event once. Not returned by `list`.
   */
  id?: string;
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

/** Append-only record of decisions (docs/architecture.md, decision 11): who, what, why, when. */
export interface EventLog {
  append(events: EventRecord[]): Promise<void>;
  /** Matching events, oldest first, at most `limit` (the newest ones when there are more). */
  list(query: EventQuery): Promise<EventRecord[]>;
}

/**
 * A lease that one holder at a time may keep by renewing it (the local host's timer leader). Every write of
 * a lease gives it a new ETag: the holder renews with the ETag of its last write, in one conditional write.
 */
export interface LeaseStore {
  /**
   * Takes `name` for `owner` until now + ttl (after the call) if it is free, expired or already `owner`'s:
   * `{ taken: true, etag }` of that write. Otherwise `{ taken: false, heldUntil }`: when the other owner's
   * hold runs out unless it renews it (about now + ttl when another owner took it during this call).
   */
  acquire(name: string, owner: string, ttlMs: number): Promise<{ taken: true; etag: string } | { taken: false; heldUntil: Date }>;
  /**
   * Extends `owner`'s hold to now + ttl (after the call) with one conditional write, unless the lease was
   * written (taken, released) since the write that returned `etag`: the new ETag, or undefined if it was.
   */
  renew(name: string, owner: string, ttlMs: number, etag: string): Promise<string | undefined>;
  /** Gives `name` up if `owner` holds it; with the ETag of `owner`'s last write, in one request. */
  release(name: string, owner: string, etag?: string): Promise<void>;
}

export interface SendOptions {
  /** Seconds before the message becomes visible (whole seconds; the service's granularity). */
  delaySeconds?: number;
}

/** A durable queue of JSON messages. */
export interface MessageQueue<T> {
  send(message: T, options?: SendOptions): Promise<void>;
  /**
   * This queue with its undelayed messages held by `outbox` (an invocation's output binding) instead of
   * sent; absent where a queue has no such binding (in memory).
   */
  through?(outbox: Outbox): MessageQueue<T>;
}

/** An invocation's queue outputs: holds a message for the queue named, or says it has no output for it. */
export interface Outbox {
  /** False when the invocation has no output for `queueName` (send it yourself). `sendDirectly` is used if the invocation fails. */
  hold(queueName: string, message: object, sendDirectly: (message: unknown) => Promise<void>): boolean;
}

/** Pending rows of one cluster shard that share a due time: the unit the pacer reads in due order. */
export interface DueGroup {
  /** Which group it is, as the ledger names it: opaque to its users (compare, do not parse). */
  token: string;
  dueAt: string;
  cluster: string;
  /** The rows' priority (spec.schedulePriority.priority when planned), when not 0. */
  priority?: number;
  /** The FailoverBudget (`<namespace>/<name>`) holding these rows (`BudgetExceeded`), if one does. */
  parkedFor?: string;
  /**
   * The group's version as listed: deleteDue removes it only at that version, so a group written again since
   * (rows added after the pacer read the group's rows) stays.
   */
  etag?: string;
}

/** The one global rate row: next free send slot, the pause switch, and the fleet health it was computed at. */
export interface PacerState {
  nextSlotAt: string;
  paused: boolean;
  tier: string;
  rate: number;
  total: number;
  /** Unhealthy clusters at that health (Ready not True, or a faulty taint). */
  unhealthy: number;
  updatedAt: string;
  /**
   * The cluster whose row took the last slot handed out: the next pass's shared turns begin with the cluster
   * after it, so clusters take turns across passes too (a pass may hand out a single slot).
   */
  lastCluster?: string;
  /**
   * Until when a process's short passes run the series themselves (the passes while failures are being
   * planned there, which hand out slots a moment ahead and run them in process). Passes that send their slots
   * by queue, on any host, hand out none until then: a queue message needs a poll's lead, so they would
   * continue the series a second out and leave the slots in between unused.
   */
  shortPassesUntil?: string;
  /**
   * Clusters cordoned by a drain: their `Drain` rows go even while the Failover gate is off (a person's
   * decision), so the pacer looks at them when it holds everything else.
   */
  draining: string[];
}

export interface VersionedEviction {
  record: EvictionRecord;
  etag: string;
}

/** How `recordEvictions` writes: see there. */
export interface RecordOptions {
  background?: boolean;
  onStored?: (etags: Array<string | undefined>) => void;
}

/**
 * The eviction ledger and the placement index: one row per (cluster, binding) eviction decision, one
 * placement row per (cluster, binding) placed, due groups in due order for the pacer, and the pacer's row.
 * Every conditional write takes the ETag it was read at.
 */
export interface EvictionLedger {
  // placement index
  /** Upserts placement rows (a bulk import costs one request per 100 of a partition). */
  upsertPlacements(rows: PlacementFacts[]): Promise<void>;
  /**
   * Creates placement rows, batched per partition, where none is stored yet: true for each row created. A
   * partition's batch that meets a row already there creates none of its rows (false for each); nothing
   * stored is overwritten.
   */
  createPlacements(rows: PlacementFacts[]): Promise<boolean[]>;
  /** Removes a placement row unless a newer binding revision wrote it since. */
  removePlacement(cluster: string, bindingKey: string, upToRev: number): Promise<void>;
  /** A cluster's placement rows and ledger rows in one query. */
  listClusterRows(cluster: string): Promise<{ placements: PlacementFacts[]; evictions: VersionedEviction[] }>;
  listPlacements(cluster: string): Promise<PlacementFacts[]>;
  // ledger rows
  listEvictions(cluster: string, states?: readonly EvictionState[]): Promise<VersionedEviction[]>;
  /** Ledger rows across clusters, filtered by cluster and/or states. */
  scanEvictions(filter: { cluster?: string; state?: EvictionState; states?: readonly EvictionState[] }): Promise<VersionedEviction[]>;
  getEviction(cluster: string, bindingKey: string): Promise<VersionedEviction | undefined>;
  /**
   * New decisions: absent rows are created, rows given with `replaceEtag` replaced; pending rows get a due
   * entry. Returns each row's ETag as written, in input order; undefined for a row skipped (it was there, or
   * changed). `background`: rows that are not needed at once (the rest of a large plan, after its first
   * rows): their transactions go a few at a time per process, so storage serves the pacer's requests between them.
   * `onStored`: called with the ETags once the rows are stored, before their due entries are written (a caller
   * that hands the rows on itself, as the planner hands its first rows to the short passes, need not wait for those).
   */
  recordEvictions(rows: Array<{ record: EvictionRecord; replaceEtag?: string }>, options?: RecordOptions): Promise<Array<string | undefined>>;
  /** Moves rows to a new state with their ETags, batched; rejects when one of them changed. Returns the new ETags. */
  updateEvictions(updates: Array<{ record: EvictionRecord; etag: string }>): Promise<Array<string | undefined>>;
  /** One row with its ETag; false when someone else changed (or deleted) it first. */
  updateEviction(record: EvictionRecord, etag: string): Promise<string | false>;
  /** The worker's commit: the row moves with its ETag and the cluster's placement row goes, atomically. */
  commitEviction(record: EvictionRecord, etag: string): Promise<boolean>;
  // due order
  listDue(horizon: string, limit: number): Promise<DueGroup[]>;
  /** Up to `limit` pending rows of a cluster due at `dueAt` (of the group's priority and budget), in shard order. */
  pendingDue(cluster: string, dueAt: string, limit: number, group?: Pick<DueGroup, 'priority' | 'parkedFor'>): Promise<VersionedEviction[]>;
  deleteDue(groups: DueGroup[]): Promise<void>;
  addDue(records: EvictionRecord[]): Promise<void>;
  /** The token of the due group a pending row belongs to. */
  dueGroupOf(record: EvictionRecord): string;
  /**
   * Of one bucket's groups (one due key and cluster, as pendingDue reads them), those whose rows all come
   * before `next` in pendingDue's order, all of them without `next`: nothing more is due there.
   */
  groupsBefore(groups: readonly DueGroup[], next: EvictionRecord | undefined): DueGroup[];
  // pacer row
  getPacerState(): Promise<{ state: PacerState; etag?: string }>;
  /** Writes the pacer row with its ETag (create when absent); false when another writer was first. */
  putPacerState(state: PacerState, etag: string | undefined): Promise<boolean>;
}

/** The documents of `store` whose id starts with `prefix`: by key where the store can, else listed and filtered. */
export async function listByPrefix<T>(store: DocumentStore<T>, prefix: string, where?: (value: T) => boolean): Promise<Array<Versioned<T> & { id: string }>> {
  if (store.listPrefix) return store.listPrefix(prefix, where);
  return (await store.list(where)).filter((entry) => entry.id.startsWith(prefix));
}
