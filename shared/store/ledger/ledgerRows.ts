import { odata, TableClient, TableTransaction, TransactionAction } from '@azure/data-tables';
import { Limiter } from '../../concurrency';
import type { EvictionRecord, EvictionState } from '../../failover/bindingModel';
import type { RecordOptions, VersionedEviction } from '../ports';
import { evictionEntity, evictionFromEntity } from './entities';
import { clusterPartition, clusterRange, EVICTION, EVICTION_ROWS, PLACEMENT, rowRange } from './keys';
import { queryAll, statusOf, submit, submitOrOneByOne } from './transactions';

/** The states a scan filters on: `states` when given, else `state`, else any. */
export const scanStates = (filter: { state?: EvictionState; states?: readonly EvictionState[] }): readonly EvictionState[] =>
  filter.states ?? (filter.state ? [filter.state] : []);

/** The ledger rows: one `e:<binding>` row per (cluster, binding) eviction decision, in the binding's cluster shard. */
/**
 * A process's background plan rows in flight at once: enough to keep one storage partition server busy,
 * few enough that a pacer pass's reads are not queued behind a whole fleet's plans.
 */
const BACKGROUND_TRANSACTIONS = 4;

export class TableLedgerRows {
  constructor(
    private readonly client: TableClient,
    /** Writes the due entries of pending rows (the due order section). */
    private readonly addDue: (records: EvictionRecord[]) => Promise<void>,
  ) {}

  async listEvictions(cluster: string, states?: readonly EvictionState[]): Promise<VersionedEviction[]> {
    let filter = `${clusterRange(cluster)} and ${rowRange(EVICTION_ROWS)}`;
    if (states && states.length > 0) filter += ` and (${stateFilter(states)})`;
    return (await queryAll<Record<string, unknown>>(this.client, filter)).map(versioned);
  }

  /** Ledger rows across clusters (the API, the resync and the blocked-row retry); one filtered scan. */
  async scanEvictions(filter: { cluster?: string; state?: EvictionState; states?: readonly EvictionState[] }): Promise<VersionedEviction[]> {
    const clauses = [rowRange(EVICTION_ROWS)];
    if (filter.cluster) clauses.push(clusterRange(filter.cluster));
    const states = scanStates(filter);
    if (states.length > 0) clauses.push(`(${stateFilter(states)})`);
    return (await queryAll<Record<string, unknown>>(this.client, clauses.join(' and '))).map(versioned);
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

  /** Background rows' transactions in flight at once, across this process's planners. */
  private readonly background = new Limiter(BACKGROUND_TRANSACTIONS);

  /**
   * Records new decisions: rows that do not exist are created, rows given with an ETag (an ended row from
   * an earlier failure) are replaced; pending ones get a due entry. Batched per partition.
   */
  async recordEvictions(rows: Array<{ record: EvictionRecord; replaceEtag?: string }>, options: RecordOptions = {}): Promise<Array<string | undefined>> {
    const actions: TransactionAction[] = rows.map(({ record, replaceEtag }) =>
      replaceEtag ? ['update', evictionEntity(record), 'Replace', { etag: replaceEtag }] : ['create', evictionEntity(record)],
    );
    // The rows before their due groups: a pacer that lists a group written after its rows finds them when it
    // reads the group, and one that read the group before keeps it (its delete is conditional on the version).
    const etags = await submitOrOneByOne(this.client, actions, undefined, options.background ? this.background : undefined);
    options.onStored?.(etags);
    await this.addDue(rows.filter((r) => r.record.state === 'pending').map((r) => r.record));
    return etags;
  }

  /** Moves rows (one cluster) to a new state with their ETags, in batches; returns the new ETags. */
  async updateEvictions(updates: Array<{ record: EvictionRecord; etag: string }>): Promise<Array<string | undefined>> {
    return submit(
      this.client,
      updates.map(({ record, etag }) => ['update', evictionEntity(record), 'Replace', { etag }]),
    );
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
}

const stateFilter = (states: readonly EvictionState[]) => states.map((state) => odata`state eq ${state}`).join(' or ');
const versioned = (e: Record<string, unknown> & { etag: string }): VersionedEviction => ({ record: evictionFromEntity(e), etag: e.etag });
