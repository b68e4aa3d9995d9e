import { alreadyApplied, type RowChange } from '../../failover/evictionRow';
import type { VersionedEviction } from '../../store/ports';
import type { ControlPlane } from '../ports';

/**
 * The one way a ledger row's state is written: a RowChange (shared/failover/evictionRow.ts) with the ETag
 * the row was read at. One conflict convention: a write whose row changed first is lost, `undefined` in the
 * answer, never an exception. A row that ends `pending` gets its due entry (the pacer's way to it).
 */

export interface RowWrite {
  etag: string;
  change: RowChange;
}

export interface ApplyOptions {
  /**
   * A lost row read again: the change to try instead at its new ETag (undefined: leave it). Up to three
   * tries per row; without it a lost row stays lost.
   */
  retry?: (latest: VersionedEviction) => RowChange | undefined;
}

const RETRIES = 3;

/**
 * Applies row changes with their ETags, batched (one request per cluster's hundred rows). When a batch is
 * refused (a row changed since it was read; batches of other clusters may have landed) each row is read
 * again: one already as this write left it keeps its new ETag, one still at its old ETag is written alone,
 * any other is lost (or tried again through `retry`). Returns each row's new ETag, undefined when lost.
 */
export async function applyRowChanges(plane: ControlPlane, writes: readonly RowWrite[], options: ApplyOptions = {}): Promise<Array<string | undefined>> {
  if (writes.length === 0) return [];
  let applied: Array<RowWrite | undefined>;
  try {
    const etags = await plane.ledger.updateEvictions(writes.map(({ etag, change }) => ({ record: change.record, etag })));
    applied = writes.map((write, i) => (etags[i] !== undefined ? { etag: etags[i], change: write.change } : undefined));
  } catch {
    applied = [];
    for (const write of writes) applied.push(await applyAlone(plane, write, options));
  }
  await addDueEntries(plane, applied);
  return applied.map((write) => write?.etag);
}

/** One row's change, ETag-checked (see applyRowChanges); its new ETag, or undefined when lost. */
export async function applyRowChange(plane: ControlPlane, etag: string, change: RowChange, options: ApplyOptions = {}): Promise<string | undefined> {
  const written = await plane.ledger.updateEviction(change.record, etag);
  const applied = written !== false ? { etag: written, change } : options.retry ? await applyAlone(plane, { etag, change }, options) : undefined;
  await addDueEntries(plane, [applied]);
  return applied?.etag;
}

/** A write tried alone after its batch (or its first try) was refused: what landed, with its new ETag. */
async function applyAlone(plane: ControlPlane, first: RowWrite, options: ApplyOptions): Promise<RowWrite | undefined> {
  let write: RowWrite | undefined = first;
  for (let attempt = 0; attempt < RETRIES && write; attempt++) {
    const { cluster, bindingKey } = write.change.record;
    const latest = await plane.ledger.getEviction(cluster, bindingKey);
    if (!latest) return undefined;
    if (alreadyApplied(latest.record, write.change)) return { etag: latest.etag, change: write.change };
    if (latest.etag !== write.etag) {
      const next = options.retry?.(latest);
      write = next ? { etag: latest.etag, change: next } : undefined;
      if (!write) return undefined;
    }
    const etag = await plane.ledger.updateEviction(write.change.record, write.etag);
    if (etag !== false) return { etag, change: write.change };
  }
  return undefined;
}

async function addDueEntries(plane: ControlPlane, applied: ReadonlyArray<RowWrite | undefined>): Promise<void> {
  const pending = applied.flatMap((write) => (write?.change.record.state === 'pending' ? [write.change.record] : []));
  if (pending.length > 0) await plane.ledger.addDue(pending);
}

/**
 * New decisions' rows (`plan` changes): created, or replacing a finished row at its ETag. Creates their due
 * entries. Returns the rows written with their ETags (a row another pass planned first is left out);
 * `onStored` gets the same once the rows are stored, before their due entries are written.
 */
export async function planRows(
  plane: ControlPlane,
  rows: ReadonlyArray<{ change: RowChange; replaceEtag?: string }>,
  options: { background?: boolean; onStored?: (written: VersionedEviction[]) => void } = {},
): Promise<VersionedEviction[]> {
  if (rows.length === 0) return [];
  const written = (etags: Array<string | undefined>): VersionedEviction[] =>
    rows.flatMap(({ change }, i) => {
      const etag = etags[i];
      return etag === undefined ? [] : [{ record: change.record, etag }];
    });
  const { onStored } = options;
  const etags = await plane.ledger.recordEvictions(
    rows.map(({ change, replaceEtag }) => ({ record: change.record, ...(replaceEtag ? { replaceEtag } : {}) })),
    {
      ...(options.background ? { background: true } : {}),
      ...(onStored ? { onStored: (stored: Array<string | undefined>) => onStored(written(stored)) } : {}),
    },
  );
  return written(etags);
}

/**
 * The worker's commit (a `complete` change): the row moves to `done` with its ETag and the cluster's
 * placement row goes, atomically. False when the row changed first.
 */
export const commitRow = (plane: ControlPlane, etag: string, change: RowChange): Promise<boolean> => plane.ledger.commitEviction(change.record, etag);
