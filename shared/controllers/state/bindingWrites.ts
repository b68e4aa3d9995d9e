import { randomUUID } from 'node:crypto';
import { mapConcurrent } from '../../concurrency';
import { bindingKey, PlacementFacts, resourceKindOf } from '../../failover/bindingModel';
import { hasWriteJournal, IndexedWrite, MAX_INTENT_CHARS, VersionedIntent, VersionedPlacement, WriteIntent, WriteJournal } from '../../store/ledger/journal';
import { keep, mutate, Mutation, write } from '../../store/optimistic';
import type { EvictionLedger, Versioned, VersionedEviction } from '../../store/ports';
import type { BindingRecord } from '../../store/records';
import { errorFields } from '../../telemetry/log';
import type { ControlPlane } from '../ports';

/** The placement rows a binding version implies: one per cluster in spec.clusters. */
export function placementsOf(record: BindingRecord): PlacementFacts[] {
  return (record.spec.clusters ?? []).map((target) => ({
    cluster: target.name,
    kind: record.kind,
    ...(record.namespace ? { namespace: record.namespace } : {}),
    name: record.name,
    resourceKind: resourceKindOf(record.spec),
    replicas: target.replicas ?? record.spec.replicas ?? 0,
    tolerations: record.spec.placement?.clusterTolerations ?? [],
    ...(record.spec.failover?.cluster ? { failoverCluster: record.spec.failover.cluster } : {}),
    // The pacer's order (spec.schedulePriority.priority), carried into the ledger row when it is planned.
    ...(record.spec.schedulePriority?.priority ? { priority: record.spec.schedulePriority.priority } : {}),
    rev: record.rev,
  }));
}

const projection = (row: PlacementFacts) => JSON.stringify({ ...row, rev: 0 });
const unique = (names: Iterable<string>) => [...new Set(names)];

// ----------------------------------------------------------------------------------- the write journal

/**
 * An open intent older than this is taken for its writer's: the writer died (or failed) between its steps,
 * and the repair finishes the write. A writer still running past it finds its intent taken when it closes
 * it, and writes again (`redoTakenWrite`).
 */
export const INTENT_GRACE_MS = 20_000;
/** A writer that has held its intents this long renews them before its next step (a bulk apply's batch on a slow store). */
const RENEW_AFTER_MS = 5_000;
/** Point reads in flight at once while settling rows. */
const SETTLE_CONCURRENCY = 16;

type Journaled = EvictionLedger & WriteJournal;
/** The ledger's journal, when its adapter keeps one (the Table and memory ledgers do). */
export const journalOf = (plane: ControlPlane): Journaled | undefined => (hasWriteJournal(plane.ledger) ? plane.ledger : undefined);

/** An intent this writer opened: its ETag, or false once a repair took it over. */
export interface HeldIntent {
  intent: WriteIntent;
  etag: string | false;
}

/** Records intents before a write's first step; none (and nothing written) without a journal. */
export async function openIntents(plane: ControlPlane, parts: Array<Omit<WriteIntent, 'id' | 'openedAt'>>): Promise<HeldIntent[]> {
  const journal = journalOf(plane);
  if (!journal || parts.length === 0) return [];
  const openedAt = plane.clock.now().toISOString();
  const intents = parts.map((part) => ({ ...part, id: randomUUID(), openedAt }));
  const etags = await journal.openIntents(intents);
  return intents.map((intent, i) => ({ intent, etag: etags[i] }));
}

/** Intents for binding writes, each within the size an intent holds. */
export function placementIntents(writes: IndexedWrite[]): Array<Omit<WriteIntent, 'id' | 'openedAt'>> {
  const intents: Array<Omit<WriteIntent, 'id' | 'openedAt'>> = [];
  let part: IndexedWrite[] = [];
  let size = 0;
  for (const entry of writes) {
    const length = JSON.stringify(entry).length + 1;
    if (part.length > 0 && size + length > MAX_INTENT_CHARS / 2) {
      intents.push({ placements: part });
      part = [];
      size = 0;
    }
    part.push(entry);
    size += length;
  }
  if (part.length > 0) intents.push({ placements: part });
  return intents;
}

/** Renews intents held for a while, before the writer's next step; one a repair took stays taken. */
export async function renewIntents(plane: ControlPlane, held: HeldIntent[]): Promise<void> {
  const journal = journalOf(plane);
  const now = plane.clock.now();
  for (const entry of held) {
    if (!journal || entry.etag === false || now.getTime() - Date.parse(entry.intent.openedAt) < RENEW_AFTER_MS) continue;
    const renewed = { ...entry.intent, openedAt: now.toISOString() };
    entry.etag = await journal.updateIntent(renewed, entry.etag);
    entry.intent = renewed;
  }
}

/**
 * Closes intents after a write's last step; answers the ones a repair took over meanwhile. A close that
 * fails does not fail the write, which is done: its intents stay open and the repair settles (and closes)
 * them, finding the rows as the write left them.
 */
export async function closeIntents(plane: ControlPlane, held: HeldIntent[]): Promise<HeldIntent[]> {
  const journal = journalOf(plane);
  if (!journal || held.length === 0) return [];
  const open = held.filter((entry): entry is HeldIntent & { etag: string } => entry.etag !== false);
  try {
    const closed = await journal.closeIntents(open.map(({ intent, etag }) => ({ id: intent.id, etag })));
    return [...held.filter((entry) => entry.etag === false), ...open.filter((_, i) => !closed[i])];
  } catch (error) {
    plane.log.warn('write intents not closed: the repair will close them', { intents: open.map(({ intent }) => intent.id), ...errorFields(error) });
    return held.filter((entry) => entry.etag === false);
  }
}

/** Open intents whose writers are taken for dead: opened (or claimed by a repair) more than the grace ago. */
export async function staleIntents(plane: ControlPlane): Promise<VersionedIntent[]> {
  const journal = journalOf(plane);
  if (!journal) return [];
  const cutoff = plane.clock.now().getTime() - INTENT_GRACE_MS;
  return (await journal.listIntents()).filter(({ intent }) => Date.parse(intent.claimedAt ?? intent.openedAt) <= cutoff);
}

/** Takes stale intents over (their ETags move, so a writer still running finds them taken); the ones this call got. */
export async function claimIntents(plane: ControlPlane, stale: VersionedIntent[]): Promise<VersionedIntent[]> {
  const journal = journalOf(plane);
  if (!journal) return [];
  const claimedAt = plane.clock.now().toISOString();
  const claimed: VersionedIntent[] = [];
  for (const { intent, etag } of stale) {
    const next = { ...intent, claimedAt };
    const moved = await journal.updateIntent(next, etag);
    if (moved !== false) claimed.push({ intent: next, etag: moved });
  }
  return claimed;
}

// ----------------------------------------------------------------------------------- binding writes

export interface BindingWriteOptions {
  /** Clusters whose placement rows the caller already removed (the eviction worker's commit). */
  placementsAlreadyRemoved?: string[];
  /** The version the caller just read, to save a read on the first attempt. */
  current?: Versioned<BindingRecord>;
  /**
   * Clusters whose rows an earlier write of this binding wrote for a version that did not land (a batch's
   * write that lost a race): written again if this version places the binding there, removed if not.
   */
  touched?: string[];
  /** Every row of the new version is written, not only the changed ones (a write done again). */
  reindex?: boolean;
  /** How many times this write was done again after a repair took its intent over. */
  redone?: number;
}

export interface BindingWrite<R> {
  result: R;
  record?: BindingRecord;
  etag?: string;
  previous?: BindingRecord;
}

/**
 * The one way a binding changes. The placement index is kept in step with spec.clusters under
 * concurrency: rows for the new version are written before the binding (so the index never misses a
 * placement), and rows of clusters the binding left are removed after, only if no newer revision has
 * rewritten them (ETag-checked). The rows an attempt writes or removes are named first in an intent of the
 * write journal, closed after the last step: a host that dies between the rows and the binding leaves the
 * intent open, readers of the index ask the binding about those rows (`listClusterPlacements`), and the
 * repair settles them against the stored binding (`repairPlacementWrites`). An attempt that lost a race
 * leaves rows for a version that never landed: the next attempt writes them again or removes them.
 * `change` gets a copy it may change, and must be a function of it.
 */
export async function writeBinding<R>(
  plane: ControlPlane,
  key: string,
  change: (current: BindingRecord | undefined, now: Date) => Mutation<BindingRecord, R>,
  options: BindingWriteOptions = {},
): Promise<BindingWrite<R>> {
  let written: BindingRecord | undefined;
  let previous: BindingRecord | undefined;
  let kind: Mutation<BindingRecord, R>['kind'] = 'keep';
  const held: HeldIntent[] = [];
  // Clusters whose rows an attempt wrote (or a caller's earlier write did): settled by the outcome, whatever it is.
  const touched = new Set<string>(options.touched ?? []);
  const skip = new Set(options.placementsAlreadyRemoved ?? []);
  const outcome = await mutate<BindingRecord, R>(
    plane.bindings,
    key,
    async (current: Versioned<BindingRecord> | undefined) => {
      const now = plane.clock.now();
      previous = current?.value;
      const decision = change(current ? structuredClone(current.value) : undefined, now);
      written = undefined;
      kind = decision.kind;
      if (decision.kind === 'keep') return decision;
      const placed = (current?.value.spec.clusters ?? []).map((c) => c.name);
      if (decision.kind === 'delete') {
        const gone = unique([...placed, ...touched]).filter((name) => !skip.has(name));
        held.push(...(await openIntents(plane, intentFor(key, (current?.value.rev ?? 0) + 1, gone))));
        return decision;
      }
      const next = { ...decision.value, rev: (current?.value.rev ?? 0) + 1 };
      const before = new Map((current ? placementsOf(current.value) : []).map((row) => [row.cluster, projection(row)]));
      const changed = placementsOf(next).filter((row) => options.reindex || touched.has(row.cluster) || before.get(row.cluster) !== projection(row));
      const after = new Set(placementsOf(next).map((row) => row.cluster));
      const leaving = unique([...placed, ...touched]).filter((name) => !after.has(name) && !skip.has(name));
      // Journaled when the binding is created: a kill between its rows and its write would leave rows for a
      // binding nobody can read (a phantom that what-if lists, a drain plans and the pacer gives slots). A
      // binding that exists and moves (the scheduler's and the worker's writes) is not: a row such a kill
      // leaves names a real binding, which the worker reads before acting, and journaling every placement
      // would cost every eviction two more requests.
      if (!current) held.push(...(await openIntents(plane, intentFor(key, next.rev, [...changed.map((row) => row.cluster), ...leaving]))));
      if (changed.length > 0) await plane.ledger.upsertPlacements(changed);
      for (const row of changed) touched.add(row.cluster);
      written = next;
      return write(next, decision.result);
    },
    options.current,
  );
  if (kind === 'keep') {
    // Rows written for a version that never landed (a lost race, a caller's): settled against what is stored.
    if (touched.size > 0 && journalOf(plane)) await settleKept(plane, key, previous?.rev ?? 0, [...touched], held);
    return { result: outcome.result, record: written, etag: outcome.etag, previous };
  }
  const after = new Set((written?.spec.clusters ?? []).map((c) => c.name));
  const removedRev = written?.rev ?? (previous?.rev ?? 0) + 1;
  const left = unique([...(previous?.spec.clusters ?? []).map((c) => c.name), ...touched]).filter((name) => !after.has(name) && !skip.has(name));
  await Promise.all(left.map((cluster) => plane.ledger.removePlacement(cluster, key, removedRev)));
  const taken = await closeIntents(plane, held);
  if (taken.length > 0) await redoTakenWrite(plane, key, taken, options.redone ?? 0);
  return { result: outcome.result, record: written, etag: outcome.etag, previous };
}

const intentFor = (key: string, rev: number, clusters: string[]): Array<Omit<WriteIntent, 'id' | 'openedAt'>> =>
  clusters.length > 0 ? [{ placements: [{ key, rev, clusters: unique(clusters) }] }] : [];

/** A write that decided to keep the binding after attempts wrote rows: those rows are settled now, or left to the repair. */
async function settleKept(plane: ControlPlane, key: string, rev: number, clusters: string[], held: HeldIntent[]): Promise<void> {
  if (held.length === 0) held.push(...(await openIntents(plane, intentFor(key, rev, clusters))));
  const unsettled = await settlePlacements(plane, [{ key, clusters }], new Set(held.map((h) => h.intent.id)));
  if (unsettled.size === 0) await closeIntents(plane, held);
}

/**
 * A repair took this write's intent over while the write ran (it outlived the grace): the repair may have
 * settled the rows against the binding before the write landed. So the write is done again: the stored
 * binding is written unchanged, with every row it implies, under an intent of its own, and rows of the
 * clusters the taken intent named that it does not place are removed. The binding's ETag moves, so a writer
 * that read it before waits its turn behind this one.
 */
async function redoTakenWrite(plane: ControlPlane, key: string, taken: HeldIntent[], redone: number): Promise<void> {
  const clusters = unique(taken.flatMap(({ intent }) => (intent.placements ?? []).filter((w) => w.key === key).flatMap((w) => w.clusters)));
  plane.log.warn('a binding write outlived its intent: written again with every placement row', { binding: key, clusters, redone });
  if (redone >= 2) return;
  await writeBinding<null>(plane, key, (current) => (current ? write(current, null) : keep(null)), { reindex: true, touched: clusters, redone: redone + 1 });
}

/** `redoTakenWrite` for a batch's bindings whose intents a repair took over: each binding in `written` is written again. */
export async function redoTakenWrites(plane: ControlPlane, taken: HeldIntent[], written: ReadonlySet<string>): Promise<void> {
  const keys = unique(taken.flatMap(({ intent }) => (intent.placements ?? []).map((w) => w.key))).filter((key) => written.has(key));
  await mapConcurrent(keys, SETTLE_CONCURRENCY, (key) => redoTakenWrite(plane, key, taken, 0));
}

/** Rows to settle: a binding's rows on these clusters. */
export interface SettleTarget {
  key: string;
  clusters: string[];
}

/**
 * Makes the placement rows of each target agree with the stored binding: a row is removed where the binding
 * is gone or is not placed on its cluster, and rewritten where it says something else (a version that never
 * landed), each at the ETag read. Rows are read first and the journal after: the writer of a row read here
 * opened its intent before writing it, so a writer still running is listed, and its binding's rows are left
 * to it. Never creates a row. Returns the keys not settled (another writer's intent names them, or a row
 * changed under this pass): they wait for a later pass.
 */
export async function settlePlacements(plane: ControlPlane, targets: SettleTarget[], own: ReadonlySet<string>): Promise<Set<string>> {
  const journal = journalOf(plane);
  const unsettled = new Set<string>();
  if (!journal || targets.length === 0) return unsettled;
  const reads = targets.flatMap(({ key, clusters }) => unique(clusters).map((cluster) => ({ key, cluster })));
  const rows = await mapConcurrent(reads, SETTLE_CONCURRENCY, ({ key, cluster }) => journal.getPlacement(cluster, key));
  const busy = new Set(
    (await journal.listIntents()).filter(({ intent }) => !own.has(intent.id)).flatMap(({ intent }) => (intent.placements ?? []).map((w) => w.key)),
  );
  const keys = unique(targets.map((t) => t.key)).filter((key) => {
    if (busy.has(key)) unsettled.add(key);
    return !busy.has(key);
  });
  const bindings = new Map(await mapConcurrent(keys, SETTLE_CONCURRENCY, async (key) => [key, await plane.bindings.get(key)] as const));
  await mapConcurrent(reads, SETTLE_CONCURRENCY, async ({ key, cluster }, i) => {
    const row: VersionedPlacement | undefined = rows[i];
    if (!row || !bindings.has(key)) return;
    const binding = bindings.get(key);
    const want = binding && placementsOf(binding.value).find((p) => p.cluster === cluster);
    let done = true;
    if (!want) done = await journal.deletePlacement(cluster, key, row.etag);
    else if (row.row.rev > want.rev || projection(row.row) !== projection(want)) done = await journal.replacePlacement(want, row.etag);
    if (!done) unsettled.add(key);
  });
  return unsettled;
}

/**
 * The repair of binding writes whose writer died (or failed) between its steps: the stale intents are
 * claimed, the rows they name settled against the stored bindings, and the intents closed. An intent whose
 * bindings another writer is busy with stays open (claimed) for a later pass.
 */
export async function repairPlacementWrites(plane: ControlPlane, stale: VersionedIntent[]): Promise<{ settled: number; waiting: number }> {
  const journal = journalOf(plane);
  const claimed = await claimIntents(
    plane,
    stale.filter(({ intent }) => intent.placements),
  );
  if (!journal || claimed.length === 0) return { settled: 0, waiting: 0 };
  const clustersOf = new Map<string, Set<string>>();
  for (const { intent } of claimed) {
    for (const w of intent.placements ?? []) {
      const set = clustersOf.get(w.key) ?? new Set<string>();
      for (const cluster of w.clusters) set.add(cluster);
      clustersOf.set(w.key, set);
    }
  }
  const targets = [...clustersOf].map(([key, clusters]) => ({ key, clusters: [...clusters] }));
  const unsettled = await settlePlacements(plane, targets, new Set(claimed.map(({ intent }) => intent.id)));
  const done = claimed.filter(({ intent }) => !(intent.placements ?? []).some((w) => unsettled.has(w.key)));
  await journal.closeIntents(done.map(({ intent, etag }) => ({ id: intent.id, etag })));
  return { settled: targets.length - unsettled.size, waiting: unsettled.size };
}

/**
 * A cluster's placement and ledger rows, as `listClusterRows`, where a row an open intent names (a binding
 * write in flight, or one whose host died between the rows and the binding) counts only if the stored
 * binding is placed there, and then as the binding says: no phantom binding is planned, drained or shown,
 * and a placement whose binding landed is never missed. The journal is read after the rows (a writer opens
 * its intent before its rows); it costs one small query, and one binding read per row in doubt.
 */
export async function listClusterPlacements(plane: ControlPlane, cluster: string): Promise<{ placements: PlacementFacts[]; evictions: VersionedEviction[] }> {
  const rows = await plane.ledger.listClusterRows(cluster);
  const journal = journalOf(plane);
  if (!journal || rows.placements.length === 0) return rows;
  const doubtful = new Set(
    (await journal.listIntents()).flatMap(({ intent }) => (intent.placements ?? []).filter((w) => w.clusters.includes(cluster)).map((w) => w.key)),
  );
  const keys = unique(rows.placements.map(bindingKey)).filter((key) => doubtful.has(key));
  if (keys.length === 0) return rows;
  const bindings = new Map(await mapConcurrent(keys, SETTLE_CONCURRENCY, async (key) => [key, await plane.bindings.get(key)] as const));
  const placements = rows.placements.flatMap((row) => {
    const key = bindingKey(row);
    if (!doubtful.has(key)) return [row];
    const binding = bindings.get(key);
    const placed = binding && placementsOf(binding.value).find((p) => p.cluster === cluster);
    return placed ? [placed] : [];
  });
  return { placements, evictions: rows.evictions };
}

/**
 * For writers of many bindings at once (a bulk apply), the same index rules as `writeBinding`: the rows of
 * `next` that are new or changed since `previous`, to write before the binding.
 */
export function placementsToWrite(previous: BindingRecord | undefined, next: BindingRecord): PlacementFacts[] {
  const before = new Map((previous ? placementsOf(previous) : []).map((row) => [row.cluster, projection(row)]));
  return placementsOf(next).filter((row) => before.get(row.cluster) !== projection(row));
}

/** The clusters `previous` was placed on and `next` is not: their rows go after the binding's write, as `writeBinding` removes them. */
export function clustersLeft(previous: BindingRecord | undefined, next: BindingRecord): string[] {
  const after = new Set((next.spec.clusters ?? []).map((c) => c.name));
  return (previous?.spec.clusters ?? []).map((c) => c.name).filter((name) => !after.has(name));
}
