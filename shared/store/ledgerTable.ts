import { RestError, TableClient, TableTransaction, odata, TransactionAction } from '@azure/data-tables';
import type { EvictionRecord, EvictionState, PlacementFacts } from '../failover/bindingModel';

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

const statusOf = (error: unknown) => (error instanceof RestError ? error.statusCode : (error as { statusCode?: number })?.statusCode);

export interface DueRef {
  dueAt: string;
  cluster: string;
  bindingKey: string;
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


  private async submit(actions: TransactionAction[], concurrency = 8): Promise<Array<string | undefined>> {
    const chunks: TransactionAction[][] = [];
    for (let i = 0; i < actions.length; i += BATCH) chunks.push(actions.slice(i, i + BATCH));
    const etags: Array<string | undefined> = new Array(actions.length);
    let next = 0;
    const worker = async () => {
      while (next < chunks.length) {
        const index = next++;
        const response = await this.client.submitTransaction(chunks[index]);
        response.subResponses.forEach((sub, i) => (etags[index * BATCH + i] = sub.etag));
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

  async upsertPlacements(rows: PlacementFacts[]): Promise<void> {
    await Promise.all(
      rows.map(async (row) => {
        await this.client.upsertEntity(placementEntity(row), 'Replace');
      }),
    );
  }

  /** Removes a placement row unless a newer binding revision wrote it since (ETag-checked). */
  async removePlacement(cluster: string, bindingKey: string, upToRev: number): Promise<void> {
    try {
      const entity = await this.client.getEntity<{ rev: number }>(cluster, PLACEMENT + bindingKey);
      if (Number(entity.rev) > upToRev) return;
      await this.client.deleteEntity(cluster, PLACEMENT + bindingKey, { etag: entity.etag });
    } catch (error) {
      const status = statusOf(error);
      if (status !== 404 && status !== 412) throw error;
    }
  }

  async listPlacements(cluster: string): Promise<PlacementFacts[]> {
    const rows = await this.query<Record<string, unknown>>(odata`PartitionKey eq ${cluster} and RowKey ge ${PLACEMENT} and RowKey lt ${'b;'}`);
    return rows.map(placementFromEntity);
  }

  // ----------------------------------------------------------------------------------- ledger rows

  async listEvictions(cluster: string, states?: readonly EvictionState[]): Promise<VersionedEviction[]> {
    let filter = odata`PartitionKey eq ${cluster} and RowKey ge ${EVICTION} and RowKey lt ${'e;'}`;
    if (states && states.length > 0) filter += ` and (${states.map((s) => odata`state eq ${s}`).join(' or ')})`;
    return (await this.query<Record<string, unknown>>(filter)).map((e) => ({ record: evictionFromEntity(e), etag: e.etag }));
  }

  /** Ledger rows across clusters (the API and the blocked-row retry); a filtered scan. */
  async scanEvictions(filter: { cluster?: string; state?: EvictionState }): Promise<VersionedEviction[]> {
    const clauses = [odata`RowKey ge ${EVICTION} and RowKey lt ${'e;'}`];
    if (filter.cluster) clauses.push(odata`PartitionKey eq ${filter.cluster}`);
    if (filter.state) clauses.push(odata`state eq ${filter.state}`);
    return (await this.query<Record<string, unknown>>(clauses.join(' and '))).map((e) => ({ record: evictionFromEntity(e), etag: e.etag }));
  }

  async getEviction(cluster: string, bindingKey: string): Promise<VersionedEviction | undefined> {
    try {
      const entity = await this.client.getEntity<Record<string, unknown>>(cluster, EVICTION + bindingKey);
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
    const due: TransactionAction[] = rows.filter((r) => r.record.state === 'pending').map(({ record }) => ['upsert', dueEntity(record), 'Replace']);
    await Promise.all([this.submitOrOneByOne(actions), this.submit(due)]);
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
    tx.deleteEntity(record.cluster, PLACEMENT + record.bindingKey);
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

  async listDue(horizon: string, limit: number): Promise<DueRef[]> {
    const out: DueRef[] = [];
    const pages = this.client
      .listEntities<{ cluster: string; bindingKey: string; dueAt: string }>({ queryOptions: { filter: odata`PartitionKey eq ${DUE} and RowKey le ${horizon + '~'}` } })
      .byPage({ maxPageSize: Math.min(1000, Math.max(1, limit)) });
    for await (const page of pages) {
      for (const e of page) {
        out.push({ dueAt: e.dueAt, cluster: e.cluster, bindingKey: e.bindingKey, rowKey: e.rowKey! });
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  async deleteDue(refs: DueRef[]): Promise<void> {
    await this.submit(refs.map((ref) => ['delete', { partitionKey: DUE, rowKey: ref.rowKey }]));
  }

  async addDue(records: EvictionRecord[]): Promise<void> {
    await this.submit(records.map((record) => ['upsert', dueEntity(record), 'Replace']));
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
    partitionKey: row.cluster,
    rowKey: PLACEMENT + bindingKeyOf(row),
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
    cluster: String(e.partitionKey),
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

const OPTIONAL_EVICTION_FIELDS = ['namespace', 'scheduledFor', 'executedAt', 'message'] as const;

function evictionEntity(record: EvictionRecord) {
  const entity: Record<string, unknown> = { partitionKey: record.cluster, rowKey: EVICTION + record.bindingKey, ...record };
  for (const field of OPTIONAL_EVICTION_FIELDS) entity[field] = record[field] ?? '';
  return entity as { partitionKey: string; rowKey: string };
}

function evictionFromEntity(e: Record<string, unknown>): EvictionRecord {
  const record: Record<string, unknown> = {};
  for (const key of ['cluster', 'bindingKey', 'kind', 'name', 'resourceKind', 'state', 'reason', 'purgeMode', 'why', 'taints', 'dueAt', 'decidedAt', 'updatedAt']) record[key] = String(e[key] ?? '');
  for (const key of ['replicas', 'decisionRev', 'attempts']) record[key] = Number(e[key] ?? 0);
  for (const key of OPTIONAL_EVICTION_FIELDS) if (e[key]) record[key] = String(e[key]);
  return record as unknown as EvictionRecord;
}

function dueEntity(record: EvictionRecord) {
  return { partitionKey: DUE, rowKey: `${record.dueAt}|${record.cluster}|${record.bindingKey}`, dueAt: record.dueAt, cluster: record.cluster, bindingKey: record.bindingKey };
}
