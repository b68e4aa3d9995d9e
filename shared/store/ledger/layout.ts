import { odata, type TableClient } from '@azure/data-tables';
import { clusterOfPartition, clusterPartition, EVICTION, JOURNAL, PACER, PLACEMENT } from './keys';
import { moveEntities, queryAll, statusOf } from './transactions';

/** The row of `~pacer` that says which partition layout the ledger's rows are in. */
export const LAYOUT_ROW = 'layout';

/**
 * Brings a ledger written by an older version to the current layout, then records it. Runs once per process
 * before the first ledger call: one point read when the layout is current.
 *
 * - Rows written under another shard count move into the partition the current keys give them
 *   (`clusterPartition`): one pass over the table's cluster partitions, page by page. Due entries need no
 *   move: the pacer reads a cluster's due rows across all its partitions and deletes entries by their own keys.
 * - Open intents kept in the ledger's own `~journal` partition move into the journal's table (`journal`).
 *   Every planner lists the open intents: in a table of their own that listing reads only them (the storage
 *   emulator answers a partition query by scanning the whole table, a hundred thousand placement rows).
 *
 * Each move creates the row at its new place (a row already there was moved, and maybe updated, by another
 * process: it is kept) and then deletes the old row at the ETag read, so a move interrupted (or run by two
 * processes at once) is finished by the next run and never loses or rolls back a row.
 */
export async function ensureLedgerLayout(client: TableClient, shards: number, journal: TableClient): Promise<{ moved: number }> {
  let recorded: { shards?: unknown; journalTable?: unknown } = {};
  try {
    recorded = await client.getEntity<{ shards?: number; journalTable?: boolean }>(PACER, LAYOUT_ROW);
  } catch (error) {
    if (statusOf(error) !== 404) throw error;
  }
  if (Number(recorded.shards) === shards && recorded.journalTable === true) return { moved: 0 };
  let moved = 0;
  if (Number(recorded.shards) !== shards) moved += await moveShards(client);
  moved += await moveIntents(client, journal);
  await client.upsertEntity({ partitionKey: PACER, rowKey: LAYOUT_ROW, shards, journalTable: true, migratedAt: new Date().toISOString(), moved }, 'Replace');
  return { moved };
}

async function moveShards(client: TableClient): Promise<number> {
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
  return moved;
}

async function moveIntents(client: TableClient, journal: TableClient): Promise<number> {
  const intents = await queryAll<Record<string, unknown>>(client, odata`PartitionKey eq ${JOURNAL}`);
  await moveEntities(
    client,
    intents.map((entity) => ({ from: { partitionKey: JOURNAL, rowKey: entity.rowKey, etag: entity.etag }, toPartition: JOURNAL, entity })),
    journal,
  );
  return intents.length;
}
