import { RestError, TableClient, TableTransaction, odata, TransactionAction } from '@azure/data-tables';
import { EvictionRecord, EvictionState, parseBindingKey, PlacementFacts } from '../failover/bindingModel';

/**
 * The eviction ledger and the placement index, in one table partitioned by cluster, so that "bindings placed
 * on cluster X" and "evictions from cluster X" are each one partition query, and a recovery abandons a
 * cluster's rows with batched writes. Row keys: `b:<binding>` placement rows, `e:<binding>` ledger rows.
 * Partition `~due` orders pending evictions by due time for the pacer; `~pacer` holds the global rate row.
 */

const PLACEMENT = 'b:';
const EVICTION = 'e:';
const DUE = '~due';
const PACER = '~pacer';
const BATCH = 100;

/**
 * A cluster's rows are spread over SHARDS partitions (`<cluster>|<shard>`) by a hash of the binding, so a
 * cluster with 20,000 bindings is not one hot partition (Azure serves ~2,000 entities/s per partition, and
 * Azurite's inserts slow down with partition size). A binding's placement and ledger rows share a shard,
 * so the worker's commit stays one transaction. "A cluster's rows" is one partition-key range query.
 */
export const SHARDS = 64;

export function shardOf(bindingKey: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < bindingKey.length; i++) hash = Math.imul(hash ^ bindingKey.charCodeAt(i), 0x01000193) >>> 0;
  return (hash % SHARDS).toString(16).padStart(2, '0');
}

const clusterPartition = (cluster: string, bindingKey: string) => `${cluster}|${shardOf(bindingKey)}`;
/** Every partition of one cluster: `<cluster>|00` … `<cluster>|3f` ('~' sorts after the hex digits). */
const clusterRange = (cluster: string) => odata`PartitionKey ge ${cluster + '|'} and PartitionKey lt ${cluster + '|~'}`;

const statusOf = (error: unknown) => (error instanceof RestError ? error.statusCode : (error as { statusCode?: number })?.statusCode);

/** Pending rows of one cluster shard that share a due time: the unit the pacer reads in due order. */
export interface DueGroup {
  dueAt: string;
  cluster: string;
  shard: string;
  rowKey: string;
}

export interface PacerState {
  nextSlotAt: string;
  paused: boolean;
  tier: string;
  rate: number;
  total: number;
  faulty: number;
  updatedAt: string;
}

export interface VersionedEviction {
  record: EvictionRecord;
  etag: string;
}

export class TableLedger {
  constructor(private readonly client: TableClient) {}


  /** Submits actions as transactions of at most 100, one partition each; returns the ETags in input order. */
  private async submit(actions: TransactionAction[], concurrency = 8): Promise<Array<string | undefined>> {
    const byPartition = new Map<string, number[]>();
    actions.forEach((action, i) => {
      const partition = String((action[1] as { partitionKey: string }).partitionKey);
      const list = byPartition.get(partition);
      if (list) list.push(i);
      else byPartition.set(partition, [i]);
    });
    const chunks: number[][] = [];
    for (const indexes of byPartition.values()) for (let i = 0; i < indexes.length; i += BATCH) chunks.push(indexes.slice(i, i + BATCH));
    const etags: Array<string | undefined> = new Array(actions.length);
    let next = 0;
    const worker = async () => {
      while (next < chunks.length) {
        const chunk = chunks[next++];
        const response = await this.client.submitTransaction(chunk.map((i) => actions[i]));
        response.subResponses.forEach((sub, k) => (etags[chunk[k]] = sub.etag));
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, chunks.length) }, worker));
    return etags;
  }

  private async query<T>(filter: string, select?: string[]): Promise<Array<T & { rowKey: string; etag: string }>> {
    const out: Array<T & { rowKey: string; etag: string }> = [];
    const pages = this.client.listEntities<Record<string, unknown>>({ queryOptions: { filter, ...(select ? { select } : {}) } }).byPage({ maxPageSize: 1000 });
    for await (const page of pages) {
      for (const entity of page) out.push(entity as unknown as T & { rowKey: string; etag: string });
    }
    return out;
  }

  // ----------------------------------------------------------------------------------- placement index

  /** Upserts placement rows, batched per cluster partition (a bulk import costs one request per 100). */
  async upsertPlacements(rows: PlacementFacts[]): Promise<void> {
    await this.submit(rows.map((row) => ['upsert', placementEntity(row), 'Replace']));
  }

  /** Removes a placement row unless a newer binding revision wrote it since (ETag-checked). */
  async removePlacement(cluster: string, bindingKey: string, upToRev: number): Promise<void> {
    try {
      const partition = clusterPartition(cluster, bindingKey);
      const entity = await this.client.getEntity<{ rev: number }>(partition, PLACEMENT + bindingKey);
      if (Number(entity.rev) > upToRev) return;
      await this.client.deleteEntity(partition, PLACEMENT + bindingKey, { etag: entity.etag });
    } catch (error) {
      const status = statusOf(error);
      if (status !== 404 && status !== 412) throw error;
    }
  }

  /** A cluster's placement rows and ledger rows in one range query (the taint manager reads both). */
  async listClusterRows(cluster: string): Promise<{ placements: PlacementFacts[]; evictions: VersionedEviction[] }> {
    const rows = await this.query<Record<string, unknown>>(`${clusterRange(cluster)} and ${odata`RowKey ge ${PLACEMENT} and RowKey lt ${'e;'}`}`);
    const placements: PlacementFacts[] = [];
    const evictions: VersionedEviction[] = [];
    for (const row of rows) {
      if (row.rowKey.startsWith(PLACEMENT)) placements.push(placementFromEntity(row));
      else if (row.rowKey.startsWith(EVICTION)) evictions.push({ record: evictionFromEntity(row), etag: row.etag });
    }
    return { placements, evictions };
  }

  async listPlacements(cluster: string): Promise<PlacementFacts[]> {
    const rows = await this.query<Record<string, unknown>>(`${clusterRange(cluster)} and ${odata`RowKey ge ${PLACEMENT} and RowKey lt ${'b;'}`}`);
    return rows.map(placementFromEntity);
  }

  // ----------------------------------------------------------------------------------- ledger rows

  async listEvictions(cluster: string, states?: readonly EvictionState[]): Promise<VersionedEviction[]> {
    let filter = `${clusterRange(cluster)} and ${odata`RowKey ge ${EVICTION} and RowKey lt ${'e;'}`}`;
    if (states && states.length > 0) filter += ` and (${states.map((s) => odata`state eq ${s}`).join(' or ')})`;
    return (await this.query<Record<string, unknown>>(filter)).map((e) => ({ record: evictionFromEntity(e), etag: e.etag }));
  }

  /** Ledger rows across clusters (the API, the resync and the blocked-row retry); one filtered scan. */
  async scanEvictions(filter: { cluster?: string; state?: EvictionState; states?: readonly EvictionState[] }): Promise<VersionedEviction[]> {
    const clauses = [odata`RowKey ge ${EVICTION} and RowKey lt ${'e;'}`];
    if (filter.cluster) clauses.push(clusterRange(filter.cluster));
    const states = filter.states ?? (filter.state ? [filter.state] : []);
    if (states.length > 0) clauses.push(`(${states.map((state) => odata`state eq ${state}`).join(' or ')})`);
    return (await this.query<Record<string, unknown>>(clauses.join(' and '))).map((e) => ({ record: evictionFromEntity(e), etag: e.etag }));
  }

  async getEviction(cluster: string, bindingKey: string): Promise<VersionedEviction | undefined> {
    try {
      const entity = await this.client.getEntity<Record<string, unknown>>(clusterPartition(cluster, bindingKey), EVICTION + bindingKey);
      return { record: evictionFromEntity(entity), etag: String(entity.etag) };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  /**
   * Records new decisions: rows that do not exist are created, rows given with an ETag (an ended row from
   * an earlier failure) are replaced; pending ones get a due entry. Batched per partition.
   */
  async recordEvictions(rows: Array<{ record: EvictionRecord; replaceEtag?: string }>): Promise<void> {
    const actions: TransactionAction[] = rows.map(({ record, replaceEtag }) =>
      replaceEtag ? ['update', evictionEntity(record), 'Replace', { etag: replaceEtag }] : ['create', evictionEntity(record)],
    );
    await Promise.all([this.submitOrOneByOne(actions), this.addDue(rows.filter((r) => r.record.state === 'pending').map((r) => r.record))]);
  }

  /** A batch fails whole on one conflict; then each row is tried alone and rows that exist are skipped. */
  private async submitOrOneByOne(actions: TransactionAction[]): Promise<void> {
    try {
      await this.submit(actions);
    } catch (error) {
      const status = statusOf(error);
      if (status !== 409 && status !== 412) throw error;
      for (const action of actions) {
        try {
          await this.submit([action]);
        } catch (single) {
          const s = statusOf(single);
          if (s !== 409 && s !== 412) throw single;
        }
      }
    }
  }

  /** Moves rows (one cluster) to a new state with their ETags, in batches; returns the new ETags. */
  async updateEvictions(updates: Array<{ record: EvictionRecord; etag: string }>): Promise<Array<string | undefined>> {
    return this.submit(updates.map(({ record, etag }) => ['update', evictionEntity(record), 'Replace', { etag }]));
  }

  /** One row with its ETag; false when someone else changed it first. */
  async updateEviction(record: EvictionRecord, etag: string): Promise<string | false> {
    try {
      const response = await this.client.updateEntity(evictionEntity(record), 'Replace', { etag });
      return String(response.etag);
    } catch (error) {
      if (statusOf(error) === 412 || statusOf(error) === 404) return false;
      throw error;
    }
  }

  /**
   * The worker's commit point: the row moves to `done` with its ETag and, in the same transaction, the
   * placement row of the evicted cluster goes. False when the row changed first (abandoned, paused...).
   */
  async commitEviction(record: EvictionRecord, etag: string): Promise<boolean> {
    const tx = new TableTransaction();
    tx.updateEntity(evictionEntity(record) as never, 'Replace', { etag });
    tx.deleteEntity(clusterPartition(record.cluster, record.bindingKey), PLACEMENT + record.bindingKey);
    try {
      await this.client.submitTransaction(tx.actions);
      return true;
    } catch (error) {
      const status = statusOf(error);
      if (status === 412) return false;
      if (status === 404) {
        // The placement row was already gone (the binding left the cluster another way): commit the row alone.
        return (await this.updateEviction(record, etag)) !== false;
      }
      throw error;
    }
  }

  // ----------------------------------------------------------------------------------- due order

  /** Due groups (due by `horizon`) in due order. */
  async listDue(horizon: string, limit: number): Promise<DueGroup[]> {
    const out: DueGroup[] = [];
    const pages = this.client
      .listEntities<{ cluster: string; shard: string; dueAt: string }>({ queryOptions: { filter: odata`PartitionKey eq ${DUE} and RowKey le ${horizon + '~'}` } })
      .byPage({ maxPageSize: Math.min(1000, Math.max(1, limit)) });
    for await (const page of pages) {
      for (const e of page) {
        out.push({ dueAt: e.dueAt, cluster: e.cluster, shard: e.shard, rowKey: e.rowKey! });
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  /** Up to `limit` pending rows of a cluster due at `dueAt`, across its shards (in shard order), with ETags. */
  async pendingDue(cluster: string, dueAt: string, limit: number): Promise<VersionedEviction[]> {
    const filter = `${clusterRange(cluster)} and ${odata`RowKey ge ${EVICTION} and RowKey lt ${'e;'} and state eq ${'pending'} and dueAt eq ${dueAt}`}`;
    const out: VersionedEviction[] = [];
    const pages = this.client.listEntities<Record<string, unknown>>({ queryOptions: { filter } }).byPage({ maxPageSize: Math.min(1000, Math.max(1, limit)) });
    for await (const page of pages) {
      for (const e of page) {
        out.push({ record: evictionFromEntity(e), etag: String(e.etag) });
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  async deleteDue(groups: DueGroup[]): Promise<void> {
    if (groups.length === 0) return;
    try {
      await this.submit(groups.map((group) => ['delete', { partitionKey: DUE, rowKey: group.rowKey }]));
    } catch {
      // One of them was already gone (a batch fails whole): delete one at a time.
      for (const group of groups) {
        try {
          await this.client.deleteEntity(DUE, group.rowKey);
        } catch (error) {
          if (statusOf(error) !== 404) throw error;
        }
      }
    }
  }

  /** Makes sure the due groups of these pending rows exist (one row per cluster shard and due time). */
  async addDue(records: EvictionRecord[]): Promise<void> {
    const groups = new Map<string, Record<string, unknown>>();
    for (const record of records) {
      const shard = shardOf(record.bindingKey);
      const rowKey = `${record.dueAt}|${record.cluster}|${shard}`;
      groups.set(rowKey, { partitionKey: DUE, rowKey, dueAt: record.dueAt, cluster: record.cluster, shard });
    }
    await this.submit([...groups.values()].map((entity) => ['upsert', entity as { partitionKey: string; rowKey: string }, 'Replace']));
  }

  // ----------------------------------------------------------------------------------- pacer state

  async getPacerState(): Promise<{ state: PacerState; etag?: string }> {
    try {
      const e = await this.client.getEntity<Record<string, unknown>>(PACER, 'state');
      return {
        etag: String(e.etag),
        state: {
          nextSlotAt: String(e.nextSlotAt),
          paused: Boolean(e.paused),
          tier: String(e.tier),
          rate: Number(e.rate),
          total: Number(e.total),
          faulty: Number(e.faulty),
          updatedAt: String(e.updatedAt),
        },
      };
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
      return { state: { nextSlotAt: new Date(0).toISOString(), paused: false, tier: 'primary', rate: 0, total: 0, faulty: 0, updatedAt: new Date(0).toISOString() } };
    }
  }

  /** Writes the pacer row with its ETag (create when absent); false when another pacer wrote first. */
  async putPacerState(state: PacerState, etag: string | undefined): Promise<boolean> {
    const entity = { partitionKey: PACER, rowKey: 'state', ...state };
    try {
      if (etag) await this.client.updateEntity(entity, 'Replace', { etag });
      else await this.client.createEntity(entity);
      return true;
    } catch (error) {
      const status = statusOf(error);
      if (status === 412 || status === 409) return false;
      throw error;
    }
  }
}

function placementEntity(row: PlacementFacts) {
  return {
    partitionKey: clusterPartition(row.cluster, bindingKeyOf(row)),
    rowKey: PLACEMENT + bindingKeyOf(row),
    cluster: row.cluster,
    kind: row.kind,
    namespace: row.namespace ?? '',
    name: row.name,
    resourceKind: row.resourceKind,
    replicas: row.replicas,
    tolerations: JSON.stringify(row.tolerations),
    failoverCluster: row.failoverCluster ? JSON.stringify(row.failoverCluster) : '',
    rev: row.rev,
  };
}

function bindingKeyOf(row: { kind: string; namespace?: string; name: string }): string {
  return row.kind === 'ResourceBinding' ? `rb:${row.namespace ?? 'default'}:${row.name}` : `crb:${row.name}`;
}

function placementFromEntity(e: Record<string, unknown>): PlacementFacts {
  return {
    cluster: String(e.cluster),
    kind: e.kind as PlacementFacts['kind'],
    ...(e.namespace ? { namespace: String(e.namespace) } : {}),
    name: String(e.name),
    resourceKind: String(e.resourceKind),
    replicas: Number(e.replicas),
    tolerations: JSON.parse(String(e.tolerations || '[]')),
    ...(e.failoverCluster ? { failoverCluster: JSON.parse(String(e.failoverCluster)) } : {}),
    rev: Number(e.rev),
  };
}

/**
 * Columns the service filters on stay properties (state, dueAt, cluster); the frozen decision travels as
 * one JSON property, which keeps rows small and cheap to write in bulk.
 */
const COLUMNS = ['state', 'dueAt', 'scheduledFor', 'executedAt', 'attempts', 'message', 'updatedAt'] as const;
// Derived from the keys (cluster from the partition, the binding from the row key), so not stored again.
const DERIVED = ['cluster', 'bindingKey', 'kind', 'namespace', 'name'];

function evictionEntity(record: EvictionRecord) {
  const decision: Record<string, unknown> = {};
  const entity: Record<string, unknown> = { partitionKey: clusterPartition(record.cluster, record.bindingKey), rowKey: EVICTION + record.bindingKey };
  for (const [key, value] of Object.entries(record)) {
    if ((COLUMNS as readonly string[]).includes(key)) entity[key] = value;
    else if (!DERIVED.includes(key)) decision[key] = value;
  }
  entity.decision = JSON.stringify(decision);
  return entity as { partitionKey: string; rowKey: string };
}

function evictionFromEntity(e: Record<string, unknown>): EvictionRecord {
  const bindingKey = String(e.rowKey).slice(EVICTION.length);
  const record: Record<string, unknown> = {
    ...JSON.parse(String(e.decision ?? '{}')),
    cluster: String(e.partitionKey).split('|')[0],
    bindingKey,
    ...parseBindingKey(bindingKey),
  };
  for (const key of COLUMNS) {
    const value = e[key];
    if (value === undefined || value === null || value === '') continue;
    record[key] = key === 'attempts' ? Number(value) : String(value);
  }
  record.attempts = Number(record.attempts ?? 0);
  return record as unknown as EvictionRecord;
}
