import { randomUUID } from 'node:crypto';
import type { ClusterResourceBindingInput, ResourceBindingInput } from '../api/resources';
import { BindingRef, bindingKey, PlacementFacts, resourceKindOf } from '../failover/bindingModel';
import { isFaultyTaint } from '../failover/evictionDecision';
import { mutate, keep, remove, write, Mutation } from '../store/optimistic';
import type { Versioned } from '../store/ports';
import type { ApplyAction } from './clusters';
import type { ControlPlane } from './deps';
import type { BindingRecord } from './records';
import { governedSpec, loadPropagationPolicies } from './propagationPolicies';

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

/**
 * The one way a binding changes. The placement index is kept in step with spec.clusters under
 * concurrency: rows for the new version are written before the binding (so the index never misses a
 * placement), and rows of clusters the binding left are removed after, only if no newer revision has
 * rewritten them (ETag-checked).
 */
export async function writeBinding<R>(
  plane: ControlPlane,
  key: string,
  change: (current: BindingRecord | undefined, now: Date) => Mutation<BindingRecord, R>,
  options: BindingWriteOptions = {},
): Promise<{ result: R; record?: BindingRecord; etag?: string; previous?: BindingRecord }> {
  let written: BindingRecord | undefined;
  let previous: BindingRecord | undefined;
  let kind: Mutation<BindingRecord, R>['kind'] = 'keep';
  const outcome = await mutate<BindingRecord, R>(plane.bindings, key, async (current: Versioned<BindingRecord> | undefined) => {
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
  }, options.current);
  const after = new Set((written?.spec.clusters ?? []).map((c) => c.name));
  const skip = new Set(options.placementsAlreadyRemoved ?? []);
  const removedRev = written?.rev ?? (previous?.rev ?? 0) + 1;
  const left = (previous?.spec.clusters ?? []).map((c) => c.name).filter((name) => !after.has(name) && !skip.has(name));
  if (kind !== 'keep') await Promise.all(left.map((cluster) => plane.ledger.removePlacement(cluster, key, removedRev)));
  return { result: outcome.result, record: written, etag: outcome.etag, previous };
}

type BindingInput = ResourceBindingInput | ClusterResourceBindingInput;

const userView = (record: BindingRecord) => JSON.stringify({ labels: record.labels, annotations: record.annotations, spec: record.spec, inheritedFrom: record.inheritedFrom });

export function refOf(input: BindingInput): BindingRef {
  return input.kind === 'ResourceBinding'
    ? { kind: 'ResourceBinding', namespace: input.metadata.namespace, name: input.metadata.name }
    : { kind: 'ClusterResourceBinding', name: input.metadata.name };
}

/** Apply a ResourceBinding or ClusterResourceBinding; spec replaces what was there, status is kept. */
export async function applyBinding(plane: ControlPlane, input: BindingInput): Promise<ApplyAction> {
  const ref = refOf(input);
  const key = bindingKey(ref);
  // The governing propagation policy fills in the placement and failover the binding leaves out.
  const { activeEvictionHistory: _ignored, ...applied } = input.spec;
  const governed = governedSpec({ namespace: ref.namespace, labels: input.metadata.labels ?? {} }, applied, await loadPropagationPolicies(plane));
  const { result, record } = await writeBinding<ApplyAction>(plane, key, (current, now) => {
    const next: BindingRecord = current ?? {
      ...ref,
      uid: randomUUID(),
      createdAt: now.toISOString(),
      generation: 1,
      rev: 0,
      labels: {},
      annotations: {},
      spec: input.spec,
      status: {},
    };
    next.labels = input.metadata.labels ?? {};
    next.annotations = input.metadata.annotations ?? {};
    // activeEvictionHistory is the control plane's record (seed 003: populated by the system): kept.
    next.spec = current?.spec.activeEvictionHistory?.length ? { ...governed.spec, activeEvictionHistory: current.spec.activeEvictionHistory } : governed.spec;
    if (governed.inheritedFrom) next.inheritedFrom = governed.inheritedFrom;
    else delete next.inheritedFrom;
    if (current && userView(current) === userView(next)) return keep('unchanged');
    if (current) next.generation += 1;
    // Clusters given in the applied spec are the placement (as a person or another scheduler decided it);
    // a binding applied without clusters is placed by the scheduler.
    if ((input.spec.clusters ?? []).length > 0) next.status = { ...next.status, schedulerObservedGeneration: next.generation };
    return write(next, current ? 'configured' : 'created');
  });
  if (result !== 'unchanged' && record) {
    await plane.events.append([{ time: plane.clock.now().toISOString(), kind: record.kind, name: displayName(record), type: 'Normal', reason: result === 'created' ? 'Created' : 'Configured', message: `binding ${result}` }]);
    await notifyFaultyClusters(plane, record);
    if (record.status.schedulerObservedGeneration !== record.generation) await plane.scheduler.send({ binding: key });
  }
  return result;
}

/** A binding placed on a cluster that is already faulty is planned now, not at the next resync. */
async function notifyFaultyClusters(plane: ControlPlane, record: BindingRecord): Promise<void> {
  const names = (record.spec.clusters ?? []).map((c) => c.name);
  const faulty = await Promise.all(names.map(async (name) => ((await plane.clusters.get(name))?.value.taints.some(isFaultyTaint) ? name : undefined)));
  await Promise.all(faulty.filter((n): n is string => !!n).map((cluster) => plane.taintManager.send({ cluster, reason: 'binding-changed' })));
}

export async function deleteBinding(plane: ControlPlane, ref: BindingRef): Promise<boolean> {
  const { result } = await writeBinding<boolean>(plane, bindingKey(ref), (current) => (current ? remove(true) : keep(false)));
  if (result) await plane.events.append([{ time: plane.clock.now().toISOString(), kind: ref.kind, name: displayName(ref), type: 'Normal', reason: 'Deleted', message: 'binding deleted' }]);
  return result;
}

export const displayName = (ref: BindingRef) => (ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name);
