import { distinctBatches, mapConcurrent } from '../concurrency';
import { bindingKey, PlacementFacts } from '../failover/bindingModel';
import type { PropagationCandidate } from '../failover/propagation';
import type { Mutation } from '../store/optimistic';
import { BatchDocumentStore, canWriteMany, EventRecord, Versioned } from '../store/ports';
import type { BindingRecord } from '../store/records';
import {
  appliedBinding,
  appliedEvent,
  applyBinding,
  applyDerivedBinding,
  BindingInput,
  derivedBinding,
  DerivedBindingInput,
  derivedEvent,
  governedBinding,
  needsScheduling,
  refOf,
} from './bindings';
import { BINDINGS_PER_SCHEDULER_MESSAGE, type ControlPlane } from './ports';
import {
  closeIntents,
  clustersLeft,
  HeldIntent,
  openIntents,
  placementIntents,
  placementsOf,
  placementsToWrite,
  redoTakenWrites,
  renewIntents,
} from './state/bindingWrites';
import type { ApplyAction } from './state/derivation';
import { fleetCounts, loadPropagationPolicies } from './state/reads';

/** Bindings applied together: what is read and written at once (and held in memory) is at most this many. */
const BATCH_SIZE = 500;
/** Point reads in flight at once (one per binding: never a listing of every stored binding). */
const READ_CONCURRENCY = 32;
/** Queue messages and placement removals in flight at once. */
const SEND_CONCURRENCY = 16;
/** Events per `events.append` (a binding's event goes to one of a few buckets: a transaction per bucket). */
const EVENTS_PER_APPEND = 500;
/** Once more than this share of a created batch was found stored, the request's later batches read first. */
export const STORED_SHARE_TO_READ = 0.1;

interface PlannedWrite {
  index: number;
  key: string;
  current?: Versioned<BindingRecord>;
  next: BindingRecord;
  action: ApplyAction;
  event: EventRecord;
}

/**
 * One binding of a batch: its key, what applying it makes of its stored version (the policies as the batch
 * loaded them), its event, and how it is applied alone when a batch lost a race for it.
 */
interface BatchedBinding {
  key: string;
  decide(current: BindingRecord | undefined, policies: PropagationCandidate[], now: Date): Mutation<BindingRecord, ApplyAction>;
  event(record: BindingRecord, action: ApplyAction): EventRecord;
  /** `touched`: clusters the batch wrote this binding's rows on for a version that did not land (see `writeBinding`). */
  alone(touched: string[]): Promise<ApplyAction>;
}

/**
 * A request's consecutive ResourceBindings and ClusterResourceBindings, applied as `applyBinding` applies
 * each (same decision, results, events, placement rows, scheduler and taint-manager messages), in a few
 * requests per hundred bindings: one point read each, the bindings written in table transactions, their
 * placement rows and events in batches, one fleet-summary read for the faulty clusters instead of one
 * cluster read per placement. A binding someone else wrote between the read and the write is applied
 * again alone, from a fresh read. Results in the order given.
 */
export function applyBindings(plane: ControlPlane, inputs: BindingInput[]): Promise<ApplyAction[]> {
  return applyBatched(
    plane,
    inputs.map((input) => ({
      key: bindingKey(refOf(input)),
      decide: (current, policies, now) => appliedBinding(input, governedBinding(input, policies), current, now),
      event: (record, action) => appliedEvent(plane, record, action),
      alone: (touched) => applyBinding(plane, input, { touched }),
    })),
  );
}

/**
 * The bindings a request's resource templates derive, applied together as `applyDerivedBinding` applies
 * each: the same decision, with `policies` (those the templates' claims were ranked under). Results in
 * the order given.
 */
export function applyDerivedBindings(
  plane: ControlPlane,
  inputs: DerivedBindingInput[],
  policies: PropagationCandidate[],
  options: BatchOptions = {},
): Promise<ApplyAction[]> {
  return applyBatched(
    plane,
    inputs.map((input) => ({
      key: bindingKey(input.ref),
      decide: (current, _loaded, now) => derivedBinding(input, policies, current, now),
      event: (record, action) => derivedEvent(plane, record, action),
      alone: (touched) => applyDerivedBinding(plane, input, policies, { touched }),
    })),
    options,
  );
}

interface BatchOptions {
  /** The bindings are expected to be there already (a re-derivation): each batch reads first. */
  stored?: boolean;
  /**
   * The bindings as a listing just read them (by key; absent: not stored then), used instead of a point read
   * each. One changed since is a lost race like any other: applied alone, from a fresh read.
   */
  listed?: ReadonlyMap<string, Versioned<BindingRecord>>;
}

async function applyBatched(plane: ControlPlane, inputs: BatchedBinding[], options: BatchOptions = {}): Promise<ApplyAction[]> {
  const store = plane.bindings;
  if (!canWriteMany(store)) {
    const actions: ApplyAction[] = [];
    for (const input of inputs) actions.push(await input.alone([]));
    return actions;
  }
  const actions: ApplyAction[] = [];
  // A request starts out creating (no reads); once a batch finds many of its bindings stored, the rest read first.
  let creating = !options.stored;
  // Batches of distinct bindings (decode refuses a request naming one twice).
  for (const batch of distinctBatches(inputs, BATCH_SIZE, (input) => input.key)) {
    if (creating) {
      const { actions: applied, stored } = await createBatch(plane, store, batch);
      actions.push(...applied);
      if (stored > batch.length * STORED_SHARE_TO_READ) creating = false;
    } else actions.push(...(await applyBatch(plane, store, batch, options.listed)));
  }
  return actions;
}

/** A batch applied from a point read of each binding. */
async function applyBatch(
  plane: ControlPlane,
  store: BatchDocumentStore<BindingRecord>,
  inputs: BatchedBinding[],
  listed?: ReadonlyMap<string, Versioned<BindingRecord>>,
): Promise<ApplyAction[]> {
  const policies = await loadPropagationPolicies(plane);
  const keys = inputs.map((input) => input.key);
  const currents = listed ? keys.map((key) => listed.get(key)) : await mapConcurrent(keys, READ_CONCURRENCY, (key) => store.get(key));
  const now = plane.clock.now();
  const actions = new Array<ApplyAction>(inputs.length);
  const writes: PlannedWrite[] = [];
  inputs.forEach((input, index) => {
    const current = currents[index];
    // A copy: `appliedBinding` changes what it is given, and `current` is the version the writes compare with.
    const decision = input.decide(current ? structuredClone(current.value) : undefined, policies, now);
    if (decision.kind !== 'write') actions[index] = decision.result;
    else {
      const next = { ...decision.value, rev: (current?.value.rev ?? 0) + 1 };
      writes.push({ index, key: keys[index], current, next, action: decision.result, event: input.event(next, decision.result) });
    }
  });
  if (writes.length === 0) return actions;

  // As writeBinding: the new versions' placement rows before the bindings, so the index never misses a
  // placement, named first in intents of the write journal (a host that dies before the bindings land
  // leaves them open: readers ask the bindings, and the repair settles the rows).
  const rowsOf = writes.map((w) => placementsToWrite(w.current?.value, w.next));
  const held = await openIntents(
    plane,
    placementIntents(
      writes
        .map((w, k) => ({
          key: w.key,
          rev: w.next.rev,
          clusters: [...new Set([...rowsOf[k].map((r) => r.cluster), ...clustersLeft(w.current?.value, w.next)])],
        }))
        .filter((w) => w.clusters.length > 0),
    ),
  );
  const rows = rowsOf.flat();
  if (rows.length > 0) await plane.ledger.upsertPlacements(rows);
  await renewIntents(plane, held);
  // Created ones must still be absent, replaced ones unchanged since the read (ETags).
  const etags = await store.writeMany(writes.map((w) => ({ id: w.key, value: w.next, etag: w.current?.etag })));
  const written = writes.filter((_, k) => etags[k] !== undefined);
  await afterWrites(plane, written, actions);

  // Lost a race (created or changed by someone else since the read): applied alone, as writeBinding retries,
  // and the rows written here for the version that did not land are settled by that write.
  for (const [k, w] of writes.entries()) {
    if (etags[k] !== undefined) continue;
    actions[w.index] = await inputs[w.index].alone(rowsOf[k].map((r) => r.cluster));
  }
  await closeOrRedo(plane, held, written);
  return actions;
}

/** Closes a batch's intents; a binding it wrote whose intent a repair took over meanwhile is written again (see `redoTakenWrites`). */
async function closeOrRedo(plane: ControlPlane, held: HeldIntent[], written: PlannedWrite[]): Promise<void> {
  const taken = await closeIntents(plane, held);
  if (taken.length > 0) await redoTakenWrites(plane, taken, new Set(written.map((w) => w.key)));
}

/**
 * A batch applied as if none of its bindings were stored, without reading them: each one's placement rows
 * are created (never overwriting a stored row), then the bindings are created, in table transactions. A new
 * binding so costs no read, and the same writes as `applyBatch`. A binding found stored (its create, or one
 * of its rows' partition batch, refused) is applied by `applyBatch`, from a read. A row created here for
 * such a binding is on a cluster its applied version places (the applied clusters win over the stored
 * ones), and `applyBatch` rewrites it at the binding's revision when the stored version was not there. A
 * failure between the rows and the bindings leaves rows without a binding: the batch's journal intents,
 * open until its last step, make readers ask the bindings about them, and the repair removes them.
 */
async function createBatch(
  plane: ControlPlane,
  store: BatchDocumentStore<BindingRecord>,
  inputs: BatchedBinding[],
): Promise<{ actions: ApplyAction[]; stored: number }> {
  const policies = await loadPropagationPolicies(plane);
  const now = plane.clock.now();
  const actions = new Array<ApplyAction>(inputs.length);
  const attempts: Array<PlannedWrite & { rows: PlacementFacts[] }> = [];
  const retry = new Set<number>();
  inputs.forEach((input, index) => {
    const decision = input.decide(undefined, policies, now);
    // What is not a plain creation when absent is decided from a read.
    if (decision.kind !== 'write') retry.add(index);
    else {
      const next = { ...decision.value, rev: 1 };
      attempts.push({ index, key: input.key, next, action: decision.result, event: input.event(next, decision.result), rows: placementsOf(next) });
    }
  });
  const rows = attempts.flatMap((a) => a.rows);
  const held = await openIntents(
    plane,
    placementIntents(attempts.filter((a) => a.rows.length > 0).map((a) => ({ key: a.key, rev: a.next.rev, clusters: a.rows.map((r) => r.cluster) }))),
  );
  const created = rows.length > 0 ? await plane.ledger.createPlacements(rows) : [];
  let offset = 0;
  const creatable = attempts.filter((a) => {
    const allCreated = a.rows.every((_, k) => created[offset + k]);
    offset += a.rows.length;
    if (!allCreated) retry.add(a.index);
    return allCreated;
  });
  await renewIntents(plane, held);
  const etags = creatable.length > 0 ? await store.writeMany(creatable.map((a) => ({ id: a.key, value: a.next }))) : [];
  const written = creatable.filter((_, k) => etags[k] !== undefined);
  creatable.forEach((a, k) => etags[k] === undefined && retry.add(a.index));
  await afterWrites(plane, written, actions);
  if (retry.size > 0) {
    await renewIntents(plane, held);
    const again = [...retry].sort((a, b) => a - b);
    const applied = await applyBatch(
      plane,
      store,
      again.map((i) => inputs[i]),
    );
    again.forEach((i, k) => (actions[i] = applied[k]));
  }
  // Closed once the bindings retried from a read are applied too: until then, rows created here for them are in doubt.
  await closeOrRedo(plane, held, written);
  return { actions, stored: retry.size };
}

/** What follows a batch's binding writes, as `writeBinding` and `applyBinding` do it: left clusters' rows, events, messages. */
async function afterWrites(plane: ControlPlane, written: PlannedWrite[], actions: ApplyAction[]): Promise<void> {
  if (written.length === 0) return;
  for (const w of written) actions[w.index] = w.action;
  // The rows of clusters a binding left go after its write, unless a newer revision has rewritten them.
  const left = written.flatMap((w) => clustersLeft(w.current?.value, w.next).map((cluster) => ({ cluster, key: w.key, rev: w.next.rev })));
  await mapConcurrent(left, SEND_CONCURRENCY, ({ cluster, key, rev }) => plane.ledger.removePlacement(cluster, key, rev));
  await appendEvents(
    plane,
    written.map((w) => w.event),
  );
  await notifyFaultyClusters(
    plane,
    written.map((w) => w.next),
  );
  // The bindings to place, a few dozen to a message.
  const unplaced = written.filter((w) => needsScheduling(w.next)).map((w) => w.key);
  const messages: string[][] = [];
  for (let i = 0; i < unplaced.length; i += BINDINGS_PER_SCHEDULER_MESSAGE) messages.push(unplaced.slice(i, i + BINDINGS_PER_SCHEDULER_MESSAGE));
  await mapConcurrent(messages, SEND_CONCURRENCY, (bindings) => plane.scheduler.send(bindings.length === 1 ? { binding: bindings[0] } : { bindings }));
}

/** Events in appends of at most EVENTS_PER_APPEND (one transaction per bucket each). */
export async function appendEvents(plane: ControlPlane, events: EventRecord[]): Promise<void> {
  for (let i = 0; i < events.length; i += EVENTS_PER_APPEND) await plane.events.append(events.slice(i, i + EVENTS_PER_APPEND));
}

/**
 * Bindings placed on a cluster that is already faulty are planned now, not at the next resync: one message
 * per faulty cluster, whatever the number of bindings. The faulty set is the fleet summary, read fresh
 * after the placement rows were written: a cluster noted faulty after this read has its taint manager
 * message sent after that note, and that run reads these rows.
 */
async function notifyFaultyClusters(plane: ControlPlane, records: BindingRecord[]): Promise<void> {
  const placed = new Set(records.flatMap((record) => (record.spec.clusters ?? []).map((c) => c.name)));
  if (placed.size === 0) return;
  const { faulty } = await fleetCounts(plane, 0);
  await Promise.all(faulty.filter((name) => placed.has(name)).map((cluster) => plane.taintManager.send({ cluster, reason: 'binding-changed' })));
}
