import { randomUUID } from 'node:crypto';
import type { BindingSpec, ClusterPropagationPolicyInput, PropagationPolicyInput } from '../api/resources';
import { inherit, PolicyRef, policyDisplay, policyKey, PropagationCandidate, selectPolicy } from '../failover/propagation';
import { keep, mutate, write } from '../store/optimistic';
import type { ApplyAction } from './clusters';
import type { ControlPlane } from './deps';
import { appliedPolicy } from './policies';
import { displayName, writeBinding } from './bindings';
import type { BindingRecord, PropagationPolicyRecord } from './records';

/**
 * PropagationPolicy / ClusterPropagationPolicy: stored, and inherited by the bindings they govern
 * (placement and failover, where a binding leaves them out). A policy change re-derives its bindings.
 */

const POLICY_TTL_MS = 1000;
const cache = new WeakMap<ControlPlane, { at: number; policies: PropagationCandidate[] }>();

/** Every propagation policy, as this process read them at most a second ago (dropped when it changes one). */
export async function loadPropagationPolicies(plane: ControlPlane, maxAgeMs = POLICY_TTL_MS): Promise<PropagationCandidate[]> {
  const hit = cache.get(plane);
  if (hit && Date.now() - hit.at < maxAgeMs) return hit.policies;
  const policies = (await plane.propagationPolicies.list()).map(({ value }) => ({ kind: value.kind, ...(value.namespace ? { namespace: value.namespace } : {}), name: value.name, spec: value.spec }));
  cache.set(plane, { at: Date.now(), policies });
  return policies;
}

/** The binding's own spec: what it has minus what it inherited. */
export function ownSpec(record: Pick<BindingRecord, 'spec' | 'inheritedFrom'>): BindingSpec {
  const spec = { ...record.spec };
  for (const field of record.inheritedFrom?.fields ?? []) delete spec[field];
  return spec;
}

/** The effective spec and inheritance of a binding under the current policies. */
export function governedSpec(subject: { namespace?: string; labels: Record<string, string> }, own: BindingSpec, policies: readonly PropagationCandidate[]): Pick<BindingRecord, 'spec' | 'inheritedFrom'> {
  const policy = selectPolicy({ ...subject, resource: own.resource }, policies);
  const { spec, fields } = inherit(own, policy);
  return { spec, inheritedFrom: policy && fields.length > 0 ? { kind: policy.kind, ...(policy.namespace ? { namespace: policy.namespace } : {}), name: policy.name, fields } : undefined };
}

type PolicyInput = PropagationPolicyInput | ClusterPropagationPolicyInput;

const refOf = (input: PolicyInput): PolicyRef =>
  input.kind === 'PropagationPolicy' ? { kind: 'PropagationPolicy', namespace: input.metadata.namespace, name: input.metadata.name } : { kind: 'ClusterPropagationPolicy', name: input.metadata.name };


export async function applyPropagationPolicy(plane: ControlPlane, input: PolicyInput): Promise<ApplyAction> {
  const ref = refOf(input);
  const { result } = await mutate<PropagationPolicyRecord, ApplyAction>(plane.propagationPolicies, policyKey(ref), (current) =>
    appliedPolicy(current?.value, () => ({ ...ref, uid: randomUUID(), createdAt: plane.clock.now().toISOString(), generation: 1, labels: {}, annotations: {}, spec: input.spec }), input),
  );
  if (result !== 'unchanged') await policyChanged(plane, ref, result === 'created' ? 'Created' : 'Configured');
  return result;
}

export async function deletePropagationPolicy(plane: ControlPlane, ref: PolicyRef): Promise<boolean> {
  const deleted = await plane.propagationPolicies.delete(policyKey(ref));
  if (deleted) await policyChanged(plane, ref, 'Deleted');
  return deleted;
}

async function policyChanged(plane: ControlPlane, ref: PolicyRef, reason: string): Promise<void> {
  cache.delete(plane);
  const rederived = await rederiveBindings(plane);
  await plane.events.append([
    { time: plane.clock.now().toISOString(), kind: ref.kind, name: ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name, type: 'Normal', reason, message: `policy ${reason.toLowerCase()}; ${rederived} binding(s) re-derived` },
  ]);
}

/**
 * Re-derives every binding's inherited placement and failover under the current policies. A placement
 * change makes the scheduler look at the binding again; a failover change takes effect at its next check.
 */
export async function rederiveBindings(plane: ControlPlane): Promise<number> {
  const policies = await loadPropagationPolicies(plane, 0);
  let changed = 0;
  for (const { id, value } of await plane.bindings.list()) {
    const next = governedSpec(value, ownSpec(value), policies);
    if (JSON.stringify(next) === JSON.stringify({ spec: value.spec, inheritedFrom: value.inheritedFrom })) continue;
    let placementChanged = false;
    const { record } = await writeBinding<null>(plane, id, (current) => {
      if (!current) return keep(null);
      const derived = governedSpec(current, ownSpec(current), policies);
      if (JSON.stringify(derived) === JSON.stringify({ spec: current.spec, inheritedFrom: current.inheritedFrom })) return keep(null);
      placementChanged = JSON.stringify(derived.spec.placement) !== JSON.stringify(current.spec.placement);
      const inStep = current.status.schedulerObservedGeneration === current.generation;
      current.spec = { ...derived.spec, ...(current.spec.activeEvictionHistory ? { activeEvictionHistory: current.spec.activeEvictionHistory } : {}) };
      current.inheritedFrom = derived.inheritedFrom;
      current.generation += 1;
      // Only a new placement needs the scheduler; a new failover behaviour does not.
      if (inStep && !placementChanged) current.status.schedulerObservedGeneration = current.generation;
      return write(current, null);
    });
    if (!record) continue;
    changed++;
    const source = record.inheritedFrom ? `now inherits ${record.inheritedFrom.fields.join(' and ')} from ${policyDisplay(record.inheritedFrom)}` : 'no longer inherits from a policy';
    await plane.events.append([{ time: plane.clock.now().toISOString(), kind: record.kind, name: displayName(record), type: 'Normal', reason: 'PolicyApplied', message: source }]);
    if (placementChanged) await plane.scheduler.send({ binding: id });
  }
  return changed;
}
