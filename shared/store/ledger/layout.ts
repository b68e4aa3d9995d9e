import type { TableClient, TransactionAction } from '@azure/data-tables';
import { clusterOfPartition, clusterPartition, EVICTION, PACER, PLACEMENT } from './keys';
import { statusOf, submitOrOneByOne } from './transactions';

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
    const moves: Array<{
      from: { partitionKey: string; rowKey: string; etag: string };
      to: Record<string, unknown> & { partitionKey: string; rowKey: string };
    }> = [];
    for (const entity of page) {
      const rowKey = String(entity.rowKey);
      const partitionKey = String(entity.partitionKey);
      if (!rowKey.startsWith(PLACEMENT) && !rowKey.startsWith(EVICTION)) continue;
      const target = clusterPartition(clusterOfPartition(partitionKey), rowKey.slice(2));
      if (target === partitionKey) continue;
      const properties = Object.fromEntries(Object.entries(entity).filter(([name]) => !['etag', 'timestamp', 'odata.metadata', 'partitionKey'].includes(name)));
      moves.push({ from: { partitionKey, rowKey, etag: String(entity.etag) }, to: { ...properties, partitionKey: target, rowKey } });
    }
    if (moves.length === 0) continue;
    await submitOrOneByOne(
      client,
      moves.map((m): TransactionAction => ['create', m.to]),
    );
    for (const { from } of moves) {
      try {
        await client.deleteEntity(from.partitionKey, from.rowKey, { etag: from.etag });
      } catch (error) {
        const status = statusOf(error);
        if (status !== 404 && status !== 412) throw error;
      }
    }
    moved += moves.length;
  }
  await client.upsertEntity({ partitionKey: PACER, rowKey: LAYOUT_ROW, shards, migratedAt: new Date().toISOString(), moved }, 'Replace');
  return { moved };
}
