import { randomUUID } from 'node:crypto';
import type { ClusterResourceBindingInput, ResourceBindingInput } from '../api/resources';
import { BindingRef, bindingKey } from '../failover/bindingModel';
import { isFaultyTaint } from '../failover/evictionDecision';
import { keep, remove, write } from '../store/optimistic';
import type { ControlPlane } from './ports';
import type { BindingRecord } from './records';
import { writeBinding } from './state/bindingWrites';
import { ApplyAction, governedSpec } from './state/derivation';
import { bindingEvent } from './state/events';
import { loadPropagationPolicies } from './state/reads';
import { bindingResource } from './views';

type BindingInput = ResourceBindingInput | ClusterResourceBindingInput;

const userView = (record: BindingRecord) =>
  JSON.stringify({ labels: record.labels, annotations: record.annotations, spec: record.spec, inheritedFrom: record.inheritedFrom });

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
    // Taken before `next` (the same object as `current` when it exists) is changed.
    const before = current ? userView(current) : undefined;
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
    if (before === userView(next)) return keep('unchanged');
    if (current) next.generation += 1;
    // Clusters given in the applied spec are the placement (as a person or another scheduler decided it);
    // a binding applied without clusters is placed by the scheduler.
    if ((input.spec.clusters ?? []).length > 0) next.status = { ...next.status, schedulerObservedGeneration: next.generation };
    return write(next, current ? 'configured' : 'created');
  });
  if (result !== 'unchanged' && record) {
    await plane.events.append([bindingEvent(record, plane.clock.now(), result === 'created' ? 'Created' : 'Configured', `binding ${result}`)]);
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
  if (result) await plane.events.append([bindingEvent(ref, plane.clock.now(), 'Deleted', 'binding deleted')]);
  return result;
}

/** ResourceBindings (all, or one namespace's) or ClusterResourceBindings, as the API shows them. */
export async function listBindings(plane: ControlPlane, kind: BindingRef['kind'], namespace?: string) {
  // Keys are `rb:<namespace>:<name>` and `crb:<name>` (bindingKey): a prefix selects a kind or a namespace.
  const prefix = kind === 'ClusterResourceBinding' ? 'crb:' : namespace ? `rb:${namespace}:` : 'rb:';
  return (await plane.bindings.list()).filter((entry) => entry.id.startsWith(prefix)).map((entry) => bindingResource(entry.value, entry.etag));
}

export async function getBinding(plane: ControlPlane, ref: BindingRef) {
  const entry = await plane.bindings.get(bindingKey(ref));
  return entry ? bindingResource(entry.value, entry.etag) : undefined;
}
