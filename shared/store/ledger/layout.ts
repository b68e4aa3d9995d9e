import type { TableClient } from '@azure/data-tables';
import { clusterOfPartition, clusterPartition, EVICTION, PACER, PLACEMENT } from './keys';
import { moveEntities, statusOf } from './transactions';

/** The row of `~pacer` that says which partition layout the ledger's rows are in. */
export const LAYOUT_ROW = 'layout';

/**
 * Moves every placement and ledger row written under another shard count into the partition the current
 * keys give it (`clusterPartition`), then records the layout. Runs once per process before the first ledger
 * call: one point read when the layout is current; on a store written by an older version, one pass over
 * the table's cluster partitions, page by page. Each move creates the row in its new partition (a row
 * already there was moved, and maybe updated, by another process: it is kept) and then deletes the old row
 * at the ETag read, so a move interrupted (or run by two processes at once) is finished by the next run and
 * never loses or rolls back a row. Due entries need no move: the pacer reads a cluster's due rows across all its
 * partitions and deletes entries by their own keys.
 */
export async function ensureLedgerLayout(client: TableClient, shards: number): Promise<{ moved: number }> {
  try {
    const marker = await client.getEntity<{ shards?: number }>(PACER, LAYOUT_ROW);
    if (Number(marker.shards) === shards) return { moved: 0 };
  } catch (error) {
    if (statusOf(error) !== 404) throw error;
  }
  let moved = 0;
  // Cluster partitions sort before `~due` and `~pacer` (cluster names are DNS labels).
  const pages = client.listEntities<Record<string, unknown>>({ queryOptions: { filter: "PartitionKey lt '~'" } }).byPage({ maxPageSize: 1000 });
  for await (const page of pages) {
    const moves = page.flatMap((entity) => {
      const rowKey = String(entity.rowKey);
      const partitionKey = String(entity.partitionKey);
      if (!rowKey.startsWith(PLACEMENT) && !rowKey.startsWith(EVICTION)) return [];
      const toPartition = clusterPartition(clusterOfPartition(partitionKey), rowKey.slice(2));
      return toPartition === partitionKey ? [] : [{ from: { partitionKey, rowKey, etag: String(entity.etag) }, toPartition, entity }];
    });
    await moveEntities(client, moves);
    moved += moves.length;
  }
  await client.upsertEntity({ partitionKey: PACER, rowKey: LAYOUT_ROW, shards, migratedAt: new Date().toISOString(), moved }, 'Replace');
  return { moved };
}
