import { randomUUID } from 'node:crypto';
import type { PropagationPolicyView } from '../api/contract/views';
import type { ClusterPropagationPolicyInput, PropagationPolicyInput } from '../api/resources';
import { mapConcurrent } from '../concurrency';
import { derivationScope, policyDisplay, policyKey, PolicyRef } from '../failover/propagation';
import { keep, mutate, write } from '../store/optimistic';
import { ConcurrencyError } from '../store/ports';
import type { BindingRecord, PropagationPolicyRecord } from '../store/records';
import type { ControlPlane } from './ports';
import { claimIntents, journalOf, repairPlacementWrites, staleIntents, writeBinding } from './state/bindingWrites';
import { appliedPolicy, ApplyAction, governedSpec, ownSpec, underDerivationIntent } from './state/derivation';
import { bindingEvent, policyEvent } from './state/events';
import { forgetPropagationPolicies, loadPropagationPolicies } from './state/reads';
import { listByPrefixes, rederiveTemplates } from './templates';
import { propagationPolicyResource } from './views';

/**
 * PropagationPolicy / ClusterPropagationPolicy: stored, and inherited by the bindings they govern
 * (placement and failover, where a binding leaves them out). A policy change re-derives its bindings.
 */

type PolicyInput = PropagationPolicyInput | ClusterPropagationPolicyInput;

/** Policies of one request read and stored at once. */
const STORE_CONCURRENCY = 8;

const refOf = (input: PolicyInput): PolicyRef =>
  input.kind === 'PropagationPolicy'
    ? { kind: 'PropagationPolicy', namespace: input.metadata.namespace, name: input.metadata.name }
    : { kind: 'ClusterPropagationPolicy', name: input.metadata.name };

/**
 * A policy is stored and its templates and bindings derived again under one intent of the write journal
 * (`underDerivationIntent`): a host killed between the two leaves it open, and the repair derives again.
 */
export async function applyPropagationPolicy(plane: ControlPlane, input: PolicyInput): Promise<ApplyAction> {
  return (await applyPropagationPolicies(plane, [input]))[0];
}

/**
 * Policies of one request (consecutive in it): each stored, then one derivation for them all, over what
 * any of their versions can select (`derivationScope`), so a request of many policies derives each affected
 * template and binding once, not once per policy, and a policy's cost follows what it selects.
 */
export async function applyPropagationPolicies(plane: ControlPlane, inputs: readonly PolicyInput[]): Promise<ApplyAction[]> {
  const stored = await mapConcurrent(inputs, STORE_CONCURRENCY, (input) => plane.propagationPolicies.get(policyKey(refOf(input))));
  const results = inputs.map((input, i): ApplyAction | undefined => {
    const current = stored[i];
    // An unchanged policy starts no derivation, so it needs no intent.
    return current && appliedPolicy(current.value, () => current.value, input).kind === 'keep' ? 'unchanged' : undefined;
  });
  const changing = results.flatMap((result, i) => (result === undefined ? [i] : []));
  if (changing.length === 0) return results as ApplyAction[];
  await underDerivationIntent(plane, async () => {
    const changes: PolicyChange[] = [];
    await mapConcurrent(changing, STORE_CONCURRENCY, async (i) => {
      const input = inputs[i];
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
      let before: PropagationPolicyRecord | undefined;
      let after: PropagationPolicyRecord | undefined;
      const { result } = await mutate<PropagationPolicyRecord, ApplyAction>(
        plane.propagationPolicies,
        policyKey(ref),
        (current) => {
          const applied = appliedPolicy(current?.value, created, input);
          before = current?.value;
          after = applied.kind === 'write' ? applied.value : current?.value;
          return applied;
        },
        stored[i],
      );
      results[i] = result;
      if (result !== 'unchanged') changes.push({ ref, reason: result === 'created' ? 'Created' : 'Configured', versions: [before, after] });
    });
    await policiesChanged(plane, changes);
  });
  return results as ApplyAction[];
}

export async function deletePropagationPolicy(plane: ControlPlane, ref: PolicyRef): Promise<boolean> {
  return underDerivationIntent(plane, async () => {
    for (;;) {
      // The version deleted is the one read (ETag-checked): what it selected is derived again.
      const stored = await plane.propagationPolicies.get(policyKey(ref));
      if (!stored) return false;
      try {
        if (!(await plane.propagationPolicies.delete(policyKey(ref), stored.etag))) return false;
      } catch (error) {
        // Changed since it was read: read again, and delete what it holds now.
        if (!(error instanceof ConcurrencyError)) throw error;
        continue;
      }
      await policiesChanged(plane, [{ ref, reason: 'Deleted', versions: [stored.value] }]);
      return true;
    }
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
    outcome.rederived = (await rederiveBindings(plane)).changed;
    outcome.derivations = derivations.length;
    await journalOf(plane)?.closeIntents(derivations.map(({ intent, etag }) => ({ id: intent.id, etag })));
  }
  return outcome;
}

interface PolicyChange {
  ref: PolicyRef;
  reason: 'Created' | 'Configured' | 'Deleted';
  /** The policy as it was and as it is (undefined: absent): what either selects is derived again. */
  versions: Array<PropagationPolicyRecord | undefined>;
}

async function policiesChanged(plane: ControlPlane, changes: readonly PolicyChange[]): Promise<void> {
  if (changes.length === 0) return;
  forgetPropagationPolicies(plane);
  const scope = derivationScope(changes.flatMap((change) => change.versions.filter((v): v is PropagationPolicyRecord => v !== undefined)));
  // The detector first (which templates these policies now claim), then the bindings' inheritance.
  const claims = await rederiveTemplates(plane, scope.templates);
  const { changed, governing } = await rederiveBindings(plane, scope.bindings);
  const now = plane.clock.now();
  await plane.events.append(
    changes.map(({ ref, reason }) => {
      const key = policyKey(ref);
      const claimed = claims.get(key) ?? 0;
      // A policy whose selectors match nothing is accepted (its templates may come later), and says so.
      const governs = claimed > 0 || (governing.get(key) ?? 0) > 0;
      const matches =
        reason === 'Deleted'
          ? ''
          : governs
            ? `; it claims ${claimed} resource template(s)`
            : '; its resourceSelectors match no resource template or binding yet';
      return policyEvent(
        ref.kind,
        ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name,
        now,
        reason,
        `policy ${reason.toLowerCase()}; ${changed} binding(s) re-derived${matches}`,
      );
    }),
  );
}

/**
 * Re-derives the inherited placement and failover of the bindings under `prefixes` (derivationScope), or of
 * every binding, under the current policies. A placement change makes the scheduler look at the binding
 * again; a failover change takes effect at its next check. Answers how many changed, and how many of those
 * read each policy (by policyKey) governs now.
 */
export async function rederiveBindings(plane: ControlPlane, prefixes?: readonly string[]): Promise<{ changed: number; governing: Map<string, number> }> {
  const policies = await loadPropagationPolicies(plane, 0);
  const governing = new Map<string, number>();
  let changed = 0;
  // Only the bindings whose derivation changes are kept from the listing (filtered as it is read).
  const outdated = (value: BindingRecord) => {
    const derived = governedSpec(value, ownSpec(value), policies);
    if (derived.inheritedFrom) governing.set(policyKey(derived.inheritedFrom), (governing.get(policyKey(derived.inheritedFrom)) ?? 0) + 1);
    return JSON.stringify(derived) !== JSON.stringify({ spec: value.spec, inheritedFrom: value.inheritedFrom });
  };
  const listed = prefixes ? await listByPrefixes(plane.bindings, prefixes, outdated) : await plane.bindings.list(outdated);
  for (const { id } of listed) {
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
  return { changed, governing };
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
