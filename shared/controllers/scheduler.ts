import { PlaneState } from '../cache';
import type { Clock } from '../clock';
import { mapConcurrent } from '../concurrency';
import { activeBlocks, DEFAULT_BLOCK_SECONDS } from '../failover/applicationFailover';
import { setCondition } from '../failover/conditions';
import { SchedulableCluster, schedule, ScheduleInput, spreadCandidates } from '../failover/scheduler';
import { keep, write } from '../store/optimistic';
import type { EventRecord, Versioned } from '../store/ports';
import type { BindingRecord, BindingStatus } from '../store/records';
import { annotate, ATTR, inSpan, TraceCarrier } from '../telemetry/tracing';
import { sweepBinding } from './gracefulEviction';
import type { ControlPlane } from './ports';
import { writeBinding } from './state/bindingWrites';
import { bindingEvent } from './state/events';
import { bindingsNeeding, fleetClusters } from './state/reads';

type Condition = NonNullable<BindingStatus['conditions']>[number];

/** Sets the binding's condition in place (the write's working copy). */
export function setBindingCondition(status: BindingStatus, condition: Omit<Condition, 'lastTransitionTime'>, now: Date): void {
  status.conditions = setCondition(status.conditions, condition, now);
}

export type ScheduleOutcome = 'scheduled' | 'no-fit' | 'up-to-date' | 'absent';

// ------------------------------------------------------------------------------ placements per cluster

/** A cluster's count read from the placement index is used this long (with this process's placements since). */
export const PLACEMENT_COUNT_MAX_AGE_MS = 5000;
/** Clusters' placement listings in flight at once. */
const READ_CONCURRENCY = 16;

/**
 * Bindings placed on each cluster, for the spread rule (failover/scheduler.ts), kept by this process: counted
 * from the placement index (one listing per cluster, only for the clusters a decision compares), kept
 * PLACEMENT_COUNT_MAX_AGE_MS, plus the placements this process decided since. A decision counts from the
 * moment it is made, before its write lands, so evictions placed one after another, or side by side from one
 * queue message, spread among themselves; another host's placements count once the index is read again.
 * Order is by a sequence number rather than the clock: a placement that landed before a count was asked for
 * is in that count.
 */
class PlacementTally {
  constructor(private readonly clock: Clock) {}
  private sequence = 0;
  private readonly counted = new Map<string, { count: number; readAt: number; sequence: number }>();
  private readonly reading = new Map<string, Promise<void>>();
  /** By binding key: the clusters its placement adds and leaves, and when its write landed (undefined: in flight). */
  private readonly decided = new Map<string, { added: string[]; left: string[]; landed?: { sequence: number; at: number } }>();

  async read(plane: ControlPlane, names: readonly string[]): Promise<void> {
    const now = this.clock.now().getTime();
    const stale = names.filter((name) => {
      const entry = this.counted.get(name);
      return !entry || now - entry.readAt >= PLACEMENT_COUNT_MAX_AGE_MS;
    });
    await mapConcurrent(stale, READ_CONCURRENCY, (name) => this.readOne(plane, name));
  }

  private readOne(plane: ControlPlane, name: string): Promise<void> {
    const running = this.reading.get(name);
    if (running) return running;
    const sequence = ++this.sequence;
    const readAt = this.clock.now().getTime();
    const done = plane.ledger
      .listPlacements(name)
      .then((rows) => {
        this.counted.set(name, { count: rows.length, readAt, sequence });
      })
      .finally(() => this.reading.delete(name));
    this.reading.set(name, done);
    return done;
  }

  counts(names: readonly string[]): Map<string, number> {
    this.prune();
    const counts = new Map<string, number>();
    for (const name of names) {
      const entry = this.counted.get(name);
      let count = entry?.count ?? 0;
      for (const { added, left, landed } of this.decided.values()) {
        if (landed && entry && landed.sequence < entry.sequence) continue;
        if (added.includes(name)) count++;
        if (left.includes(name)) count--;
      }
      counts.set(name, Math.max(0, count));
    }
    return counts;
  }

  note(binding: string, added: string[], left: string[]): void {
    if (added.length > 0 || left.length > 0) this.decided.set(binding, { added, left });
  }

  forget(binding: string): void {
    this.decided.delete(binding);
  }

  settle(binding: string, landed: boolean): void {
    const entry = this.decided.get(binding);
    if (!entry) return;
    if (landed) entry.landed = { sequence: ++this.sequence, at: this.clock.now().getTime() };
    else this.decided.delete(binding);
  }

  /**
   * A landed placement is dropped once the counts of its clusters were read after it, or once it is older
   * than a count may be (any count used from then on is read after it).
   */
  private prune(): void {
    const now = this.clock.now().getTime();
    for (const [binding, { added, left, landed }] of this.decided) {
      if (!landed) continue;
      const readSince = [...added, ...left].every((name) => (this.counted.get(name)?.sequence ?? 0) > landed.sequence);
      if (readSince || now - landed.at > PLACEMENT_COUNT_MAX_AGE_MS) this.decided.delete(binding);
    }
  }
}

const tallies = new PlaneState<PlacementTally>('placementTally');
const tallyOf = (plane: ControlPlane): PlacementTally => {
  let tally = tallies.get(plane);
  if (!tally) tallies.set(plane, (tally = new PlacementTally(plane.clock)));
  return tally;
};

/** Reads the placement counts of these clusters that this process has not read lately (before a placement's write). */
export function readPlacementCounts(plane: ControlPlane, clusters: readonly string[]): Promise<void> {
  return clusters.length > 0 ? tallyOf(plane).read(plane, clusters) : Promise.resolve();
}

/** Bindings placed on each of these clusters as this process knows now (synchronous: for a write's decision). */
export function placementCounts(plane: ControlPlane, clusters: readonly string[]): Map<string, number> {
  return tallyOf(plane).counts(clusters);
}

/** A placement decided in a write's attempt: counted at once (replacing the binding's earlier attempt). */
export function notePlacement(plane: ControlPlane, binding: string, before: readonly string[], after: readonly string[]): void {
  tallyOf(plane).note(
    binding,
    after.filter((name) => !before.includes(name)),
    before.filter((name) => !after.includes(name)),
  );
}

/** A write attempt that places nothing: the binding's earlier attempt no longer counts. */
export function forgetPlacement(plane: ControlPlane, binding: string): void {
  tallyOf(plane).forget(binding);
}

/** After the write: its placement landed (counted until the index shows it), or it did not (forgotten). */
export function settlePlacement(plane: ControlPlane, binding: string, landed: boolean): void {
  tallyOf(plane).settle(binding, landed);
}

/**
 * Places a binding that needs it (its scheduled generation is behind: new without clusters, or a cluster
 * lost to eviction). Success writes spec.clusters, schedulerObservedGeneration and Scheduled=True; no fit
 * keeps the placement and writes Scheduled=False/NoClusterFit with why each cluster was rejected.
 */
export async function scheduleBinding(plane: ControlPlane, key: string, trace?: TraceCarrier, current?: Versioned<BindingRecord>): Promise<ScheduleOutcome> {
  // Karmada mode: Karmada's scheduler places bindings; ours does not run.
  if (plane.karmada) return Promise.resolve('up-to-date');
  return inSpan('scheduler.place', { attributes: { [ATTR.binding]: key }, ...(trace ? { parent: trace } : {}) }, async () => {
    const outcome = await place(plane, key, current);
    annotate({ [ATTR.outcome]: outcome });
    return outcome;
  });
}

/** Bindings placed at once by one scheduler message. */
const PLACE_CONCURRENCY = 4;

/**
 * The bindings of one scheduler message, each placed as `scheduleBinding` places it. Each is idempotent: a
 * message delivered again after a failure part-way finds the ones already placed up to date.
 */
export async function scheduleBindings(plane: ControlPlane, keys: readonly string[]): Promise<void> {
  await mapConcurrent(keys, PLACE_CONCURRENCY, (key) => scheduleBinding(plane, key));
}

export type PlacementDecision =
  { outcome: 'up-to-date' } | { outcome: 'no-fit'; message: string; event?: EventRecord } | { outcome: 'scheduled'; event: EventRecord };

/** What schedule() is asked for `record` (pure); the eviction history's blocks as of `now`. */
function scheduleInputOf(
  record: BindingRecord,
  clusters: readonly SchedulableCluster[],
  now: Date,
): ScheduleInput & { keepHistory: BindingRecord['spec']['activeEvictionHistory'] } {
  // Clusters this binding left for an application failure stay out until their block ends (blockPredecessorSeconds).
  const history = activeBlocks(
    record.spec.activeEvictionHistory ?? [],
    record.spec.failover?.application?.blockPredecessorSeconds ?? DEFAULT_BLOCK_SECONDS,
    now,
  );
  return {
    replicas: record.spec.replicas ?? 0,
    placement: record.spec.placement,
    current: record.spec.clusters ?? [],
    clusters,
    blocked: history.blocked,
    gracefulEvictionTasks: record.spec.gracefulEvictionTasks,
    keepHistory: history.keep,
  };
}

/**
 * The clusters whose placement counts the scheduler compares to place `record` (none when it is up to date,
 * or takes every candidate): the ones worth counting before its write (readPlacementCounts).
 */
export function placementCandidates(record: BindingRecord, clusters: readonly SchedulableCluster[], now: Date): string[] {
  if (record.status.schedulerObservedGeneration === record.generation) return [];
  return spreadCandidates(scheduleInputOf(record, clusters, now));
}

/**
 * Places `record` (changed in place) on `clusters`: the scheduler's one rule, used by the scheduler and by the
 * eviction worker (which places a binding in the same write that takes it off a cluster). Success writes
 * spec.clusters, schedulerObservedGeneration and Scheduled=True; no fit keeps the placement and writes
 * Scheduled=False/NoClusterFit with why each cluster was rejected (its event only when that changed).
 * `placementCounts`: bindings placed on each cluster now (the spread rule in failover/scheduler.ts).
 */
export function placeRecord(
  record: BindingRecord,
  clusters: readonly SchedulableCluster[],
  now: Date,
  placementCounts?: ReadonlyMap<string, number>,
): PlacementDecision {
  if (record.status.schedulerObservedGeneration === record.generation) return { outcome: 'up-to-date' };
  const { keepHistory, ...input } = scheduleInputOf(record, clusters, now);
  if ((record.spec.activeEvictionHistory ?? []).length > 0) record.spec.activeEvictionHistory = keepHistory;
  const result = schedule({ ...input, ...(placementCounts ? { placementCounts } : {}) });
  if (!result.ok) {
    const before = JSON.stringify(record.status.conditions ?? []);
    setBindingCondition(record.status, { type: 'Scheduled', status: 'False', reason: 'NoClusterFit', message: result.message }, now);
    if (JSON.stringify(record.status.conditions) === before) return { outcome: 'no-fit', message: result.message };
    return {
      outcome: 'no-fit',
      message: result.message,
      event: bindingEvent(record, now, 'NoClusterFit', result.message, 'Warning', { rejected: result.rejected }),
    };
  }
  const changed =
    JSON.stringify(result.clusters) !==
    JSON.stringify((record.spec.clusters ?? []).map((c) => ({ name: c.name, replicas: c.replicas ?? record.spec.replicas ?? 0 })));
  if (changed) {
    record.spec.clusters = result.clusters;
    record.generation += 1;
  }
  record.status.schedulerObservedGeneration = record.generation;
  setBindingCondition(
    record.status,
    { type: 'Scheduled', status: 'True', reason: 'Success', message: `placed on ${result.clusters.map((c) => `${c.name} (${c.replicas})`).join(', ')}` },
    now,
  );
  return { outcome: 'scheduled', event: bindingEvent(record, now, 'Scheduled', `placed on ${result.clusters.map((c) => c.name).join(', ')}`) };
}

/** `current`: the version the caller just wrote, to save a read (a stale one costs one retry). */
async function place(plane: ControlPlane, key: string, current?: Versioned<BindingRecord>, fresh = false): Promise<ScheduleOutcome> {
  // The fleet view this process keeps for a second (the worker's pre-check just read it): a placement
  // costs no cluster listing. A no-fit on that view is decided again on a fresh one, so a cluster just
  // registered or recovered is never missed until the next resync.
  const clusters = await fleetClusters(plane, fresh ? 0 : undefined);
  // The binding is read here rather than by the write (which takes this version): its candidates' placement
  // counts are read before the write's decision, which must not wait.
  const read = current ?? (await plane.bindings.get(key));
  if (read) await readPlacementCounts(plane, placementCandidates(read.value, clusters, plane.clock.now()));
  const names = clusters.map((c) => c.name);
  let outcome: ScheduleOutcome | 'stale-view' = 'absent';
  let event: EventRecord | undefined;
  const placed = await writeBinding<null>(
    plane,
    key,
    (current, now) => {
      event = undefined;
      forgetPlacement(plane, key);
      if (!current) {
        outcome = 'absent';
        return keep(null);
      }
      const before = (current.spec.clusters ?? []).map((c) => c.name);
      const decision = placeRecord(current, clusters, now, placementCounts(plane, names));
      if (decision.outcome === 'up-to-date') {
        outcome = 'up-to-date';
        return keep(null);
      }
      if (decision.outcome === 'no-fit' && !fresh) {
        outcome = 'stale-view';
        return keep(null);
      }
      outcome = decision.outcome;
      event = decision.event;
      if (decision.outcome === 'scheduled')
        notePlacement(
          plane,
          key,
          before,
          (current.spec.clusters ?? []).map((c) => c.name),
        );
      return decision.outcome === 'no-fit' && !decision.event ? keep(null) : write(current, null);
    },
    read ? { current: read } : {},
  ).then(
    (done) => {
      // The placement this write decided counts as landed only if the write did.
      settlePlacement(plane, key, done.record !== undefined && (outcome as string) === 'scheduled');
      return done;
    },
    (error: unknown) => {
      settlePlacement(plane, key, false);
      throw error;
    },
  );
  if ((outcome as string) === 'stale-view') return place(plane, key, current, true);
  if (event) await plane.events.append([event]);
  if ((outcome as ScheduleOutcome) === 'scheduled')
    await sweepBinding(plane, key, placed.record && placed.etag ? { value: placed.record, etag: placed.etag } : undefined);
  return outcome;
}

/** The scheduler's resync: every binding whose scheduled generation is behind, in its failure's trace. */
export async function scheduleAll(plane: ControlPlane): Promise<number> {
  if (plane.karmada) return 0;
  let scheduled = 0;
  for (const entry of await bindingsNeeding(plane, 'needsScheduling')) {
    if (
      entry.value.status.schedulerObservedGeneration !== entry.value.generation &&
      (await scheduleBinding(plane, entry.id, { traceparent: entry.value.traceparent })) === 'scheduled'
    )
      scheduled++;
  }
  return scheduled;
}
