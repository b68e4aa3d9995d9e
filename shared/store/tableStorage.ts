import { odata, RestError, TableClient, TableServiceClient, TransactionAction } from '@azure/data-tables';
import { mapConcurrent } from '../concurrency';
import { bucketOf } from './buckets';
import { eventPartition, eventRowKey, kindPartitions, legacyEventPartition, objectRows } from './eventKeys';
import { BATCH } from './ledger/keys';
import { moveEntities, partitionOfAction, submit } from './ledger/transactions';
import { entityBytes, PartitionWrites, TRANSACTION_BYTES } from './partitionWrites';
import {
  BatchDocumentStore,
  BulkDocumentStore,
  ConcurrencyError,
  EventLog,
  EventQuery,
  EventRecord,
  FlaggedDocumentStore,
  LeaseStore,
  Versioned,
} from './ports';

/** Table names this app uses. Created at start by the local host and by the deployment templates. */
export const TABLES = {
  clusters: 'clusters',
  policies: 'clustertaintpolicies',
  events: 'events',
  leases: 'leases',
  bindings: 'bindings',
  ledger: 'ledger',
  // The write journal's open intents (shared/store/ledger/journal.ts): a small table, listed by every planner.
  journal: 'writejournal',
  propagationPolicies: 'propagationpolicies',
  templates: 'resourcetemplates',
  // FailoverBudgets (standalone; partition `budget`) and what is in flight under each (both modes; partition `flight`).
  budgets: 'failoverbudgets',
  // Karmada mode: what Karmada has no place for (cluster overlays, sync cursors, the connection, the binding placement index).
  karmada: 'karmadastate',
  // Large applies in the background: their progress (partition `operation`) and their chunks of objects (`chunk`).
  applyOperations: 'applyoperations',
} as const;

// A string property holds at most 32 Ki UTF-16 units; documents are split into chunks below that.
const CHUNK = 30_000;
const MAX_CHUNKS = 30;
/** The service's limit on one entity: 1 MiB, keys and property names included. */
export const MAX_ENTITY_BYTES = 1024 * 1024;
// Row and partition keys hold at most 1 KiB characters each: sized at that, a document's measure holds for any key.
const MAX_KEY_CHARS = 1024;

/** A document's JSON cut into the string properties `doc0`, `doc1`, ... it is stored in. */
function documentChunks(json: string): string[] {
  const chunks: string[] = [];
  for (let i = 0; i === 0 || i < json.length; i += CHUNK) chunks.push(json.slice(i, i + CHUNK));
  return chunks;
}

/**
 * The bytes a document takes as the entity TableDocumentStore writes (its JSON in `doc<i>` properties,
 * the chunk count, the keys at their longest), by the service's own measure (8 bytes and the UTF-16 name
 * per property, strings in UTF-16); or by the UTF-8 size of the entity's JSON in the request, which Azurite
 * measures, when that is larger and could pass the limit. Over MAX_ENTITY_BYTES the write fails, so callers
 * check before writing anything.
 */
export function storedDocumentBytes(value: unknown): number {
  const chunks = documentChunks(JSON.stringify(value) ?? 'null');
  const chars = chunks.reduce((n, chunk) => n + chunk.length, 0);
  const property = (name: string) => 8 + 2 * name.length;
  // Keys, Timestamp (8 bytes), `chunks` (Int32), then each `doc<i>` (a string: 4 bytes and its UTF-16).
  let service = 4 + 2 * 2 * MAX_KEY_CHARS + property('Timestamp') + 8 + property('chunks') + 4;
  chunks.forEach((chunk, i) => (service += property(`doc${i}`) + 4 + 2 * chunk.length));
  // A character is at most 3 UTF-8 bytes once JSON-escaped (an escaped quote or backslash is 2): the request is measured only when that could pass the limit.
  const wireBound = 3 * chars + 64 * chunks.length + 3 * 2 * MAX_KEY_CHARS + 256;
  if (wireBound <= MAX_ENTITY_BYTES) return service;
  const wire =
    chunks.reduce((n, chunk, i) => n + Buffer.byteLength(JSON.stringify(chunk)) + `,"doc${i}":`.length, 0) +
    Buffer.byteLength(`{"PartitionKey":"","RowKey":"","chunks":${chunks.length}}`) +
    3 * 2 * MAX_KEY_CHARS;
  return Math.max(service, wire);
}
/** Transactions of one `writeMany` in flight at once (a partition's transactions queue at the service; a bucketed kind's spread). */
const TRANSACTION_CONCURRENCY = 8;

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

function statusOf(error: unknown): number | undefined {
  return error instanceof RestError ? error.statusCode : (error as { statusCode?: number })?.statusCode;
}

/** The row of partition `~layout` that records how a document kind is partitioned (its row key: the kind's partition name). */
const LAYOUT_PARTITION = '~layout';

/**
 * JSON documents of one kind in a table; large documents are split over several properties. A kind is one
 * partition (`partition`), or, with `buckets` > 1, that many partitions (`<partition>|<bucket>` by a hash of
 * the id): a kind of 100,000 documents is not one hot partition (Azure serves ~2,000 entities/s per
 * partition; Azurite looks an entity up by scanning its partition). Documents written under another bucket
 * count are moved once, before the first call (`ensureLayout`). Listings are in id order either way.
 */
export class TableDocumentStore<T, F extends string = never> implements BulkDocumentStore<T>, BatchDocumentStore<T>, FlaggedDocumentStore<T, F> {
  measure(value: unknown): { bytes: number; limit: number } {
    return { bytes: storedDocumentBytes(value), limit: MAX_ENTITY_BYTES };
  }

  private layout?: Promise<void>;
  /** The kind was empty when checked: the first write records the layout with it. */
  private layoutUnrecorded = false;

  constructor(
    private readonly client: TableClient,
    private readonly partition: string,
    /** Boolean columns written with each document (`flag_<name>`), to query by. */
    private readonly flags?: (value: T) => Record<F, boolean>,
    private readonly buckets = 1,
    /**
     * Creates and replaces that meet in a partition go as one transaction (PartitionWrites): for a kind
     * written by bursts of requests at once, such as clusters registering or reporting.
     */
    options: { groupWrites?: boolean } = {},
  ) {
    this.writes = options.groupWrites ? new PartitionWrites(client) : undefined;
  }

  private readonly writes: PartitionWrites | undefined;

  private partitionOf(id: string): string {
    return this.buckets > 1 ? `${this.partition}|${bucketOf(id, this.buckets)}` : this.partition;
  }

  /** The kind's partitions, as a filter. */
  private partitionFilter(): string {
    return this.buckets > 1
      ? odata`PartitionKey ge ${this.partition + '|'} and PartitionKey lt ${this.partition + '|~'}`
      : odata`PartitionKey eq ${this.partition}`;
  }

  private ready(): Promise<void> {
    if (this.buckets === 1) return Promise.resolve();
    this.layout ??= this.ensureLayout().catch((error: unknown) => {
      this.layout = undefined;
      throw error;
    });
    return this.layout;
  }

  /**
   * Once per process: one point read when the layout is current; otherwise every document of the kind not
   * in its bucket (the one partition of earlier versions, or another bucket count) is created in its bucket
   * (one already there was moved, maybe updated, by another process: kept) and deleted at the ETag read.
   */
  private async ensureLayout(): Promise<void> {
    try {
      const marker = await this.client.getEntity<{ buckets?: number }>(LAYOUT_PARTITION, this.partition);
      if (Number(marker.buckets) === this.buckets) return;
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
    const filter = `${odata`PartitionKey eq ${this.partition}`} or (${this.partitionFilter()})`;
    let moved = 0;
    let seen = 0;
    for await (const page of this.client.listEntities<Record<string, unknown>>({ queryOptions: { filter } }).byPage({ maxPageSize: 1000 })) {
      seen += page.length;
      const moves = page
        .filter((entity) => String(entity.partitionKey) !== this.partitionOf(String(entity.rowKey)))
        .map((entity) => ({
          from: { partitionKey: String(entity.partitionKey), rowKey: String(entity.rowKey), etag: String(entity.etag) },
          toPartition: this.partitionOf(String(entity.rowKey)),
          entity,
        }));
      await moveEntities(this.client, moves);
      moved += moves.length;
    }
    // An empty kind is recorded by its first write, not here: starting a host or reading never writes to storage.
    if (seen === 0) {
      this.layoutUnrecorded = true;
      return;
    }
    await this.recordLayout(moved);
  }

  private async recordLayout(moved: number): Promise<void> {
    await this.client.upsertEntity({ partitionKey: LAYOUT_PARTITION, rowKey: this.partition, buckets: this.buckets, moved }, 'Replace');
  }

  /** After a write: records the layout if the kind was empty (a failure is retried by the next write; the write stands). */
  private async recordLayoutOnWrite(): Promise<void> {
    if (!this.layoutUnrecorded) return;
    this.layoutUnrecorded = false;
    await this.recordLayout(0).catch(() => (this.layoutUnrecorded = true));
  }

  private encode(id: string, value: T): Record<string, unknown> {
    const json = JSON.stringify(value);
    const chunks = documentChunks(json);
    if (chunks.length > MAX_CHUNKS) throw new Error(`document ${id} is too large to store (${json.length} characters)`);
    const entity: Record<string, unknown> = { partitionKey: this.partitionOf(id), rowKey: id, chunks: chunks.length };
    if (this.flags) for (const [flag, on] of Object.entries(this.flags(value))) entity[`flag_${flag}`] = on;
    chunks.forEach((chunk, i) => (entity[`doc${i}`] = chunk));
    return entity;
  }

  private decode(entity: Record<string, unknown>): T {
    const chunks = Number(entity.chunks ?? 1);
    let json = '';
    for (let i = 0; i < chunks; i++) json += String(entity[`doc${i}`] ?? '');
    return JSON.parse(json) as T;
  }

  async get(id: string): Promise<Versioned<T> | undefined> {
    await this.ready();
    try {
      const entity = await this.client.getEntity<Record<string, unknown>>(this.partitionOf(id), id);
      return { value: this.decode(entity), etag: String(entity.etag) };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  async list(where?: (value: T) => boolean): Promise<Array<Versioned<T> & { id: string }>> {
    await this.ready();
    const out: Array<Versioned<T> & { id: string }> = [];
    const entities = this.client.listEntities<Record<string, unknown>>({ queryOptions: { filter: this.partitionFilter() } });
    for await (const entity of entities) {
      const value = this.decode(entity);
      if (!where || where(value)) out.push({ id: String(entity.rowKey), value, etag: String(entity.etag) });
    }
    return this.buckets > 1 ? out.sort(byId) : out;
  }

  /** One query over the row keys from `prefix` to the next prefix, in every bucket: only those documents are read. */
  async listPrefix(prefix: string, where?: (value: T) => boolean): Promise<Array<Versioned<T> & { id: string }>> {
    await this.ready();
    const out: Array<Versioned<T> & { id: string }> = [];
    const filter = `(${this.partitionFilter()}) and ${odata`RowKey ge ${prefix} and RowKey lt ${prefixEnd(prefix)}`}`;
    for await (const entity of this.client.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
      const value = this.decode(entity);
      if (!where || where(value)) out.push({ id: String(entity.rowKey), value, etag: String(entity.etag) });
    }
    return this.buckets > 1 ? out.sort(byId) : out;
  }

  /** The documents whose flag is set: one query that returns only them. */
  async listFlagged(flag: F): Promise<Array<Versioned<T> & { id: string }>> {
    await this.ready();
    const out: Array<Versioned<T> & { id: string }> = [];
    const filter = `(${this.partitionFilter()}) and flag_${flag} eq true`;
    for await (const entity of this.client.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
      out.push({ id: String(entity.rowKey), value: this.decode(entity), etag: String(entity.etag) });
    }
    return this.buckets > 1 ? out.sort(byId) : out;
  }

  async create(id: string, value: T): Promise<string> {
    await this.ready();
    try {
      const entity = this.encode(id, value) as never;
      const etag = this.writes ? await this.writes.write(['create', entity]) : (await this.client.createEntity(entity)).etag;
      await this.recordLayoutOnWrite();
      return String(etag);
    } catch (error) {
      if (statusOf(error) === 409) throw new ConcurrencyError(`${id} already exists`);
      throw error;
    }
  }

  async replace(id: string, value: T, etag: string): Promise<string> {
    await this.ready();
    try {
      const entity = this.encode(id, value) as never;
      const written = this.writes
        ? await this.writes.write(['update', entity, 'Replace', { etag }])
        : (await this.client.updateEntity(entity, 'Replace', { etag })).etag;
      await this.recordLayoutOnWrite();
      return String(written);
    } catch (error) {
      const status = statusOf(error);
      if (status === 412 || status === 404) throw new ConcurrencyError(`${id} changed since it was read`);
      throw error;
    }
  }

  /** Unconditional writes, 100 to a transaction (one partition), several at once: a snapshot costs a request per 100 documents. */
  async upsertMany(entries: Array<{ id: string; value: T }>): Promise<void> {
    await this.ready();
    await submit(
      this.client,
      entries.map(({ id, value }): TransactionAction => ['upsert', this.encode(id, value) as never, 'Replace']),
    );
    await this.recordLayoutOnWrite();
  }

  /**
   * Creates (no etag) or replaces (at the etag) many documents, 100 to a transaction (at most 3 MiB of
   * documents each), a few transactions at once. A transaction fails whole when one of its entries lost a
   * race: then its entries are written one at a time, and only the ones that lose again are left out.
   */
  async writeMany(entries: Array<{ id: string; value: T; etag?: string }>): Promise<Array<string | undefined>> {
    // Encoded first: a document too large to store fails the call before anything is written.
    const actions = entries.map(({ id, value, etag }): TransactionAction => {
      const entity = this.encode(id, value) as never;
      return etag === undefined ? ['create', entity] : ['update', entity, 'Replace', { etag }];
    });
    await this.ready();
    const etags = new Array<string | undefined>(entries.length).fill(undefined);
    await mapConcurrent(transactionsOf(actions), TRANSACTION_CONCURRENCY, async (indexes) => {
      try {
        const response = await this.client.submitTransaction(indexes.map((i) => actions[i]));
        response.subResponses.forEach((sub, k) => (etags[indexes[k]] = String(sub.etag)));
      } catch (error) {
        const status = statusOf(error);
        // 409: a created entry exists; 412: a replaced one changed; 404: a replaced one is gone.
        if (status !== 409 && status !== 412 && status !== 404) throw error;
        for (const i of indexes) {
          const { id, value, etag } = entries[i];
          try {
            etags[i] = etag === undefined ? await this.create(id, value) : await this.replace(id, value, etag);
          } catch (single) {
            if (!(single instanceof ConcurrencyError)) throw single;
          }
        }
      }
    });
    await this.recordLayoutOnWrite();
    return etags;
  }

  async delete(id: string, etag?: string): Promise<boolean> {
    await this.ready();
    try {
      await this.client.deleteEntity(this.partitionOf(id), id, etag ? { etag } : undefined);
      return true;
    } catch (error) {
      const status = statusOf(error);
      if (status === 404) {
        if (etag) throw new ConcurrencyError(`${id} was deleted since it was read`);
        return false;
      }
      if (status === 412) throw new ConcurrencyError(`${id} changed since it was read`);
      throw error;
    }
  }
}

/** Indexes of actions cut into transactions: one partition each, at most BATCH actions and TRANSACTION_BYTES of documents. */
function transactionsOf(actions: TransactionAction[]): number[][] {
  const byPartition = new Map<string, number[]>();
  actions.forEach((action, i) => {
    const partition = partitionOfAction(action);
    const list = byPartition.get(partition);
    if (list) list.push(i);
    else byPartition.set(partition, [i]);
  });
  return [...byPartition.values()].flatMap((indexes) => partitionTransactions(actions, indexes));
}

function partitionTransactions(actions: TransactionAction[], indexes: number[]): number[][] {
  const out: number[][] = [];
  let current: number[] = [];
  let bytes = 0;
  indexes.forEach((i) => {
    const size = entityBytes(actions[i]);
    if (current.length > 0 && (current.length >= BATCH || bytes + size > TRANSACTION_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(i);
    bytes += size;
  });
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * Events in one table: partition `<kind>_<name>`, row key `<time>-<sequence>`, so one object's history is
 * one partition range query and a kind is one partition-key range.
 */
export class TableEventLog implements EventLog {
  private sequence = 0;
  /** Events appended at once by concurrent requests go together, a transaction per partition. */
  private readonly writes: PartitionWrites;
  constructor(private readonly client: TableClient) {
    this.writes = new PartitionWrites(client);
  }

  async append(events: EventRecord[]): Promise<void> {
    const actions: TransactionAction[] = [];
    for (const event of events) {
      // An event with an id has a row key of its own: a retried step records it once. Row keys without an id
      // are unique to this write, so a row already there can only be this event's: a transaction the retry
      // policy repeats after a lost answer (409) is written again one event at a time, skipping those there.
      // Created rather than upserted: the emulator finds an upserted row by scanning its partition.
      const suffix = event.id
        ? `${event.time}-id-${event.id}`
        : `${event.time}-${process.pid.toString(36)}-${(this.sequence++).toString(36).padStart(6, '0')}-${Math.random().toString(36).slice(2, 8)}`;
      const entity = {
        partitionKey: eventPartition(event.kind, event.name),
        rowKey: eventRowKey(event.name, suffix),
        time: event.time,
        kind: event.kind,
        name: event.name,
        type: event.type,
        reason: event.reason,
        message: event.message.slice(0, 4000),
        details: event.details ? JSON.stringify(event.details).slice(0, 30_000) : '',
      };
      actions.push(['create', entity]);
    }
    // A transaction per bucket's events (100 at most, with other requests' events that meet them), all buckets
    // at once; an event already there (the same id, or a repeat after a lost answer) is skipped.
    await Promise.all(
      actions.map((action) =>
        this.writes.write(action).catch((error: unknown) => {
          if (statusOf(error) !== 409) throw error;
        }),
      ),
    );
  }

  async list(query: EventQuery): Promise<EventRecord[]> {
    const since = query.since ? odata`time ge ${query.since}` : undefined;
    const and = (...clauses: Array<string | undefined>) => clauses.filter(Boolean).join(' and ') || undefined;
    let filters: Array<string | undefined>;
    if (query.kind && query.name) {
      const rows = objectRows(query.name);
      // The object's rows in its bucket, and any it had in its own partition before buckets (read side by side).
      filters = [
        and(odata`PartitionKey eq ${eventPartition(query.kind, query.name)} and RowKey ge ${rows.ge} and RowKey lt ${rows.lt}`, since),
        and(odata`PartitionKey eq ${legacyEventPartition(query.kind, query.name)}`, since),
      ];
    } else if (query.kind) {
      const range = kindPartitions(query.kind);
      filters = [and(odata`PartitionKey ge ${range.ge} and PartitionKey lt ${range.lt}`, since)];
    } else filters = [and(query.name ? odata`name eq ${query.name}` : undefined, since)];
    const rows: Array<{ order: string; event: EventRecord }> = [];
    await Promise.all(
      filters.map(async (filter) => {
        for await (const entity of this.client.listEntities<Record<string, unknown>>({ queryOptions: filter ? { filter } : {} })) {
          const rowKey = String(entity.rowKey);
          // The part after the name (legacy rows have none): time, process, sequence, so write order breaks ties.
          rows.push({
            order: rowKey.slice(rowKey.indexOf('|') + 1),
            event: {
              time: String(entity.time),
              kind: String(entity.kind),
              name: String(entity.name),
              type: entity.type === 'Warning' ? 'Warning' : 'Normal',
              reason: String(entity.reason),
              message: String(entity.message),
              ...(entity.details ? { details: JSON.parse(String(entity.details)) as Record<string, unknown> } : {}),
            },
          });
        }
      }),
    );
    rows.sort((a, b) => (a.event.time < b.event.time ? -1 : a.event.time > b.event.time ? 1 : a.order < b.order ? -1 : 1));
    return rows.slice(Math.max(0, rows.length - query.limit)).map((row) => row.event);
  }
}

/**
 * Leases as rows: whoever writes the row with the current ETag holds it until `expiresAt`. Taking a lease
 * reads the row, then writes it conditionally on the ETag read; renewing and releasing it are one
 * conditional request each, on the ETag of the holder's last write.
 */
export class TableLeaseStore implements LeaseStore {
  constructor(
    private readonly client: TableClient,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async acquire(name: string, owner: string, ttlMs: number): Promise<{ taken: true; etag: string } | { taken: false; heldUntil: Date }> {
    const expiresAt = new Date(this.now().getTime() + ttlMs).toISOString();
    // `write` names this write, so that a re-read tells it apart from any other (a retry's 409 or 412).
    const write = crypto.randomUUID();
    const row = { partitionKey: 'lease', rowKey: name, owner, expiresAt, write };
    try {
      const current = await this.read(name);
      if (current) {
        const heldUntil = new Date(current.expiresAt);
        if (current.owner !== owner && heldUntil.getTime() > this.now().getTime()) return { taken: false, heldUntil };
        return { taken: true, etag: String((await this.client.updateEntity(row, 'Replace', { etag: current.etag })).etag) };
      }
      return { taken: true, etag: String((await this.client.createEntity(row)).etag) };
    } catch (error) {
      const status = statusOf(error);
      if (status !== 409 && status !== 412 && status !== 404) throw error;
    }
    // Another owner wrote (or deleted) the row since it was read, or a retry of this very write found it done.
    const current = await this.read(name);
    if (current?.write === write) return { taken: true, etag: current.etag };
    // No row: released meanwhile, free now.
    return { taken: false, heldUntil: current ? new Date(current.expiresAt) : this.now() };
  }

  async renew(name: string, owner: string, ttlMs: number, etag: string): Promise<string | undefined> {
    const expiresAt = new Date(this.now().getTime() + ttlMs).toISOString();
    const write = crypto.randomUUID();
    try {
      const response = await this.client.updateEntity({ partitionKey: 'lease', rowKey: name, owner, expiresAt, write }, 'Replace', { etag });
      return String(response.etag);
    } catch (error) {
      const status = statusOf(error);
      if (status === 404) return undefined;
      if (status !== 412) throw error;
    }
    // Written since: by another owner, or by a retry of this very write (then the row is this write).
    const current = await this.read(name);
    return current?.write === write ? current.etag : undefined;
  }

  async release(name: string, owner: string, etag?: string): Promise<void> {
    try {
      if (etag !== undefined) {
        try {
          await this.client.deleteEntity('lease', name, { etag });
          return;
        } catch (error) {
          // Written since that write: whoever wrote it last is found below.
          if (statusOf(error) !== 412) throw error;
        }
      }
      const current = await this.read(name);
      if (current?.owner === owner) await this.client.deleteEntity('lease', name, { etag: current.etag });
    } catch (error) {
      const status = statusOf(error);
      if (status !== 404 && status !== 412) throw error;
    }
  }

  private async read(name: string): Promise<{ owner: string; expiresAt: string; write?: string; etag: string } | undefined> {
    try {
      const entity = await this.client.getEntity<{ owner: string; expiresAt: string; write?: string }>('lease', name);
      return { owner: entity.owner, expiresAt: entity.expiresAt, write: entity.write, etag: String(entity.etag) };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }
}

export async function ensureTables(service: TableServiceClient): Promise<void> {
  await Promise.all(
    Object.values(TABLES).map(async (table) => {
      try {
        await service.createTable(table);
      } catch (error) {
        if (statusOf(error) !== 409) throw error;
      }
    }),
  );
}

/** The first string after every string that starts with `prefix` (its last character moved one up). */
function prefixEnd(prefix: string): string {
  if (prefix === '') return '\uffff';
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}
