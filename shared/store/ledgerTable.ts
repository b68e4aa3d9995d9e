import type { TableClient } from '@azure/data-tables';
import type { EvictionRecord, EvictionState, PlacementFacts } from '../failover/bindingModel';
import { TableDueOrder } from './ledger/dueOrder';
import { TableLedgerRows } from './ledger/ledgerRows';
import { TablePacerRow } from './ledger/pacerRow';
import { TablePlacementIndex } from './ledger/placementIndex';
import type { DueGroup, EvictionLedger, PacerState, VersionedEviction } from './ports';

/**
 * The eviction ledger and the placement index, in one table partitioned by cluster, so that "bindings placed
 * on cluster X" and "evictions from cluster X" are each one partition query, and a recovery abandons a
 * cluster's rows with batched writes. Row keys: `b:<binding>` placement rows, `e:<binding>` ledger rows.
 * Partition `~due` orders pending evictions by due time for the pacer; `~pacer` holds the global rate row.
 *
 * The sections live under `./ledger/`: keys and shards (`keys`), the batched transaction helper
 * (`transactions`), entity mapping (`entities`), and one class per section of the port (`placementIndex`,
 * `ledgerRows`, `dueOrder`, `pacerRow`); this class delegates to them. `MemoryLedger` (`./memory/ledger`)
 * is the same ledger in memory, on the same keys.
 */

export { shardOf, SHARDS } from './ledger/keys';
export type { DueGroup, PacerState, VersionedEviction } from './ports';

export class TableLedger implements EvictionLedger {
  private readonly placements: TablePlacementIndex;
  private readonly rows: TableLedgerRows;
  private readonly due: TableDueOrder;
  private readonly pacer: TablePacerRow;

  constructor(client: TableClient) {
    this.placements = new TablePlacementIndex(client);
    this.due = new TableDueOrder(client);
    this.rows = new TableLedgerRows(client, (records) => this.due.addDue(records));
    this.pacer = new TablePacerRow(client);
  }

  // ----------------------------------------------------------------------------------- placement index

  upsertPlacements(rows: PlacementFacts[]): Promise<void> {
    return this.placements.upsertPlacements(rows);
  }
  removePlacement(cluster: string, bindingKey: string, upToRev: number): Promise<void> {
    return this.placements.removePlacement(cluster, bindingKey, upToRev);
  }
  listClusterRows(cluster: string): Promise<{ placements: PlacementFacts[]; evictions: VersionedEviction[] }> {
    return this.placements.listClusterRows(cluster);
  }
  listPlacements(cluster: string): Promise<PlacementFacts[]> {
    return this.placements.listPlacements(cluster);
  }

  // ----------------------------------------------------------------------------------- ledger rows

  listEvictions(cluster: string, states?: readonly EvictionState[]): Promise<VersionedEviction[]> {
    return this.rows.listEvictions(cluster, states);
  }
  scanEvictions(filter: { cluster?: string; state?: EvictionState; states?: readonly EvictionState[] }): Promise<VersionedEviction[]> {
    return this.rows.scanEvictions(filter);
  }
  getEviction(cluster: string, bindingKey: string): Promise<VersionedEviction | undefined> {
    return this.rows.getEviction(cluster, bindingKey);
  }
  recordEvictions(rows: Array<{ record: EvictionRecord; replaceEtag?: string }>): Promise<void> {
    return this.rows.recordEvictions(rows);
  }
  updateEvictions(updates: Array<{ record: EvictionRecord; etag: string }>): Promise<Array<string | undefined>> {
    return this.rows.updateEvictions(updates);
  }
  updateEviction(record: EvictionRecord, etag: string): Promise<string | false> {
    return this.rows.updateEviction(record, etag);
  }
  commitEviction(record: EvictionRecord, etag: string): Promise<boolean> {
    return this.rows.commitEviction(record, etag);
  }

  // ----------------------------------------------------------------------------------- due order

  listDue(horizon: string, limit: number): Promise<DueGroup[]> {
    return this.due.listDue(horizon, limit);
  }
  pendingDue(cluster: string, dueAt: string, limit: number): Promise<VersionedEviction[]> {
    return this.due.pendingDue(cluster, dueAt, limit);
  }
  deleteDue(groups: DueGroup[]): Promise<void> {
    return this.due.deleteDue(groups);
  }
  addDue(records: EvictionRecord[]): Promise<void> {
    return this.due.addDue(records);
  }

  // ----------------------------------------------------------------------------------- pacer row

  getPacerState(): Promise<{ state: PacerState; etag?: string }> {
    return this.pacer.getPacerState();
  }
  putPacerState(state: PacerState, etag: string | undefined): Promise<boolean> {
    return this.pacer.putPacerState(state, etag);
  }
}
