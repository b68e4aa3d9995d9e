import { randomUUID } from 'node:crypto';
import type { BindingView } from '../api/contract/views';
import type { ClusterResourceBindingInput, ResourceBindingInput } from '../api/resources';
import { bindingKey, BindingRef } from '../failover/bindingModel';
import { isFaultyTaint } from '../failover/evictionDecision';
import { abandon } from '../failover/evictionRow';
import { POLICY_LABELS, type PropagationCandidate } from '../failover/propagation';
import { keep, Mutation, remove, write } from '../store/optimistic';
import type { EventRecord } from '../store/ports';
import type { BindingRecord } from '../store/records';
import type { ControlPlane } from './ports';
import { writeBinding } from './state/bindingWrites';
import { ApplyAction, governedSpec } from './state/derivation';
import { bindingEvent } from './state/events';
import { applyRowChange } from './state/evictionRows';
import { loadPropagationPolicies } from './state/reads';
import { bindingResource } from './views';

export type BindingInput = ResourceBindingInput | ClusterResourceBindingInput;

const userView = (record: BindingRecord) =>
  JSON.stringify({ labels: record.labels, annotations: record.annotations, spec: record.spec, inheritedFrom: record.inheritedFrom });

export function refOf(input: BindingInput): BindingRef {
  return input.kind === 'ResourceBinding'
    ? { kind: 'ResourceBinding', namespace: input.metadata.namespace, name: input.metadata.name }
    : { kind: 'ClusterResourceBinding', name: input.metadata.name };
}

/**
 * Apply a ResourceBinding or ClusterResourceBinding; spec replaces what was there, status is kept.
 * `touched`: clusters a batch wrote this binding's rows on for a version that did not land (see `writeBinding`).
 */
export async function applyBinding(plane: ControlPlane, input: BindingInput, options: { touched?: string[] } = {}): Promise<ApplyAction> {
  const key = bindingKey(refOf(input));
  const governed = governedBinding(input, await loadPropagationPolicies(plane));
  const { result, record } = await writeBinding<ApplyAction>(plane, key, (current, now) => appliedBinding(input, governed, current, now), options);
  await afterWrite(plane, key, record, result, appliedEvent);
  return result;
}

/** What follows a binding's write that created or changed it: its event, the faulty clusters it is placed on told, the scheduler asked. */
async function afterWrite(
  plane: ControlPlane,
  key: string,
  record: BindingRecord | undefined,
  result: ApplyAction,
  eventOf: (plane: ControlPlane, record: BindingRecord, result: ApplyAction) => EventRecord,
): Promise<void> {
  if (result === 'unchanged' || !record) return;
  await plane.events.append([eventOf(plane, record, result)]);
  await notifyFaultyClusters(plane, record);
  if (needsScheduling(record)) await plane.scheduler.send({ binding: key });
}

/** The spec an applied binding gets: the governing propagation policy fills in the placement and failover it leaves out. */
export function governedBinding(input: BindingInput, policies: PropagationCandidate[]): ReturnType<typeof governedSpec> {
  const { activeEvictionHistory: _ignored, ...applied } = input.spec;
  return governedSpec({ namespace: refOf(input).namespace, labels: input.metadata.labels ?? {} }, applied, policies);
}

/**
 * What applying `input` makes of the stored binding `current` (a copy it may change): the same decision
 * for one binding (`applyBinding`) and for a request's many (`applyBindings`).
 */
export function appliedBinding(
  input: BindingInput,
  governed: ReturnType<typeof governedSpec>,
  current: BindingRecord | undefined,
  now: Date,
): Mutation<BindingRecord, ApplyAction> {
  const ref = refOf(input);
  // Taken before `next` (the same object as `current` when it exists) is changed.
  const before = current ? userView(current) : undefined;
  const next: BindingRecord = current ?? newBindingRecord(ref, input.spec, now);
  next.labels = input.metadata.labels ?? {};
  next.annotations = input.metadata.annotations ?? {};
  // activeEvictionHistory is written by the control plane only (an applied value is ignored): the stored one is kept.
  next.spec = current?.spec.activeEvictionHistory?.length ? { ...governed.spec, activeEvictionHistory: current.spec.activeEvictionHistory } : governed.spec;
  if (governed.inheritedFrom) next.inheritedFrom = governed.inheritedFrom;
  else delete next.inheritedFrom;
  if (before === userView(next)) return keep('unchanged');
  if (current) next.generation += 1;
  // Clusters given in the applied spec are the placement (as a person or another scheduler decided it);
  // a binding applied without clusters is placed by the scheduler.
  if ((input.spec.clusters ?? []).length > 0) next.status = { ...next.status, schedulerObservedGeneration: next.generation };
  return write(next, current ? 'configured' : 'created');
}

/** A binding as first created: its own uid and generation 1, no labels yet, nothing placed. */
const newBindingRecord = (ref: BindingRef, spec: BindingRecord['spec'], now: Date): BindingRecord => ({
  ...ref,
  uid: randomUUID(),
  createdAt: now.toISOString(),
  generation: 1,
  rev: 0,
  labels: {},
  annotations: {},
  spec,
  status: {},
});

/** The event of an applied binding that was created or changed. */
export const appliedEvent = (plane: ControlPlane, record: BindingRecord, result: ApplyAction) =>
  bindingEvent(record, plane.clock.now(), result === 'created' ? 'Created' : 'Configured', `binding ${result}`);

/** A binding whose generation the scheduler has not placed yet (applied without clusters). */
export const needsScheduling = (record: BindingRecord) => record.status.schedulerObservedGeneration !== record.generation;

/** A binding placed on a cluster that is already faulty is planned now, not at the next resync. */
async function notifyFaultyClusters(plane: ControlPlane, record: BindingRecord): Promise<void> {
  const names = (record.spec.clusters ?? []).map((c) => c.name);
  const faulty = await Promise.all(names.map(async (name) => ((await plane.clusters.get(name))?.value.taints.some(isFaultyTaint) ? name : undefined)));
  await Promise.all(faulty.filter((n): n is string => !!n).map((cluster) => plane.taintManager.send({ cluster, reason: 'binding-changed' })));
}

/** Deletes a binding; its evictions still waiting end `abandoned` with the reason (a worker would find the binding gone). */
export async function deleteBinding(plane: ControlPlane, ref: BindingRef, why?: string): Promise<boolean> {
  const key = bindingKey(ref);
  const { result, previous } = await writeBinding<boolean>(plane, key, (current) => (current ? remove(true) : keep(false)));
  if (!result) return false;
  const now = plane.clock.now().toISOString();
  for (const cluster of (previous?.spec.clusters ?? []).map((c) => c.name)) {
    const row = await plane.ledger.getEviction(cluster, key);
    if (row && ['pending', 'blocked'].includes(row.record.state)) {
      await applyRowChange(plane, row.etag, abandon(row.record, why ?? 'the binding was deleted', now));
    }
  }
  await plane.events.append([bindingEvent(ref, plane.clock.now(), 'Deleted', why ? `binding deleted: ${why}` : 'binding deleted')]);
  return true;
}

/** ResourceBindings (all, or one namespace's) or ClusterResourceBindings, as the API shows them. */
export async function listBindings(plane: ControlPlane, kind: BindingRef['kind'], namespace?: string): Promise<BindingView[]> {
  // Keys are `rb:<namespace>:<name>` and `crb:<name>` (bindingKey): a prefix selects a kind or a namespace.
  const prefix = kind === 'ClusterResourceBinding' ? 'crb:' : namespace ? `rb:${namespace}:` : 'rb:';
  return (await plane.bindings.list()).filter((entry) => entry.id.startsWith(prefix)).map((entry) => bindingResource(entry.value, entry.etag));
}

export async function getBinding(plane: ControlPlane, ref: BindingRef): Promise<BindingView | undefined> {
  const entry = await plane.bindings.get(bindingKey(ref));
  return entry ? bindingResource(entry.value, entry.etag) : undefined;
}

/** What a resource template gives its derived binding (the rest comes from the claiming policy). */
export interface DerivedBindingInput {
  ref: BindingRef;
  labels: Record<string, string>;
  resource: BindingRecord['spec']['resource'];
  replicas?: number;
  /** From the claiming policy's PriorityClass (Karmada's detector sets it the same way). */
  schedulePriority?: BindingRecord['spec']['schedulePriority'];
}

/**
 * Creates or updates the binding Karmada's detector derives from a resource template: the template's
 * resource and replicas, the claiming policy's placement and failover (inherited, as for any binding
 * whose labels name a policy). What the control plane keeps on the binding (placement result,
 * graceful-eviction tasks, eviction history, status) is never touched. A new binding, or a change of
 * replicas or placement, goes to the scheduler.
 */
export async function applyDerivedBinding(
  plane: ControlPlane,
  input: DerivedBindingInput,
  policies?: PropagationCandidate[],
  options: { touched?: string[] } = {},
): Promise<ApplyAction> {
  const key = bindingKey(input.ref);
  const candidates = policies ?? (await loadPropagationPolicies(plane));
  const { result, record } = await writeBinding<ApplyAction>(plane, key, (current, now) => derivedBinding(input, candidates, current, now), options);
  await afterWrite(plane, key, record, result, derivedEvent);
  return result;
}

/**
 * What deriving `input` makes of the stored binding `current` (a copy it may change): the same decision
 * for one template (`applyDerivedBinding`) and for a request's many (`applyDerivedBindings`).
 */
export function derivedBinding(
  input: DerivedBindingInput,
  candidates: PropagationCandidate[],
  current: BindingRecord | undefined,
  now: Date,
): Mutation<BindingRecord, ApplyAction> {
  const own = {
    resource: input.resource,
    ...(input.replicas !== undefined ? { replicas: input.replicas } : {}),
    ...(input.schedulePriority ? { schedulePriority: input.schedulePriority } : {}),
  };
  const governed = governedSpec({ namespace: input.ref.namespace, labels: input.labels }, own, candidates);
  const before = current ? userView(current) : undefined;
  const next: BindingRecord = current ?? newBindingRecord(input.ref, governed.spec, now);
  const kept = {
    clusters: next.spec.clusters,
    gracefulEvictionTasks: next.spec.gracefulEvictionTasks,
    activeEvictionHistory: next.spec.activeEvictionHistory,
  };
  const reschedule =
    !current || current.spec.replicas !== governed.spec.replicas || JSON.stringify(current.spec.placement) !== JSON.stringify(governed.spec.placement);
  // The claim labels are the detector's: the previous claim's go, so they never name a policy that let go.
  const claimKeys: readonly string[] = Object.values(POLICY_LABELS);
  next.labels = { ...Object.fromEntries(Object.entries(next.labels).filter(([key]) => !claimKeys.includes(key))), ...input.labels };
  next.spec = { ...governed.spec, ...Object.fromEntries(Object.entries(kept).filter(([, value]) => value !== undefined)) };
  if (governed.inheritedFrom) next.inheritedFrom = governed.inheritedFrom;
  else delete next.inheritedFrom;
  if (before === userView(next)) return keep('unchanged');
  const inStep = current !== undefined && current.status.schedulerObservedGeneration === current.generation;
  if (current) next.generation += 1;
  if (inStep && !reschedule) next.status.schedulerObservedGeneration = next.generation;
  return write(next, current ? 'configured' : 'created');
}

/** The event of a derived binding that was created or changed. */
export const derivedEvent = (plane: ControlPlane, record: BindingRecord, result: ApplyAction) =>
  bindingEvent(record, plane.clock.now(), result === 'created' ? 'Created' : 'Configured', `binding ${result} from its resource template`);
