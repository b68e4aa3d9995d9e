import { RestError, TableClient, TransactionAction } from '@azure/data-tables';
import { Limiter, mapConcurrent } from '../../concurrency';
import { BATCH } from './keys';

/** The HTTP status of a failed storage call (a RestError, or anything that carries `statusCode`). */
export const statusOf = (error: unknown): number | undefined =>
  error instanceof RestError ? error.statusCode : (error as { statusCode?: number } | undefined)?.statusCode;

/**
 * Groups actions by partition and cuts each partition's actions into chunks of at most BATCH, in input
 * order: the transactions `submit` sends (and the in-memory ledger applies), one atomic unit each.
 */
export function transactionChunks(partitionOf: (index: number) => string, count: number): number[][] {
  const byPartition = new Map<string, number[]>();
  for (let i = 0; i < count; i++) {
    const partition = partitionOf(i);
    const list = byPartition.get(partition);
    if (list) list.push(i);
    else byPartition.set(partition, [i]);
  }
  const chunks: number[][] = [];
  for (const indexes of byPartition.values()) for (let i = 0; i < indexes.length; i += BATCH) chunks.push(indexes.slice(i, i + BATCH));
  return chunks;
}

export const partitionOfAction = (action: TransactionAction): string => String((action[1] as { partitionKey: string }).partitionKey);

/**
 * Submits actions as transactions of at most 100, one partition each, `concurrency` at a time; returns the
 * ETags in input order. Each transaction is all-or-nothing; when one fails the call rejects with its error,
 * after every other transaction has settled: those of other partitions have been written (or failed).
 */
export async function submit(client: TableClient, actions: TransactionAction[], concurrency = 8): Promise<Array<string | undefined>> {
  return (await submitChunks(client, actions, concurrency, false)) as Array<string | undefined>;
}

/**
 * As `submit`, for writes that may meet rows already there: a transaction refused with 409 (a created row
 * exists) or 412 (a replaced one changed) leaves its actions' results `false` instead of failing the call;
 * the others' are their ETags. Any other failure rejects, after every transaction has settled.
 */
export async function submitUnlessConflict(
  client: TableClient,
  actions: TransactionAction[],
  concurrency = 8,
  limiter?: Limiter,
): Promise<Array<string | false>> {
  return (await submitChunks(client, actions, concurrency, true, limiter)).map((result) => (result === false ? false : (result ?? '')));
}

async function submitChunks(
  client: TableClient,
  actions: TransactionAction[],
  concurrency: number,
  skipConflicts: boolean,
  limiter?: Limiter,
): Promise<Array<string | undefined | false>> {
  const chunks = transactionChunks((i) => partitionOfAction(actions[i]), actions.length);
  const results = new Array<string | undefined | false>(actions.length);
  // Every transaction is settled before the call answers: when one fails, the caller's re-read sees the
  // others landed (or failed), never still in flight.
  let failure: Error | undefined;
  const send = async (chunk: number[]) => {
    if (chunk.length === 1) results[chunk[0]] = await submitOne(client, actions[chunk[0]]);
    else {
      const response = await client.submitTransaction(chunk.map((i) => actions[i]));
      response.subResponses.forEach((sub, k) => (results[chunk[k]] = sub.etag));
    }
  };
  await mapConcurrent(chunks, concurrency, async (chunk) => {
    try {
      await (limiter ? limiter.run(() => send(chunk)) : send(chunk));
    } catch (error) {
      if (skipConflicts && isConflict(error)) for (const i of chunk) results[i] = false;
      else failure ??= error instanceof Error ? error : new Error(String(error));
    }
  });
  if (failure) throw failure;
  return results;
}

/**
 * One action sent alone: the same effect and the same errors as a transaction of one (and billed the same on
 * Azure), without the multipart body, which Azurite serves about a third slower. A bulk write spread over many
 * partitions (a binding import across the fleet, a rescheduled binding's new placement row) is mostly these.
 */
export async function submitOne(client: TableClient, action: TransactionAction): Promise<string | undefined> {
  const entity = action[1];
  switch (action[0]) {
    case 'create':
      return (await client.createEntity(entity)).etag;
    case 'delete':
      // As in a transaction: unconditional (If-Match: *).
      await client.deleteEntity(entity.partitionKey, entity.rowKey);
      return undefined;
    case 'upsert':
      return (await client.upsertEntity(entity, action[2] ?? 'Merge')).etag;
    case 'update':
      return (await client.updateEntity(entity, action[2] ?? 'Merge', action[3])).etag;
  }
}

/**
 * Writes every action that does not conflict: a transaction refused with 409 or 412 is tried again action by
 * action (several at once), skipping the ones that conflict; the other transactions stand as written. (A
 * planner racing another one on the same cluster meets its rows in every transaction, so this is bounded by
 * the refused transactions, not by all the actions.) The ETag of each action written, in input order;
 * undefined for one skipped (and for a delete).
 */
export async function submitOrOneByOne(
  client: TableClient,
  actions: TransactionAction[],
  concurrency = 8,
  limiter?: Limiter,
): Promise<Array<string | undefined>> {
  const results = await submitUnlessConflict(client, actions, concurrency, limiter);
  const etags = results.map((result) => (result === false || result === '' ? undefined : result));
  // A refused transaction of one action was that action's own answer.
  const refused = transactionChunks((i) => partitionOfAction(actions[i]), actions.length)
    .filter((chunk) => chunk.length > 1 && results[chunk[0]] === false)
    .flat();
  await mapConcurrent(refused, concurrency, async (i) => {
    try {
      etags[i] = await submitOne(client, actions[i]);
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
  });
  return etags;
}

const isConflict = (error: unknown) => {
  const status = statusOf(error);
  return status === 409 || status === 412;
};

/** Every entity a filter matches, all pages (1,000 a page), optionally only some properties. */
export async function queryAll<T>(client: TableClient, filter: string, select?: string[]): Promise<Array<T & { rowKey: string; etag: string }>> {
  const out: Array<T & { rowKey: string; etag: string }> = [];
  const pages = client.listEntities<Record<string, unknown>>({ queryOptions: { filter, ...(select ? { select } : {}) } }).byPage({ maxPageSize: 1000 });
  for await (const page of pages) {
    for (const entity of page) out.push(entity as unknown as T & { rowKey: string; etag: string });
  }
  return out;
}

/**
 * Moves entities to other partitions (of `client`'s table, or of `target`'s), losing none: each is created at
 * its new key (one already there was moved, maybe updated, by another process, and is kept), then its old row
 * is deleted at the ETag read (a row changed or gone meanwhile is left). Safe to repeat and to run in two
 * processes at once.
 */
export async function moveEntities(
  client: TableClient,
  moves: Array<{ from: { partitionKey: string; rowKey: string; etag: string }; toPartition: string; entity: Record<string, unknown> }>,
  target: TableClient = client,
): Promise<void> {
  if (moves.length === 0) return;
  await submitOrOneByOne(
    target,
    moves.map(({ from, toPartition, entity }): TransactionAction => {
      const properties = Object.fromEntries(
        Object.entries(entity).filter(([name]) => !['etag', 'timestamp', 'odata.metadata', 'partitionKey', 'rowKey'].includes(name)),
      );
      return ['create', { ...properties, partitionKey: toPartition, rowKey: from.rowKey }];
    }),
  );
  for (const { from } of moves) {
    try {
      await client.deleteEntity(from.partitionKey, from.rowKey, { etag: from.etag });
    } catch (error) {
      const status = statusOf(error);
      if (status !== 404 && status !== 412) throw error;
    }
  }
}
