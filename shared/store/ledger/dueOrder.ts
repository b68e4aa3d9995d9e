import { odata, TableClient } from '@azure/data-tables';
import type { EvictionRecord } from '../../failover/bindingModel';
import type { DueGroup, VersionedEviction } from '../ports';
import { evictionFromEntity, LedgerEntity } from './entities';
import { clusterRange, DUE, dueHorizon, dueRowKey, EVICTION_ROWS, rowRange, shardOf } from './keys';
import { statusOf, submit } from './transactions';

/** The due entity of a pending row: one per cluster shard and due time. */
export function dueEntity(record: EvictionRecord): LedgerEntity {
  const shard = shardOf(record.bindingKey);
  const rowKey = dueRowKey(record.dueAt, record.cluster, shard);
  return { partitionKey: DUE, rowKey, dueAt: record.dueAt, cluster: record.cluster, shard };
}

/** The distinct due entities of these records, in first-seen order (the last record of a group wins). */
export function dueEntities(records: EvictionRecord[]): LedgerEntity[] {
  const groups = new Map<string, LedgerEntity>();
  for (const record of records) {
    const entity = dueEntity(record);
    groups.set(entity.rowKey, entity);
  }
  return [...groups.values()];
}

/** Pending evictions in due order (partition `~due`, row key `<dueAt>|<cluster>|<shard>`), for the pacer. */
export class TableDueOrder {
  constructor(private readonly client: TableClient) {}

  /** Due groups (due by `horizon`) in due order. */
  async listDue(horizon: string, limit: number): Promise<DueGroup[]> {
    const out: DueGroup[] = [];
    const pages = this.client
      .listEntities<{ cluster: string; shard: string; dueAt: string }>({
        queryOptions: { filter: odata`PartitionKey eq ${DUE} and RowKey le ${dueHorizon(horizon)}` },
      })
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
    const filter = `${clusterRange(cluster)} and ${rowRange(EVICTION_ROWS)} and ${odata`state eq ${'pending'} and dueAt eq ${dueAt}`}`;
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
      await submit(
        this.client,
        groups.map((group) => ['delete', { partitionKey: DUE, rowKey: group.rowKey }]),
      );
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
    await submit(
      this.client,
      dueEntities(records).map((entity) => ['upsert', entity, 'Replace']),
    );
  }
}
