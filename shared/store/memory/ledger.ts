import type { EvictionRecord, EvictionState, PlacementFacts } from '../../failover/bindingModel';
import {
  bandDueBy,
  bandRows,
  dueEntities,
  dueEntity,
  dueGroupOf,
  DueMarker,
  groupKey,
  groupsBefore,
  MARKER_ROWS,
  markerOfEntity,
  parkedRows,
} from '../ledger/dueOrder';
import { evictionEntity, evictionFromEntity, placementEntity, placementFromEntity } from '../ledger/entities';
import { intentEntity, intentFromEntity, VersionedIntent, VersionedPlacement, WriteIntent, WriteJournal } from '../ledger/journal';
import {
  CLUSTER_ROWS,
  clusterPartition,
  clusterPartitions,
  DUE,
  dueHorizon,
  EVICTION,
  EVICTION_ROWS,
  inRange,
  INTENT,
  JOURNAL,
  PACER,
  PACER_ROW,
  PLACEMENT,
  PLACEMENT_ROWS,
} from '../ledger/keys';
import { scanStates } from '../ledger/ledgerRows';
import { initialPacerState, pacerEntity, pacerFromEntity } from '../ledger/pacerRow';
import { statusOf, transactionChunks } from '../ledger/transactions';
import type { DueGroup, EvictionLedger, PacerState, RecordOptions, VersionedEviction } from '../ports';
import { BeforeWrite, FaultOptions, Faults } from './faults';
import { MemoryAction, MemoryTable, StoredEntity } from './table';

export type LedgerMethod = keyof EvictionLedger | keyof WriteJournal;

const WRITES: ReadonlySet<LedgerMethod> = new Set<LedgerMethod>([
  'upsertPlacements',
  'createPlacements',
  'removePlacement',
  'replacePlacement',
  'deletePlacement',
  'openIntents',
  'updateIntent',
  'closeIntents',
  'recordEvictions',
  'updateEvictions',
  'updateEviction',
  'commitEviction',
  'deleteDue',
  'addDue',
  'putPacerState',
]);

/**
 * The eviction ledger in memory, for fast controller tests. It keeps the Table adapter's rows (same
 * partition keys, row keys and properties, through the same key and entity modules) in a `MemoryTable`, and
 * follows the Table adapter step by step, so it answers the same, orders rows the same (a cluster's rows in
 * shard order, due groups in due order) and fails where it fails:
 *
 * - `updateEviction` and `commitEviction` return false on a stale or missing row; `commitEviction` applies
 *   the row update and the placement delete together or not at all (and commits the row alone when the
 *   placement row is already gone); `putPacerState` returns false when another writer was first.
 * - `updateEvictions` rejects (status 412, or 404 for a missing row) when any ETag is stale. Like the Table
 *   adapter, which submits one transaction per partition (cluster shard) and per 100 rows, each such
 *   transaction applies whole or not at all: the transactions without a stale row are applied, the ones
 *   with one are not, and the call rejects. (On the service the transactions run concurrently, so which
 *   ones have landed when the call rejects is not ordered; here all of them have.)
 * - `recordEvictions` creates absent rows, replaces rows given with a matching `replaceEtag`, skips the
 *   others (as the Table adapter does after its batch fails on a conflict) and writes the due groups of
 *   pending rows.
 *
 * - The write journal (partition `~journal` of its own table) as the Table adapter keeps it:
 *   `closeIntents` deletes each intent at its ETag on its own (false for one a repair claimed),
 *   `openIntents` creates them.
 *
 * Every call is atomic with respect to other calls (the Table adapter's read-then-delete in
 * `removePlacement` is two requests; here it is one step). `failNext` and `beforeWrite` make chosen calls
 * fail (see `Faults`). ETags are opaque strings that change on every write.
 */
export class MemoryLedger implements EvictionLedger, WriteJournal {
  readonly table = new MemoryTable();
  readonly faults = new Faults<LedgerMethod>();

  constructor(options: { beforeWrite?: BeforeWrite<LedgerMethod> } = {}) {
    this.faults.beforeWrite = options.beforeWrite;
  }

  /** The next call of `method` fails with `error` (see `Faults`). */
  failNext(method: LedgerMethod, error: Error, options?: FaultOptions): void {
    this.faults.failNext(method, error, options);
  }

  set beforeWrite(hook: BeforeWrite<LedgerMethod> | undefined) {
    this.faults.beforeWrite = hook;
  }
  get beforeWrite(): BeforeWrite<LedgerMethod> | undefined {
    return this.faults.beforeWrite;
  }

  private call<R>(method: LedgerMethod, args: readonly unknown[], body: () => R): Promise<R> {
    return this.faults.run(method, args, WRITES.has(method), body);
  }

  // ----------------------------------------------------------------------------------- placement index

  upsertPlacements(rows: PlacementFacts[]): Promise<void> {
    return this.call('upsertPlacements', [rows], () => {
      this.table.submit(rows.map((row) => ({ type: 'upsert', entity: placementEntity(row) })));
    });
  }

  createPlacements(rows: PlacementFacts[]): Promise<boolean[]> {
    return this.call('createPlacements', [rows], () => {
      const created = new Array<boolean>(rows.length).fill(false);
      // As the Table adapter: one transaction per partition chunk, and one refused for a stored row creates none of its rows.
      for (const chunk of transactionChunks((i) => placementEntity(rows[i]).partitionKey, rows.length)) {
        try {
          this.table.transaction(chunk.map((i) => ({ type: 'create', entity: placementEntity(rows[i]) })));
          for (const i of chunk) created[i] = true;
        } catch (error) {
          if (statusOf(error) !== 409) throw error;
        }
      }
      return created;
    });
  }

  removePlacement(cluster: string, bindingKey: string, upToRev: number): Promise<void> {
    return this.call('removePlacement', [cluster, bindingKey, upToRev], () => {
      const partition = clusterPartition(cluster, bindingKey);
      const entity = this.table.get(partition, PLACEMENT + bindingKey);
      if (!entity || Number(entity.rev) > upToRev) return;
      this.table.transaction([{ type: 'delete', partitionKey: partition, rowKey: PLACEMENT + bindingKey, etag: entity.etag }]);
    });
  }

  listClusterRows(cluster: string): Promise<{ placements: PlacementFacts[]; evictions: VersionedEviction[] }> {
    return this.call('listClusterRows', [cluster], () => {
      const placements: PlacementFacts[] = [];
      const evictions: VersionedEviction[] = [];
      for (const row of this.table.query(clusterPartitions(cluster), CLUSTER_ROWS)) {
        if (row.rowKey.startsWith(PLACEMENT)) placements.push(placementFromEntity(row));
        else if (row.rowKey.startsWith(EVICTION)) evictions.push(versioned(row));
      }
      return { placements, evictions };
    });
  }

  listPlacements(cluster: string): Promise<PlacementFacts[]> {
    return this.call('listPlacements', [cluster], () => this.table.query(clusterPartitions(cluster), PLACEMENT_ROWS).map(placementFromEntity));
  }

  getPlacement(cluster: string, bindingKey: string): Promise<VersionedPlacement | undefined> {
    return this.call('getPlacement', [cluster, bindingKey], () => {
      const entity = this.table.get(clusterPartition(cluster, bindingKey), PLACEMENT + bindingKey);
      return entity && { row: placementFromEntity(entity), etag: entity.etag };
    });
  }

  replacePlacement(row: PlacementFacts, etag: string): Promise<boolean> {
    return this.call('replacePlacement', [row, etag], () => this.conditional({ type: 'update', entity: placementEntity(row), etag }));
  }

  deletePlacement(cluster: string, bindingKey: string, etag: string): Promise<boolean> {
    return this.call('deletePlacement', [cluster, bindingKey, etag], () =>
      this.conditional({ type: 'delete', partitionKey: clusterPartition(cluster, bindingKey), rowKey: PLACEMENT + bindingKey, etag }),
    );
  }

  /** One conditional write: false when the row changed or is gone (412, 404), as the Table adapter answers. */
  private conditional(action: MemoryAction): boolean {
    try {
      this.table.transaction([action]);
      return true;
    } catch (error) {
      if (statusOf(error) === 412 || statusOf(error) === 404) return false;
      throw error;
    }
  }

  // ----------------------------------------------------------------------------------- write journal

  openIntents(intents: WriteIntent[]): Promise<string[]> {
    return this.call('openIntents', [intents], () =>
      this.table.submit(intents.map((intent) => ({ type: 'create', entity: intentEntity(intent) }))).map((etag) => etag ?? ''),
    );
  }

  updateIntent(intent: WriteIntent, etag: string): Promise<string | false> {
    return this.call('updateIntent', [intent, etag], () => {
      try {
        return this.table.transaction([{ type: 'update', entity: intentEntity(intent), etag }])[0]!;
      } catch (error) {
        if (statusOf(error) === 412 || statusOf(error) === 404) return false;
        throw error;
      }
    });
  }

  closeIntents(intents: Array<{ id: string; etag: string }>): Promise<boolean[]> {
    return this.call('closeIntents', [intents], () =>
      intents.map(({ id, etag }) => this.conditional({ type: 'delete', partitionKey: JOURNAL, rowKey: INTENT + id, etag })),
    );
  }

  listIntents(): Promise<VersionedIntent[]> {
    return this.call('listIntents', [], () =>
      this.table.query((key) => key === JOURNAL, { ge: '', lt: '\uffff' }).map((e) => ({ intent: intentFromEntity(e), etag: e.etag })),
    );
  }

  // ----------------------------------------------------------------------------------- ledger rows

  listEvictions(cluster: string, states?: readonly EvictionState[]): Promise<VersionedEviction[]> {
    return this.call('listEvictions', [cluster, states], () =>
      this.table
        .query(clusterPartitions(cluster), EVICTION_ROWS, (e) => !states || states.length === 0 || states.includes(e.state as EvictionState))
        .map(versioned),
    );
  }

  scanEvictions(filter: { cluster?: string; state?: EvictionState; states?: readonly EvictionState[] }): Promise<VersionedEviction[]> {
    return this.call('scanEvictions', [filter], () => {
      const states = scanStates(filter);
      const partitions = filter.cluster ? clusterPartitions(filter.cluster) : undefined;
      return this.table
        .query(
          (key) => !partitions || inRange(key, partitions),
          EVICTION_ROWS,
          (e) => states.length === 0 || states.includes(e.state as EvictionState),
        )
        .map(versioned);
    });
  }

  getEviction(cluster: string, bindingKey: string): Promise<VersionedEviction | undefined> {
    return this.call('getEviction', [cluster, bindingKey], () => {
      const entity = this.table.get(clusterPartition(cluster, bindingKey), EVICTION + bindingKey);
      return entity && versioned(entity);
    });
  }

  recordEvictions(rows: Array<{ record: EvictionRecord; replaceEtag?: string }>, options: RecordOptions = {}): Promise<Array<string | undefined>> {
    return this.call('recordEvictions', [rows], () => {
      const actions: MemoryAction[] = rows.map(({ record, replaceEtag }) =>
        replaceEtag ? { type: 'update', entity: evictionEntity(record), etag: replaceEtag } : { type: 'create', entity: evictionEntity(record) },
      );
      // The Table adapter writes the due groups alongside the rows (not after them), so they land even
      // when writing the rows fails.
      let failure: Error | undefined;
      let etags: Array<string | undefined> = [];
      try {
        etags = this.submitOrOneByOne(actions);
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error));
      }
      if (failure === undefined) options.onStored?.(etags);
      this.writeDue(rows.filter((r) => r.record.state === 'pending').map((r) => r.record));
      if (failure !== undefined) throw failure;
      return etags;
    });
  }

  /** As the Table adapter: a transaction refused on a conflict is tried row by row (unless it was one row), the others stand. */
  private submitOrOneByOne(actions: MemoryAction[]): Array<string | undefined> {
    let failure: Error | undefined;
    const etags = new Array<string | undefined>(actions.length);
    for (const chunk of transactionChunks((i) => (actions[i] as { entity: { partitionKey: string } }).entity.partitionKey, actions.length)) {
      try {
        this.table.transaction(chunk.map((i) => actions[i])).forEach((etag, k) => (etags[chunk[k]] = etag));
      } catch (error) {
        // Any other failure answers the call once every transaction has been tried, as the adapter's does.
        if (!isConflict(error)) failure ??= error instanceof Error ? error : new Error(String(error));
        if (!isConflict(error) || chunk.length === 1) continue;
        for (const i of chunk) {
          try {
            etags[i] = this.table.transaction([actions[i]])[0];
          } catch (single) {
            if (!isConflict(single)) throw single;
          }
        }
      }
    }
    if (failure !== undefined) throw failure;
    return etags;
  }

  updateEvictions(updates: Array<{ record: EvictionRecord; etag: string }>): Promise<Array<string | undefined>> {
    return this.call('updateEvictions', [updates], () =>
      this.table.submit(updates.map(({ record, etag }) => ({ type: 'update', entity: evictionEntity(record), etag }))),
    );
  }

  updateEviction(record: EvictionRecord, etag: string): Promise<string | false> {
    return this.call('updateEviction', [record, etag], () => this.updateOne(record, etag));
  }

  private updateOne(record: EvictionRecord, etag: string): string | false {
    try {
      return this.table.transaction([{ type: 'update', entity: evictionEntity(record), etag }])[0]!;
    } catch (error) {
      if (statusOf(error) === 412 || statusOf(error) === 404) return false;
      throw error;
    }
  }

  commitEviction(record: EvictionRecord, etag: string): Promise<boolean> {
    return this.call('commitEviction', [record, etag], () => {
      try {
        this.table.transaction([
          { type: 'update', entity: evictionEntity(record), etag },
          { type: 'delete', partitionKey: clusterPartition(record.cluster, record.bindingKey), rowKey: PLACEMENT + record.bindingKey },
        ]);
        return true;
      } catch (error) {
        const status = statusOf(error);
        if (status === 412) return false;
        // The placement row was already gone (the binding left the cluster another way): commit the row alone.
        if (status === 404) return this.updateOne(record, etag) !== false;
        throw error;
      }
    });
  }

  // ----------------------------------------------------------------------------------- due order

  listDue(horizon: string, limit: number): Promise<DueGroup[]> {
    return this.call('listDue', [horizon, limit], () => {
      // As the Table adapter: one range up to the horizon (markers, then priority 0), then each range a marker names.
      const due = (key: string) => key === DUE;
      const markers: DueMarker[] = [];
      const out: DueGroup[] = [];
      let counted = 0;
      for (const e of this.table.query(due, { ge: '', lt: '\uffff' }, (e) => e.rowKey <= dueHorizon(horizon))) {
        if (e.rowKey < MARKER_ROWS.lt) markers.push(markerOfEntity(e));
        else if (counted < limit) {
          out.push(dueGroupOf(e));
          counted++;
        }
      }
      for (const marker of markers) {
        let groups: DueGroup[];
        let empty: boolean;
        if (marker.parkedFor !== undefined) {
          groups = this.table.query(due, parkedRows(marker.parkedFor)).slice(0, limit).map(dueGroupOf);
          empty = groups.length === 0;
        } else {
          const band = marker.band ?? 0;
          const all = this.table.query(due, bandRows(band));
          groups = all
            .filter((e) => e.rowKey <= bandDueBy(band, horizon))
            .slice(0, limit)
            .map(dueGroupOf);
          empty = all.length === 0;
        }
        out.push(...groups);
        if (empty) {
          try {
            this.table.transaction([{ type: 'delete', partitionKey: DUE, rowKey: marker.rowKey, etag: marker.etag }]);
          } catch (error) {
            if (statusOf(error) !== 404 && statusOf(error) !== 412) throw error;
          }
        }
      }
      return out;
    });
  }

  pendingDue(cluster: string, dueAt: string, limit: number, group: Pick<DueGroup, 'priority' | 'parkedFor'> = {}): Promise<VersionedEviction[]> {
    return this.call('pendingDue', [cluster, dueAt, limit], () => {
      const key = groupKey({ ...group, dueAt });
      const out: VersionedEviction[] = [];
      for (const e of this.table.query(clusterPartitions(cluster), EVICTION_ROWS, (e) => e.state === 'pending' && e.dueAt === key)) {
        out.push(versioned(e));
        if (out.length >= limit) break;
      }
      return out;
    });
  }

  deleteDue(groups: DueGroup[]): Promise<void> {
    return this.call('deleteDue', [groups], () => {
      // As the Table adapter: each on its own, at the version listed; one written again since, or gone, stays.
      for (const group of groups) {
        try {
          this.table.transaction([{ type: 'delete', partitionKey: DUE, rowKey: group.token, etag: group.etag }]);
        } catch (error) {
          if (statusOf(error) !== 404 && statusOf(error) !== 412) throw error;
        }
      }
    });
  }

  dueGroupOf(record: EvictionRecord): string {
    return dueEntity(record).rowKey;
  }
  groupsBefore(groups: readonly DueGroup[], next: EvictionRecord | undefined): DueGroup[] {
    return groupsBefore(groups, next);
  }
  addDue(records: EvictionRecord[]): Promise<void> {
    return this.call('addDue', [records], () => this.writeDue(records));
  }

  private writeDue(records: EvictionRecord[]): void {
    this.table.submit(dueEntities(records).map((entity) => ({ type: 'upsert', entity })));
  }

  // ----------------------------------------------------------------------------------- pacer row

  getPacerState(): Promise<{ state: PacerState; etag?: string }> {
    return this.call('getPacerState', [], () => {
      const e = this.table.get(PACER, PACER_ROW);
      return e ? { etag: e.etag, state: pacerFromEntity(e) } : { state: initialPacerState() };
    });
  }

  putPacerState(state: PacerState, etag: string | undefined): Promise<boolean> {
    return this.call('putPacerState', [state, etag], () => {
      const entity = pacerEntity(state);
      try {
        this.table.transaction([etag ? { type: 'update', entity, etag } : { type: 'create', entity }]);
        return true;
      } catch (error) {
        const status = statusOf(error);
        if (status === 412 || status === 409) return false;
        throw error;
      }
    });
  }
}

const isConflict = (error: unknown) => {
  const status = statusOf(error);
  return status === 409 || status === 412;
};

const versioned = (e: StoredEntity): VersionedEviction => ({ record: evictionFromEntity(e), etag: e.etag });
