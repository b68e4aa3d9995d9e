import type { TableClient } from '@azure/data-tables';
import type { EvictionRecord, EvictionState, PlacementFacts } from '../failover/bindingModel';
import { dueEntity, groupsBefore, TableDueOrder } from './ledger/dueOrder';
import { TableWriteJournal, VersionedIntent, VersionedPlacement, WriteIntent, WriteJournal } from './ledger/journal';
import { SHARDS } from './ledger/keys';
import { ensureLedgerLayout } from './ledger/layout';
import { TableLedgerRows } from './ledger/ledgerRows';
import { TablePacerRow } from './ledger/pacerRow';
import { TablePlacementIndex } from './ledger/placementIndex';
import type { DueGroup, EvictionLedger, PacerState, RecordOptions, VersionedEviction } from './ports';

/**
 * The eviction ledger and the placement index, in one table partitioned by cluster, so that "bindings placed
 * on cluster X" and "evictions from cluster X" are each one partition query, and a recovery abandons a
 * cluster's rows with batched writes. Row keys: `b:<binding>` placement rows, `e:<binding>` ledger rows.
 * Partition `~due` orders pending evictions by due time for the pacer; `~pacer` holds the global rate row.
 * The open intents of writes that span tables (`./ledger/journal`) are kept in a table of their own,
 * partition `~journal`.
 *
 * The sections live under `./ledger/`: keys and shards (`keys`), the batched transaction helper
 * (`transactions`), entity mapping (`entities`), and one class per section of the port (`placementIndex`,
 * `ledgerRows`, `dueOrder`, `pacerRow`, and the write journal, `journal`); this class delegates to them. `MemoryLedger` (`./memory/ledger`)
 * is the same ledger in memory, on the same keys.
 */

export { shardOf, SHARDS } from './ledger/keys';
/** A pending row's due group (its row key says which group the pacer read it from). */
export { dueEntity } from './ledger/dueOrder';
export type { DueGroup, PacerState, VersionedEviction } from './ports';

export class TableLedger implements EvictionLedger, WriteJournal {
  private readonly placements: TablePlacementIndex;
  private readonly journal: TableWriteJournal;
  private readonly rows: TableLedgerRows;
  private readonly due: TableDueOrder;
  private readonly pacer: TablePacerRow;

  /** The layout check (and, once, the moves of an older layout: `ensureLedgerLayout`) before the first call. */
  private layout?: Promise<unknown>;

  /** `client`: the ledger's table; `journalClient`: the write journal's (TABLES.ledger and TABLES.journal). */
  constructor(
    private readonly client: TableClient,
    private readonly journalClient: TableClient,
  ) {
    this.placements = new TablePlacementIndex(client);
    this.journal = new TableWriteJournal(journalClient);
    this.due = new TableDueOrder(client);
    this.rows = new TableLedgerRows(client, (records) => this.due.addDue(records));
    this.pacer = new TablePacerRow(client);
  }

  private ready(): Promise<unknown> {
    // A failed check is tried again by the next call rather than remembered.
    this.layout ??= ensureLedgerLayout(this.client, SHARDS, this.journalClient).catch((error: unknown) => {
      this.layout = undefined;
      throw error;
    });
    return this.layout;
  }

  // ----------------------------------------------------------------------------------- placement index

  async upsertPlacements(rows: PlacementFacts[]): Promise<void> {
    await this.ready();
    return this.placements.upsertPlacements(rows);
  }
  async createPlacements(rows: PlacementFacts[]): Promise<boolean[]> {
    await this.ready();
    return this.placements.createPlacements(rows);
  }
  async removePlacement(cluster: string, bindingKey: string, upToRev: number): Promise<void> {
    await this.ready();
    return this.placements.removePlacement(cluster, bindingKey, upToRev);
  }
  async listClusterRows(cluster: string): Promise<{ placements: PlacementFacts[]; evictions: VersionedEviction[] }> {
    await this.ready();
    return this.placements.listClusterRows(cluster);
  }
  async listPlacements(cluster: string): Promise<PlacementFacts[]> {
    await this.ready();
    return this.placements.listPlacements(cluster);
  }

  async getPlacement(cluster: string, bindingKey: string): Promise<VersionedPlacement | undefined> {
    await this.ready();
    return this.placements.getPlacement(cluster, bindingKey);
  }
  async replacePlacement(row: PlacementFacts, etag: string): Promise<boolean> {
    await this.ready();
    return this.placements.replacePlacement(row, etag);
  }
  async deletePlacement(cluster: string, bindingKey: string, etag: string): Promise<boolean> {
    await this.ready();
    return this.placements.deletePlacement(cluster, bindingKey, etag);
  }

  // ----------------------------------------------------------------------------------- write journal

  async openIntents(intents: WriteIntent[]): Promise<string[]> {
    await this.ready();
    return this.journal.openIntents(intents);
  }
  async updateIntent(intent: WriteIntent, etag: string): Promise<string | false> {
    await this.ready();
    return this.journal.updateIntent(intent, etag);
  }
  async closeIntents(intents: Array<{ id: string; etag: string }>): Promise<boolean[]> {
    await this.ready();
    return this.journal.closeIntents(intents);
  }
  async listIntents(): Promise<VersionedIntent[]> {
    await this.ready();
    return this.journal.listIntents();
  }

  // ----------------------------------------------------------------------------------- ledger rows

  async listEvictions(cluster: string, states?: readonly EvictionState[]): Promise<VersionedEviction[]> {
    await this.ready();
    return this.rows.listEvictions(cluster, states);
  }
  async scanEvictions(filter: { cluster?: string; state?: EvictionState; states?: readonly EvictionState[] }): Promise<VersionedEviction[]> {
    await this.ready();
    return this.rows.scanEvictions(filter);
  }
  async getEviction(cluster: string, bindingKey: string): Promise<VersionedEviction | undefined> {
    await this.ready();
    return this.rows.getEviction(cluster, bindingKey);
  }
  async recordEvictions(rows: Array<{ record: EvictionRecord; replaceEtag?: string }>, options: RecordOptions = {}): Promise<Array<string | undefined>> {
    await this.ready();
    return this.rows.recordEvictions(rows, options);
  }
  async updateEvictions(updates: Array<{ record: EvictionRecord; etag: string }>): Promise<Array<string | undefined>> {
    await this.ready();
    return this.rows.updateEvictions(updates);
  }
  async updateEviction(record: EvictionRecord, etag: string): Promise<string | false> {
    await this.ready();
    return this.rows.updateEviction(record, etag);
  }
  async commitEviction(record: EvictionRecord, etag: string): Promise<boolean> {
    await this.ready();
    return this.rows.commitEviction(record, etag);
  }

  // ----------------------------------------------------------------------------------- due order

  async listDue(horizon: string, limit: number): Promise<DueGroup[]> {
    await this.ready();
    return this.due.listDue(horizon, limit);
  }
  async pendingDue(cluster: string, dueAt: string, limit: number, group?: Pick<DueGroup, 'priority' | 'parkedFor'>): Promise<VersionedEviction[]> {
    await this.ready();
    return this.due.pendingDue(cluster, dueAt, limit, group);
  }
  async deleteDue(groups: DueGroup[]): Promise<void> {
    await this.ready();
    return this.due.deleteDue(groups);
  }
  dueGroupOf(record: EvictionRecord): string {
    return dueEntity(record).rowKey;
  }
  groupsBefore(groups: readonly DueGroup[], next: EvictionRecord | undefined): DueGroup[] {
    return groupsBefore(groups, next);
  }
  async addDue(records: EvictionRecord[]): Promise<void> {
    await this.ready();
    return this.due.addDue(records);
  }

  // ----------------------------------------------------------------------------------- pacer row

  async getPacerState(): Promise<{ state: PacerState; etag?: string }> {
    await this.ready();
    return this.pacer.getPacerState();
  }
  async putPacerState(state: PacerState, etag: string | undefined): Promise<boolean> {
    await this.ready();
    return this.pacer.putPacerState(state, etag);
  }
}
