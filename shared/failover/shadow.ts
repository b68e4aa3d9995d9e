import { POLICY_MODE_ANNOTATION, POLICY_MODES } from '../api/resources';
import { ACTIVE_STATES, bindingKey, type BindingRef, type EvictionState, type PlacementFacts } from './bindingModel';
import { decideEviction, isFaultyTaint } from './evictionDecision';
import type { ClusterTaint, PolicyWindow } from './model';

/**
 * Shadow policies: a ClusterTaintPolicy annotated `failover.io/mode: shadow` matches and keeps its windows
 * as an enforcing one does, but writes no taint and evicts nothing. What it would have done is recorded
 * instead, once per match episode: the taints it would have added (WouldTaint) and, for a NoExecute or
 * PreferNoExecute taint, the bindings the taint manager would have evicted for it (WouldEvict), decided by
 * the taint manager's own rule (evictionDecision.ts). Pure: the facts in, the findings out.
 */

export { POLICY_MODE_ANNOTATION, POLICY_MODES };
export type PolicyMode = (typeof POLICY_MODES)[number];

/**
 * The mode a policy's annotations give: `enforce` without the annotation. Our API refuses any other value;
 * one that reached us anyway (an object written to Karmada's API server directly) counts as `shadow`: a
 * policy whose mode cannot be read writes nothing.
 */
export function policyMode(annotations: Readonly<Record<string, string>> | undefined): PolicyMode {
  const value = annotations?.[POLICY_MODE_ANNOTATION];
  if (value === undefined) return 'enforce';
  return value === 'enforce' ? 'enforce' : 'shadow';
}

/** A policy's window on one cluster, with the findings already recorded in its current match episode. */
export interface ShadowWindow extends PolicyWindow {
  /** Taints (`key:effect`) whose WouldTaint this episode has recorded (shadow mode only). */
  shadowed?: string[];
}

/** A taint a shadow policy would have added (or taken hold of) on a cluster. */
export interface WouldTaint {
  policy: string;
  taint: { key: string; value?: string; effect: ClusterTaint['effect'] };
  /** When an enforcing policy would have added it: the match start plus addOnMatchSeconds (Karmada shape: the match start). */
  at: string;
  /** The start of the match episode (the persisted window): a finding is recorded once per episode. */
  episode: string;
  /** The cluster already has the taint (someone else holds it): the policy would only have taken hold of it. */
  present: boolean;
}

/** A binding the taint manager would have evicted for a shadow policy's taint. */
export interface WouldEvict {
  binding: BindingRef;
  bindingKey: string;
  /** When it would have been due to leave. */
  dueAt: string;
  why: string;
}

/**
 * What the taint manager would decide for `taint`, added at `at`, over the bindings placed on the cluster:
 * the same decision (docs/architecture.md, decision 4) it makes when the taint is really there. A binding
 * whose eviction from this cluster is already decided (an active ledger row) is not decided again, as in the
 * taint manager. Taints without NoExecute or PreferNoExecute effect evict nothing.
 */
export function wouldEvict(
  taint: WouldTaint['taint'],
  at: string,
  placements: readonly PlacementFacts[],
  now: Date,
  decided: ReadonlyMap<string, EvictionState> = new Map(),
): WouldEvict[] {
  if (!isFaultyTaint(taint)) return [];
  const out: WouldEvict[] = [];
  for (const placement of placements) {
    const key = bindingKey(placement);
    const state = decided.get(key);
    if (state && ACTIVE_STATES.includes(state)) continue;
    const verdict = decideEviction([{ ...taint, timeAdded: at }], placement.tolerations, placement.failoverCluster, now);
    if (!verdict.evict) continue;
    const binding: BindingRef = {
      kind: placement.kind,
      ...(placement.namespace !== undefined ? { namespace: placement.namespace } : {}),
      name: placement.name,
    };
    out.push({ binding, bindingKey: key, dueAt: verdict.dueAt.toISOString(), why: verdict.why });
  }
  return out.sort((a, b) => (a.bindingKey < b.bindingKey ? -1 : a.bindingKey > b.bindingKey ? 1 : 0));
}
