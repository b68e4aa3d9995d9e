import { BATCH, inRange, KeyRange } from '../ledger/keys';
import { transactionChunks } from '../ledger/transactions';
import { checkKey, checkProperties, MemoryStorageError, nextEtag } from './errors';

/**
 * One table in memory with the Table service's semantics, as far as the ledger uses them: entities keyed by
 * (PartitionKey, RowKey), an ETag per write, conditional writes (If-Match, `*` by default), queries in key
 * order, and transactions of one partition that apply whole or not at all, failing with the status of their
 * first failing action. Entities are stored as copies without undefined/null properties (the service keeps
 * neither) and read back as copies.
 */

export type Entity = { partitionKey: string; rowKey: string } & Record<string, unknown>;
export type StoredEntity = Entity & { etag: string };

export type MemoryAction =
  | { type: 'create'; entity: Entity }
  | { type: 'upsert'; entity: Entity }
  /** Replace; 404 when absent, 412 when `etag` (default `*`) does not match. */
  | { type: 'update'; entity: Entity; etag?: string }
  | { type: 'delete'; partitionKey: string; rowKey: string; etag?: string };

const keysOf = (action: MemoryAction) => (action.type === 'delete' ? action : action.entity);

export class MemoryTable {
  private readonly partitions = new Map<string, Map<string, StoredEntity>>();

  get(partitionKey: string, rowKey: string): StoredEntity | undefined {
    const stored = this.partitions.get(partitionKey)?.get(rowKey);
    return stored && structuredClone(stored);
  }

  /** Entities in key order (PartitionKey, then RowKey), as a range query over both keys returns them. */
  query(partitions: KeyRange | ((partitionKey: string) => boolean), rows: KeyRange, where: (entity: StoredEntity) => boolean = () => true): StoredEntity[] {
    const partitionMatches = typeof partitions === 'function' ? partitions : (key: string) => inRange(key, partitions);
    const out: StoredEntity[] = [];
    for (const partitionKey of [...this.partitions.keys()].filter(partitionMatches).sort(compare)) {
      const partition = this.partitions.get(partitionKey)!;
      for (const rowKey of [...partition.keys()].filter((key) => inRange(key, rows)).sort(compare)) {
        const entity = partition.get(rowKey)!;
        if (where(entity)) out.push(structuredClone(entity));
      }
    }
    return out;
  }

  /** One transaction (or a single write): every action applies, or none. Returns the new ETags (undefined for deletes). */
  transaction(actions: MemoryAction[]): Array<string | undefined> {
    if (actions.length === 0) return [];
    if (actions.length > BATCH) throw new MemoryStorageError(400, 'InvalidInput', `a transaction holds at most ${BATCH} actions`);
    const partitionKey = keysOf(actions[0]).partitionKey;
    const seen = new Set<string>();
    // Check every action against the current rows first, so a failure leaves the table as it was.
    actions.forEach((action, index) => {
      const { partitionKey: pk, rowKey: rk } = keysOf(action);
      if (pk !== partitionKey) throw new MemoryStorageError(400, 'InvalidInput', 'all operations in a transaction must target the same partitionKey');
      checkKey(pk, 'PartitionKey');
      checkKey(rk, 'RowKey');
      if (seen.has(rk)) throw new MemoryStorageError(400, 'InvalidDuplicateRow', `${index}:a command with RowKey '${rk}' is already present in the batch`);
      seen.add(rk);
      if (action.type !== 'delete') checkProperties(action.entity);
      const current = this.partitions.get(pk)?.get(rk);
      if (action.type === 'create' && current) throw new MemoryStorageError(409, 'EntityAlreadyExists', `${index}:the specified entity already exists`);
      if (action.type === 'update' || action.type === 'delete') {
        if (!current) throw new MemoryStorageError(404, 'ResourceNotFound', `${index}:the specified resource does not exist`);
        const etag = action.etag ?? '*';
        if (etag !== '*' && etag !== current.etag)
          throw new MemoryStorageError(412, 'UpdateConditionNotSatisfied', `${index}:the update condition specified in the request was not satisfied`);
      }
    });
    return actions.map((action) => {
      const { partitionKey: pk, rowKey: rk } = keysOf(action);
      let partition = this.partitions.get(pk);
      if (action.type === 'delete') {
        partition?.delete(rk);
        if (partition?.size === 0) this.partitions.delete(pk);
        return undefined;
      }
      if (!partition) this.partitions.set(pk, (partition = new Map<string, StoredEntity>()));
      const etag = nextEtag();
      partition.set(rk, { ...stripped(action.entity), etag });
      return etag;
    });
  }

  /**
   * The Table adapter's batched submit: actions grouped by partition, in transactions of at most 100.
   * Every transaction is tried; each applies whole or not at all, and when any failed the call throws the
   * first failure after the others were applied (the Table adapter's concurrent workers also go on with the
   * other transactions after one fails). Returns the ETags in input order.
   */
  submit(actions: MemoryAction[]): Array<string | undefined> {
    const etags = new Array<string | undefined>(actions.length);
    let failure: Error | undefined;
    for (const chunk of transactionChunks((i) => keysOf(actions[i]).partitionKey, actions.length)) {
      try {
        this.transaction(chunk.map((i) => actions[i])).forEach((etag, k) => (etags[chunk[k]] = etag));
      } catch (error) {
        failure ??= error instanceof Error ? error : new Error(String(error));
      }
    }
    if (failure !== undefined) throw failure;
    return etags;
  }

  /** Every entity, in key order (for tests and debugging). */
  dump(): StoredEntity[] {
    return this.query(() => true, { ge: '', lt: '\uffff' });
  }
}

/** Ordinal order, as the service sorts keys. */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A copy without undefined or null properties (the service stores neither). */
function stripped(entity: Entity): Entity {
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(entity)) if (value !== undefined && value !== null) copy[key] = value;
  return structuredClone(copy) as Entity;
}
