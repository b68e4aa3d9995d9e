import { odata, TableClient } from '@azure/data-tables';
import { mapConcurrent } from '../../concurrency';
import type { EvictionRecord } from '../../failover/bindingModel';
import type { DueGroup, VersionedEviction } from '../ports';
import { budgetKeyPart, dueKey, dueKeyOf, evictionFromEntity, LedgerEntity, PARKED_KEY, PRIORITY_KEY, priorityBand } from './entities';
import { clusterRange, DUE, dueHorizon, dueRowKey, EVICTION_ROWS, KeyRange, rowRange, shardOf } from './keys';
import { statusOf, submit } from './transactions';

/** Due groups deleted at once, each on its own (conditional) request. */
const DELETE_CONCURRENCY = 8;

/**
 * The due partition (`~due`). A due group is one row per (due key, cluster shard): the due key is the due
 * time for rows without a priority (`<dueAt>|<cluster>|<shard>`, as before priorities existed), and starts
 * with the priority band or the holding budget otherwise (see `dueKey` in ./entities). Marker rows name the
 * other ranges that hold groups: `!p<band>` for a priority, `!w|<namespace>:<name>` for a budget's held rows;
 * they sort before every group (`!` before the digits), so the pacer's one query up to its horizon returns
 * them with the groups of priority 0, and reads a band or a budget only when its marker is there.
 */
const MARKER = '!';
export const bandMarker = (priority: number): string => `${MARKER}${PRIORITY_KEY}${priorityBand(priority)}`;
export const parkedMarker = (budget: string): string => `${MARKER}${PARKED_KEY}${budgetKeyPart(budget)}`;
/** The markers' range. */
export const MARKER_ROWS: KeyRange = { ge: MARKER, lt: '"' };

/** Every group of one priority band (`p<band>|…`), and the ones due by `horizon`. */
export const bandRows = (priority: number): KeyRange => ({ ge: `${PRIORITY_KEY}${priorityBand(priority)}|`, lt: `${PRIORITY_KEY}${priorityBand(priority)}}` });
export const bandDueBy = (priority: number, horizon: string): string => dueHorizon(`${PRIORITY_KEY}${priorityBand(priority)}|${horizon}`);
/** Every group a budget holds (`w|<namespace>:<name>|…`). */
export const parkedRows = (budget: string): KeyRange => ({ ge: `${PARKED_KEY}${budgetKeyPart(budget)}|`, lt: `${PARKED_KEY}${budgetKeyPart(budget)}}` });

/** The due entity of a pending row: one per due key and cluster shard. */
export function dueEntity(record: EvictionRecord): LedgerEntity {
  const shard = shardOf(record.bindingKey);
  const rowKey = dueRowKey(dueKeyOf(record), record.cluster, shard);
  return {
    partitionKey: DUE,
    rowKey,
    dueAt: record.dueAt,
    cluster: record.cluster,
    shard,
    ...(record.priority ? { priority: record.priority } : {}),
    ...(record.waitingFor ? { parkedFor: record.waitingFor } : {}),
  };
}

/** The marker a due entity needs (none for priority 0). */
function markerOf(record: EvictionRecord): LedgerEntity | undefined {
  if (record.waitingFor) return { partitionKey: DUE, rowKey: parkedMarker(record.waitingFor), marker: 'parked', parkedFor: record.waitingFor };
  if (record.priority) return { partitionKey: DUE, rowKey: bandMarker(record.priority), marker: 'band', priority: record.priority };
  return undefined;
}

/**
 * The distinct due entities of these records, in first-seen order (the last record of a group wins), each
 * marker before the groups it names (in one transaction with them: the partition is one, and 100 fit).
 */
export function dueEntities(records: EvictionRecord[]): LedgerEntity[] {
  const markers = new Map<string, LedgerEntity>();
  const groups = new Map<string, LedgerEntity>();
  for (const record of records) {
    const entity = dueEntity(record);
    groups.set(entity.rowKey, entity);
    const marker = markerOf(record);
    if (marker) markers.set(marker.rowKey, marker);
  }
  return [...markers.values(), ...groups.values()];
}

/** A due group as the port returns it (band and budget only when there are); its token is its row key. */
export function dueGroupOf(e: Record<string, unknown>): DueGroup {
  return {
    token: String(e.rowKey),
    dueAt: String(e.dueAt),
    cluster: String(e.cluster),
    ...(e.priority ? { priority: Number(e.priority) } : {}),
    ...(e.parkedFor ? { parkedFor: String(e.parkedFor) } : {}),
    ...(e.etag ? { etag: String(e.etag) } : {}),
  };
}

/** The shard a group's token names: its row key ends `|<shard>`. */
const shardOfToken = (token: string): string => token.slice(token.lastIndexOf('|') + 1);

/** See EvictionLedger.groupsBefore: pendingDue reads a bucket's rows in shard order. */
export function groupsBefore(groups: readonly DueGroup[], next: EvictionRecord | undefined): DueGroup[] {
  if (!next) return [...groups];
  const shard = shardOf(next.bindingKey);
  return groups.filter((group) => shardOfToken(group.token) < shard);
}

/** A marker row: which range it names. */
export interface DueMarker {
  rowKey: string;
  etag: string;
  band?: number;
  parkedFor?: string;
}

export const markerOfEntity = (e: Record<string, unknown> & { etag?: unknown }): DueMarker =>
  e.marker === 'parked'
    ? { rowKey: String(e.rowKey), etag: String(e.etag), parkedFor: String(e.parkedFor) }
    : { rowKey: String(e.rowKey), etag: String(e.etag), band: Number(e.priority) };

/** The key a group's rows carry in their `dueAt` column. */
export const groupKey = (group: Pick<DueGroup, 'dueAt' | 'priority' | 'parkedFor'>): string => dueKey(group);

/** Pending evictions in due order (partition `~due`, row key `<dueAt>|<cluster>|<shard>`), for the pacer. */
export class TableDueOrder {
  constructor(private readonly client: TableClient) {}

  /**
   * Due groups (due by `horizon`) in due order within each range: priority 0 first (one query, which also
   * returns the markers), then each priority band and each budget's held rows named by a marker, at most
   * `limit` of each. A marker whose range turned out empty is deleted (with the ETag it was read at, so a
   * marker written again meanwhile stays).
   */
  async listDue(horizon: string, limit: number): Promise<DueGroup[]> {
    const markers: DueMarker[] = [];
    const out: DueGroup[] = [];
    for (const e of await this.query(odata`PartitionKey eq ${DUE} and RowKey le ${dueHorizon(horizon)}`, limit, (e) => String(e.rowKey) < MARKER_ROWS.lt)) {
      if (String(e.rowKey) < MARKER_ROWS.lt) markers.push(markerOfEntity(e));
      else out.push(dueGroupOf(e));
    }
    for (const marker of markers) {
      let groups: Array<Record<string, unknown>>;
      let empty: boolean;
      if (marker.parkedFor !== undefined) {
        const range = parkedRows(marker.parkedFor);
        groups = await this.query(odata`PartitionKey eq ${DUE} and RowKey ge ${range.ge} and RowKey lt ${range.lt}`, limit);
        empty = groups.length === 0;
      } else {
        const band = marker.band ?? 0;
        const range = bandRows(band);
        groups = await this.query(odata`PartitionKey eq ${DUE} and RowKey ge ${range.ge} and RowKey le ${bandDueBy(band, horizon)}`, limit);
        empty = groups.length === 0 && (await this.query(odata`PartitionKey eq ${DUE} and RowKey ge ${range.ge} and RowKey lt ${range.lt}`, 1)).length === 0;
      }
      out.push(...groups.map(dueGroupOf));
      if (empty) await this.deleteMarker(marker);
    }
    return out;
  }

  /** Up to `limit` entities of a filter, in key order; `uncounted` ones (markers) do not count towards it. */
  private async query(
    filter: string,
    limit: number,
    uncounted: (e: Record<string, unknown>) => boolean = () => false,
  ): Promise<Array<Record<string, unknown>>> {
    const out: Array<Record<string, unknown>> = [];
    let counted = 0;
    const pages = this.client.listEntities<Record<string, unknown>>({ queryOptions: { filter } }).byPage({ maxPageSize: Math.min(1000, Math.max(1, limit)) });
    for await (const page of pages) {
      for (const e of page) {
        out.push(e);
        if (!uncounted(e)) counted++;
        if (counted >= limit) return out;
      }
    }
    return out;
  }

  private async deleteMarker(marker: DueMarker): Promise<void> {
    try {
      await this.client.deleteEntity(DUE, marker.rowKey, { etag: marker.etag });
    } catch (error) {
      // Written again since it was read (a group was added), or already gone: it stays, or is gone.
      if (statusOf(error) !== 404 && statusOf(error) !== 412) throw error;
    }
  }

  /**
   * Up to `limit` pending rows of a cluster in one due group's key (its due time, and its band or budget when
   * it has one), across its shards (in shard order), with ETags.
   */
  async pendingDue(cluster: string, dueAt: string, limit: number, group: Pick<DueGroup, 'priority' | 'parkedFor'> = {}): Promise<VersionedEviction[]> {
    const key = groupKey({ ...group, dueAt });
    const filter = `${clusterRange(cluster)} and ${rowRange(EVICTION_ROWS)} and ${odata`state eq ${'pending'} and dueAt eq ${key}`}`;
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
    // One conditional delete each (a transaction's deletes carry no ETag): a group written again since it
    // was listed, or already gone, stays as it is.
    await mapConcurrent(groups, DELETE_CONCURRENCY, async (group) => {
      try {
        await this.client.deleteEntity(DUE, group.token, { etag: group.etag ?? '*' });
      } catch (error) {
        if (statusOf(error) !== 404 && statusOf(error) !== 412) throw error;
      }
    });
  }

  /** Makes sure the due groups of these pending rows exist (one row per due key and cluster shard), with their markers. */
  async addDue(records: EvictionRecord[]): Promise<void> {
    await submit(
      this.client,
      dueEntities(records).map((entity) => ['upsert', entity, 'Replace']),
    );
  }
}
