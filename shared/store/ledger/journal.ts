import { odata, TableClient } from '@azure/data-tables';
import { mapConcurrent } from '../../concurrency';
import type { PlacementFacts } from '../../failover/bindingModel';
import type { LedgerEntity } from './entities';
import { INTENT, JOURNAL } from './keys';
import { queryAll, statusOf, submitUnlessConflict } from './transactions';

/**
 * The write journal. A write that spans tables cannot be one transaction: a binding and its placement rows
 * (rows in the ledger table, the binding in its own), a propagation policy and the bindings derived from it.
 * Its writer records an intent before its first write and closes it after its last; a host that dies in
 * between leaves the intent open, and whoever finds it open past the grace (the repair timer) finishes the
 * write from what is stored. Readers of the placement index treat the rows an open intent names as in
 * doubt, and ask the binding.
 */

/** One binding's part of a write: the version written and every cluster whose placement row it writes or removes. */
export interface IndexedWrite {
  key: string;
  rev: number;
  clusters: string[];
}

export interface WriteIntent {
  id: string;
  /** When its writer opened (or last renewed) it: past the grace, the writer is taken for dead. */
  openedAt: string;
  /** When a repair took it over (its ETag moved, so its writer's close finds it taken). */
  claimedAt?: string;
  /** Binding writes: their placement rows were written (or are to be removed) around the bindings' writes. */
  placements?: IndexedWrite[];
  /** A propagation-policy change: every template and binding is to be derived again under the stored policies. */
  derive?: true;
}

export interface VersionedIntent {
  intent: WriteIntent;
  etag: string;
}

export interface VersionedPlacement {
  row: PlacementFacts;
  etag: string;
}

/**
 * What the ledger keeps for the journal (the Table and memory ledgers have it; `hasWriteJournal` says so):
 * the intents, and single placement rows read and changed at their ETags, for the repair.
 */
export interface WriteJournal {
  /** Creates the intents (none exists yet: ids are new); their ETags, in order. */
  openIntents(intents: WriteIntent[]): Promise<string[]>;
  /** Replaces an intent at its ETag (a renewal, a repair's claim); false when it changed or was closed. */
  updateIntent(intent: WriteIntent, etag: string): Promise<string | false>;
  /** Deletes intents at their ETags; false for each one that changed (a repair claimed it) or was gone. */
  closeIntents(intents: Array<{ id: string; etag: string }>): Promise<boolean[]>;
  /** Every open intent. */
  listIntents(): Promise<VersionedIntent[]>;
  getPlacement(cluster: string, bindingKey: string): Promise<VersionedPlacement | undefined>;
  /** Replaces a placement row at its ETag; false when it changed or was removed. */
  replacePlacement(row: PlacementFacts, etag: string): Promise<boolean>;
  /** Removes a placement row at its ETag; false when it changed or was removed. */
  deletePlacement(cluster: string, bindingKey: string, etag: string): Promise<boolean>;
}

export const hasWriteJournal = <T extends object>(ledger: T): ledger is T & WriteJournal =>
  typeof (ledger as Partial<WriteJournal>).openIntents === 'function' && typeof (ledger as Partial<WriteJournal>).listIntents === 'function';

/** A string property holds at most 32 Ki UTF-16 units: the intent's writes are cut into parts this long. */
const PART = 30_000;
/** Parts per intent, so an entity stays well under the service's 1 MiB. */
export const MAX_INTENT_PARTS = 12;
/** The most JSON one intent's `placements` may take; a larger write is recorded in several intents. */
export const MAX_INTENT_CHARS = PART * MAX_INTENT_PARTS;

export function intentEntity(intent: WriteIntent): LedgerEntity {
  const entity: LedgerEntity = { partitionKey: JOURNAL, rowKey: INTENT + intent.id, openedAt: intent.openedAt };
  if (intent.claimedAt) entity.claimedAt = intent.claimedAt;
  if (intent.derive) entity.derive = true;
  if (intent.placements) {
    const json = JSON.stringify(intent.placements);
    const parts = Math.ceil(json.length / PART);
    if (parts > MAX_INTENT_PARTS) throw new Error(`a write intent holds at most ${MAX_INTENT_CHARS} characters of placements (${json.length})`);
    entity.parts = parts;
    for (let i = 0; i < parts; i++) entity[`placements${i}`] = json.slice(i * PART, (i + 1) * PART);
  }
  return entity;
}

export function intentFromEntity(e: Record<string, unknown>): WriteIntent {
  const parts = Number(e.parts ?? 0);
  const json = Array.from({ length: parts }, (_, i) => String(e[`placements${i}`] ?? '')).join('');
  return {
    id: String(e.rowKey).slice(INTENT.length),
    openedAt: String(e.openedAt),
    ...(e.claimedAt ? { claimedAt: String(e.claimedAt) } : {}),
    ...(parts > 0 ? { placements: JSON.parse(json) as IndexedWrite[] } : {}),
    ...(e.derive ? { derive: true as const } : {}),
  };
}

/** Intents a transaction holds at once: few enough that the largest ones stay under the service's 4 MiB per transaction. */
const INTENTS_PER_TRANSACTION = 4;
/** Closes in flight at once (each is its own conditional delete: a transaction cannot delete at an ETag). */
const CLOSE_CONCURRENCY = 16;

/** The journal partition (`~journal`) of the journal's own table (TABLES.journal). */
export class TableWriteJournal implements Pick<WriteJournal, 'openIntents' | 'updateIntent' | 'closeIntents' | 'listIntents'> {
  constructor(private readonly client: TableClient) {}

  async openIntents(intents: WriteIntent[]): Promise<string[]> {
    const etags: string[] = [];
    for (let i = 0; i < intents.length; i += INTENTS_PER_TRANSACTION) {
      const batch = intents.slice(i, i + INTENTS_PER_TRANSACTION);
      const written = await submitUnlessConflict(
        this.client,
        batch.map((intent) => ['create', intentEntity(intent)]),
      );
      // An intent's id is new to this write: one found there already was written by this call, whose answer
      // was lost and the request repeated by the retry policy. Its ETag is read.
      etags.push(
        ...(await Promise.all(
          written.map(async (etag, k) => (etag === false ? String((await this.client.getEntity(JOURNAL, INTENT + batch[k].id)).etag) : etag)),
        )),
      );
    }
    return etags;
  }

  async updateIntent(intent: WriteIntent, etag: string): Promise<string | false> {
    try {
      return String((await this.client.updateEntity(intentEntity(intent), 'Replace', { etag })).etag);
    } catch (error) {
      if (statusOf(error) === 412 || statusOf(error) === 404) return false;
      throw error;
    }
  }

  async closeIntents(intents: Array<{ id: string; etag: string }>): Promise<boolean[]> {
    return mapConcurrent(intents, CLOSE_CONCURRENCY, async ({ id, etag }) => {
      try {
        await this.client.deleteEntity(JOURNAL, INTENT + id, { etag });
        return true;
      } catch (error) {
        if (statusOf(error) === 412 || statusOf(error) === 404) return false;
        throw error;
      }
    });
  }

  async listIntents(): Promise<VersionedIntent[]> {
    const rows = await queryAll<Record<string, unknown>>(this.client, odata`PartitionKey eq ${JOURNAL}`);
    return rows.map((row) => ({ intent: intentFromEntity(row), etag: row.etag }));
  }
}
