import { activeBlocks, DEFAULT_BLOCK_SECONDS } from '../failover/applicationFailover';
import { SchedulableCluster, schedule } from '../failover/scheduler';
import { keep, write } from '../store/optimistic';
import type { EventRecord, Versioned } from '../store/ports';
import { annotate, ATTR, inSpan, TraceCarrier } from '../telemetry/tracing';
import { sweepBinding } from './gracefulEviction';
import type { ControlPlane } from './ports';
import type { BindingRecord, BindingStatus } from './records';
import { writeBinding } from './state/bindingWrites';
import { bindingEvent } from './state/events';
import { bindingsNeeding, fleetClusters } from './state/reads';

type Condition = NonNullable<BindingStatus['conditions']>[number];

function setCondition(status: BindingStatus, condition: Omit<Condition, 'lastTransitionTime'>, now: Date): void {
  const conditions = status.conditions ?? [];
  const previous = conditions.find((c) => c.type === condition.type);
  const next: Condition = {
    ...condition,
    lastTransitionTime: previous && previous.status === condition.status ? previous.lastTransitionTime : now.toISOString(),
  };
  status.conditions = [...conditions.filter((c) => c.type !== condition.type), next];
}

export type ScheduleOutcome = 'scheduled' | 'no-fit' | 'up-to-date' | 'absent';

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

export type PlacementDecision =
  { outcome: 'up-to-date' } | { outcome: 'no-fit'; message: string; event?: EventRecord } | { outcome: 'scheduled'; event: EventRecord };

/**
 * Places `record` (changed in place) on `clusters`: the scheduler's one rule, used by the scheduler and by the
 * eviction worker (which places a binding in the same write that takes it off a cluster). Success writes
 * spec.clusters, schedulerObservedGeneration and Scheduled=True; no fit keeps the placement and writes
 * Scheduled=False/NoClusterFit with why each cluster was rejected (its event only when that changed).
 */
export function placeRecord(record: BindingRecord, clusters: readonly SchedulableCluster[], now: Date): PlacementDecision {
  if (record.status.schedulerObservedGeneration === record.generation) return { outcome: 'up-to-date' };
  // Clusters this binding left for an application failure stay out until their block ends (seed 003).
  const history = activeBlocks(
    record.spec.activeEvictionHistory ?? [],
    record.spec.failover?.application?.blockPredecessorSeconds ?? DEFAULT_BLOCK_SECONDS,
    now,
  );
  if ((record.spec.activeEvictionHistory ?? []).length > 0) record.spec.activeEvictionHistory = history.keep;
  const result = schedule({
    replicas: record.spec.replicas ?? 0,
    placement: record.spec.placement,
    current: record.spec.clusters ?? [],
    clusters,
    blocked: history.blocked,
    gracefulEvictionTasks: record.spec.gracefulEvictionTasks,
  });
  if (!result.ok) {
    const before = JSON.stringify(record.status.conditions ?? []);
    setCondition(record.status, { type: 'Scheduled', status: 'False', reason: 'NoClusterFit', message: result.message }, now);
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
  setCondition(
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
  let outcome: ScheduleOutcome | 'stale-view' = 'absent';
  let event: EventRecord | undefined;
  const placed = await writeBinding<null>(
    plane,
    key,
    (current, now) => {
      event = undefined;
      if (!current) {
        outcome = 'absent';
        return keep(null);
      }
      const decision = placeRecord(current, clusters, now);
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
      return decision.outcome === 'no-fit' && !decision.event ? keep(null) : write(current, null);
    },
    current ? { current } : {},
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
