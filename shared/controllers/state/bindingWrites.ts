import { PlacementFacts, resourceKindOf } from '../../failover/bindingModel';
import { mutate, Mutation, write } from '../../store/optimistic';
import type { Versioned } from '../../store/ports';
import type { ControlPlane } from '../ports';
import type { BindingRecord } from '../records';

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

export interface BindingWriteOptions {
  /** Clusters whose placement rows the caller already removed (the eviction worker's commit). */
  placementsAlreadyRemoved?: string[];
  /** The version the caller just read, to save a read on the first attempt. */
  current?: Versioned<BindingRecord>;
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
 * rewritten them (ETag-checked). `change` gets a copy it may change, and must be a function of it.
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
  const outcome = await mutate<BindingRecord, R>(
    plane.bindings,
    key,
    async (current: Versioned<BindingRecord> | undefined) => {
      const now = plane.clock.now();
      previous = current?.value;
      const decision = change(current ? structuredClone(current.value) : undefined, now);
      written = undefined;
      kind = decision.kind;
      if (decision.kind !== 'write') return decision;
      const next = { ...decision.value, rev: (current?.value.rev ?? 0) + 1 };
      const before = new Map((current ? placementsOf(current.value) : []).map((row) => [row.cluster, projection(row)]));
      const changed = placementsOf(next).filter((row) => before.get(row.cluster) !== projection(row));
      if (changed.length > 0) await plane.ledger.upsertPlacements(changed);
      written = next;
      return write(next, decision.result);
    },
    options.current,
  );
  const after = new Set((written?.spec.clusters ?? []).map((c) => c.name));
  const skip = new Set(options.placementsAlreadyRemoved ?? []);
  const removedRev = written?.rev ?? (previous?.rev ?? 0) + 1;
  const left = (previous?.spec.clusters ?? []).map((c) => c.name).filter((name) => !after.has(name) && !skip.has(name));
  if (kind !== 'keep') await Promise.all(left.map((cluster) => plane.ledger.removePlacement(cluster, key, removedRev)));
  return { result: outcome.result, record: written, etag: outcome.etag, previous };
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
