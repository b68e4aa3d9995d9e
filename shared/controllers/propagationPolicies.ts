import { randomUUID } from 'node:crypto';
import type { PropagationPolicyView } from '../api/contract/views';
import type { ClusterPropagationPolicyInput, PropagationPolicyInput } from '../api/resources';
import { policyDisplay, policyKey, PolicyRef } from '../failover/propagation';
import { keep, mutate, write } from '../store/optimistic';
import type { BindingRecord, PropagationPolicyRecord } from '../store/records';
import type { ControlPlane } from './ports';
import { claimIntents, journalOf, repairPlacementWrites, staleIntents, writeBinding } from './state/bindingWrites';
import { appliedPolicy, ApplyAction, governedSpec, ownSpec, underDerivationIntent } from './state/derivation';
import { bindingEvent, policyEvent } from './state/events';
import { forgetPropagationPolicies, loadPropagationPolicies } from './state/reads';
import { rederiveTemplates } from './templates';
import { propagationPolicyResource } from './views';

/**
 * PropagationPolicy / ClusterPropagationPolicy: stored, and inherited by the bindings they govern
 * (placement and failover, where a binding leaves them out). A policy change re-derives its bindings.
 */

type PolicyInput = PropagationPolicyInput | ClusterPropagationPolicyInput;

const refOf = (input: PolicyInput): PolicyRef =>
  input.kind === 'PropagationPolicy'
    ? { kind: 'PropagationPolicy', namespace: input.metadata.namespace, name: input.metadata.name }
    : { kind: 'ClusterPropagationPolicy', name: input.metadata.name };

/**
 * A policy is stored and its templates and bindings derived again under one intent of the write journal
 * (`underDerivationIntent`): a host killed between the two leaves it open, and the repair derives again.
 */
export async function applyPropagationPolicy(plane: ControlPlane, input: PolicyInput): Promise<ApplyAction> {
  const ref = refOf(input);
  const created = () => ({
    ...ref,
    uid: randomUUID(),
    createdAt: plane.clock.now().toISOString(),
    generation: 1,
    labels: {},
    annotations: {},
    spec: input.spec,
  });
  const stored = await plane.propagationPolicies.get(policyKey(ref));
  // An unchanged policy starts no derivation, so it needs no intent.
  if (stored && appliedPolicy(stored.value, created, input).kind === 'keep') return 'unchanged';
  return underDerivationIntent(plane, async () => {
    const { result } = await mutate<PropagationPolicyRecord, ApplyAction>(
      plane.propagationPolicies,
      policyKey(ref),
      (current) => appliedPolicy(current?.value, created, input),
      stored,
    );
    if (result !== 'unchanged') await policyChanged(plane, ref, result === 'created' ? 'Created' : 'Configured');
    return result;
  });
}

export async function deletePropagationPolicy(plane: ControlPlane, ref: PolicyRef): Promise<boolean> {
  return underDerivationIntent(plane, async () => {
    const deleted = await plane.propagationPolicies.delete(policyKey(ref));
    if (deleted) await policyChanged(plane, ref, 'Deleted');
    return deleted;
  });
}

export interface RepairOutcome {
  /** Bindings whose placement rows were settled against the stored binding. */
  settled?: number;
  /** Bindings whose rows another writer was busy with: settled by a later pass. */
  waiting?: number;
  /** Policy changes whose derivation was interrupted: derived again (and the bindings that changed). */
  derivations?: number;
  rederived?: number;
}

/**
 * The repair timer's pass over the write journal: the intents open past the grace belong to writers that
 * died or failed between their steps. Binding writes: their placement rows are settled against the stored
 * bindings (`repairPlacementWrites`). Policy changes: every template and binding is derived again under the
 * stored policies, once for all of them. Idle, it costs one query of the journal partition.
 */
export async function repairInterruptedWrites(plane: ControlPlane): Promise<RepairOutcome> {
  const stale = await staleIntents(plane);
  if (stale.length === 0) return {};
  const outcome: RepairOutcome = {};
  const placements = await repairPlacementWrites(plane, stale);
  if (placements.settled + placements.waiting > 0) Object.assign(outcome, placements);
  const derivations = await claimIntents(
    plane,
    stale.filter(({ intent }) => intent.derive),
  );
  if (derivations.length > 0) {
    forgetPropagationPolicies(plane);
    await rederiveTemplates(plane);
    outcome.rederived = await rederiveBindings(plane);
    outcome.derivations = derivations.length;
    await journalOf(plane)?.closeIntents(derivations.map(({ intent, etag }) => ({ id: intent.id, etag })));
  }
  return outcome;
}

async function policyChanged(plane: ControlPlane, ref: PolicyRef, reason: 'Created' | 'Configured' | 'Deleted'): Promise<void> {
  forgetPropagationPolicies(plane);
  // The detector first (which templates this policy now claims), then every binding's inheritance.
  const claims = await rederiveTemplates(plane);
  const rederived = await rederiveBindings(plane);
  const claimed = claims.get(policyKey(ref)) ?? 0;
  // A policy whose selectors match nothing is accepted (its templates may come later), and says so.
  const governs =
    claimed > 0 || (await plane.bindings.list((value) => value.inheritedFrom !== undefined && policyKey(value.inheritedFrom) === policyKey(ref))).length > 0;
  const matches =
    reason === 'Deleted' ? '' : governs ? `; it claims ${claimed} resource template(s)` : '; its resourceSelectors match no resource template or binding yet';
  await plane.events.append([
    policyEvent(
      ref.kind,
      ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name,
      plane.clock.now(),
      reason,
      `policy ${reason.toLowerCase()}; ${rederived} binding(s) re-derived${matches}`,
    ),
  ]);
}

/**
 * Re-derives every binding's inherited placement and failover under the current policies. A placement
 * change makes the scheduler look at the binding again; a failover change takes effect at its next check.
 */
export async function rederiveBindings(plane: ControlPlane): Promise<number> {
  const policies = await loadPropagationPolicies(plane, 0);
  let changed = 0;
  // Only the bindings whose derivation changes are kept from the listing (filtered as it is read).
  const outdated = (value: BindingRecord) =>
    JSON.stringify(governedSpec(value, ownSpec(value), policies)) !== JSON.stringify({ spec: value.spec, inheritedFrom: value.inheritedFrom });
  for (const { id } of await plane.bindings.list(outdated)) {
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
    const source = record.inheritedFrom
      ? `now inherits ${record.inheritedFrom.fields.join(' and ')} from ${policyDisplay(record.inheritedFrom)}`
      : 'no longer inherits from a policy';
    await plane.events.append([bindingEvent(record, plane.clock.now(), 'PolicyApplied', source)]);
    if (placementChanged) await plane.scheduler.send({ binding: id });
  }
  return changed;
}

/** PropagationPolicies (all, or one namespace's) or ClusterPropagationPolicies, as the API shows them. */
export async function listPropagationPolicies(plane: ControlPlane, kind: PolicyRef['kind'], namespace?: string): Promise<PropagationPolicyView[]> {
  // Keys are `pp:<namespace>:<name>` and `cpp:<name>` (policyKey): a prefix selects a kind or a namespace.
  const prefix = kind === 'ClusterPropagationPolicy' ? 'cpp:' : namespace ? `pp:${namespace}:` : 'pp:';
  return (await plane.propagationPolicies.list())
    .filter((entry) => entry.id.startsWith(prefix))
    .map((entry) => propagationPolicyResource(entry.value, entry.etag));
}

export async function getPropagationPolicy(plane: ControlPlane, ref: PolicyRef): Promise<PropagationPolicyView | undefined> {
  const entry = await plane.propagationPolicies.get(policyKey(ref));
  return entry ? propagationPolicyResource(entry.value, entry.etag) : undefined;
}
