import { odata } from '@azure/data-tables';
import { bucketOf } from '../buckets';

/**
 * Keys of the ledger table. One table, partitioned by cluster shard: row keys `b:<binding>` are placement
 * rows and `e:<binding>` ledger rows; partition `~due` orders pending evictions by due time for the pacer,
 * and `~pacer` holds the global rate row. The open intents of writes that span tables are partition
 * `~journal` of the journal's own table. The in-memory ledger uses the same keys, so it orders rows the way
 * the service does.
 */

export const PLACEMENT = 'b:';
export const EVICTION = 'e:';
export const DUE = '~due';
export const PACER = '~pacer';
export const PACER_ROW = 'state';
/**
 * The write journal (`./journal`): one `j:<id>` row per write that spans tables (a binding and its placement
 * rows, a propagation policy and the bindings derived from it), open from before its first write until after
 * its last. Sorts after the cluster partitions, so no cluster range or layout pass meets it.
 */
export const JOURNAL = '~journal';
export const INTENT = 'j:';
/** At most this many actions in one transaction (the service's limit). */
export const BATCH = 100;

/**
 * A cluster's rows live in SHARDS partitions (`<cluster>|<shard>`, by a hash of the binding). Eight: a
 * failure's rows are planned in few transactions (a 1,000-binding cluster in 16, a 10,000-binding one in
 * 104 of ~100 rows: 96 % full), and a large cluster still plans in parallel partitions (one partition serves
 * ~2,000 entities/s on Azure: 20,000 bindings in ~1.3 s, not 10 s; Azurite looks an entity up by scanning its
 * partition, so one partition of 20,000 rows planned at 218/s there, eight at 1,772/s). A binding's placement
 * and ledger rows share a partition, so the worker's commit stays one transaction. "A cluster's rows" is one
 * partition-key range query whatever the count. Rows written under another count (64, then 1, in earlier
 * versions) are moved once, on first use (`./layout`).
 */
export const SHARDS = 8;

/** The shard of a binding's rows within its cluster (a hash bucket of the binding key). */
export const shardOf = (bindingKey: string): string => bucketOf(bindingKey, SHARDS);

export const clusterPartition = (cluster: string, bindingKey: string): string => `${cluster}|${shardOf(bindingKey)}`;
/** The cluster of a `<cluster>|<shard>` partition key. */
export const clusterOfPartition = (partitionKey: string): string => partitionKey.split('|')[0];

/** A half-open key range: `ge <= key < lt`. */
export interface KeyRange {
  ge: string;
  lt: string;
}

export const inRange = (key: string, range: KeyRange): boolean => key >= range.ge && key < range.lt;

/** Every partition of one cluster: `<cluster>|00` … ('~' sorts after the hex digits). */
export const clusterPartitions = (cluster: string): KeyRange => ({ ge: cluster + '|', lt: cluster + '|~' });
/** Placement rows. */
export const PLACEMENT_ROWS: KeyRange = { ge: PLACEMENT, lt: 'b;' };
/** Ledger rows. */
export const EVICTION_ROWS: KeyRange = { ge: EVICTION, lt: 'e;' };
/** Placement rows and ledger rows (and anything between `b:` and `e;`): what `listClusterRows` reads. */
export const CLUSTER_ROWS: KeyRange = { ge: PLACEMENT, lt: 'e;' };

/** The due row of one cluster shard and due time: row keys sort by due time. */
export const dueRowKey = (dueAt: string, cluster: string, shard: string): string => `${dueAt}|${cluster}|${shard}`;
/** Due rows are read up to and including every row key that starts with `horizon`. */
export const dueHorizon = (horizon: string): string => horizon + '~';

// OData filters of the ranges above, for the Table adapter.
export const clusterRange = (cluster: string): string => rangeFilter('PartitionKey', clusterPartitions(cluster));
export const rowRange = (range: KeyRange): string => rangeFilter('RowKey', range);
const rangeFilter = (property: 'PartitionKey' | 'RowKey', range: KeyRange): string =>
  property === 'PartitionKey' ? odata`PartitionKey ge ${range.ge} and PartitionKey lt ${range.lt}` : odata`RowKey ge ${range.ge} and RowKey lt ${range.lt}`;
