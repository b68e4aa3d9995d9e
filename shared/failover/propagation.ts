import type { BindingSpec, PropagationSpec, ResourceSelector } from '../api/resources';
import { matchesLabelSelector } from './selectors';

/**
 * Which PropagationPolicy or ClusterPropagationPolicy governs a binding, and what the binding inherits
 * from it (pure). Karmada's detector does this for resource templates; here the binding stands for its
 * template: its spec.resource is matched, and its own labels stand in for the template's labels.
 */

export type PropagationKind = 'PropagationPolicy' | 'ClusterPropagationPolicy';

export interface PolicyRef {
  kind: PropagationKind;
  namespace?: string;
  name: string;
}

export interface PropagationCandidate extends PolicyRef {
  spec: PropagationSpec;
}

/** The labels Karmada puts on a binding to name its policy; a binding applied with them picks that policy. */
export const POLICY_LABELS = {
  namespace: 'propagationpolicy.karmada.io/namespace',
  name: 'propagationpolicy.karmada.io/name',
  clusterName: 'clusterpropagationpolicy.karmada.io/name',
} as const;

export const policyKey = (ref: PolicyRef) => (ref.kind === 'PropagationPolicy' ? `pp:${ref.namespace ?? 'default'}:${ref.name}` : `cpp:${ref.name}`);
export const policyDisplay = (ref: PolicyRef) => `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;

export interface BindingSubject {
  /** The binding's namespace (ResourceBinding) or undefined (ClusterResourceBinding). */
  namespace?: string;
  labels: Record<string, string>;
  resource: BindingSpec['resource'];
}

export function selectorMatches(selector: ResourceSelector, subject: BindingSubject): boolean {
  const resourceNamespace = subject.resource.namespace ?? subject.namespace;
  if (selector.apiVersion !== subject.resource.apiVersion || selector.kind !== subject.resource.kind) return false;
  if (selector.namespace && selector.namespace !== resourceNamespace) return false;
  if (selector.name && selector.name !== subject.resource.name) return false;
  return matchesLabelSelector(selector.labelSelector, subject.labels);
}

/**
 * Karmada's implicit priority of a policy for an object: the best of its matching selectors, a selector
 * naming the object (3) over one matching by labels (2) over one matching the kind alone (1); 0 when none
 * matches.
 */
export function implicitPriority(policy: PropagationCandidate, subject: BindingSubject): number {
  let best = 0;
  for (const selector of policy.spec.resourceSelectors) {
    if (!selectorMatches(selector, subject)) continue;
    best = Math.max(best, selector.name ? 3 : selector.labelSelector ? 2 : 1);
  }
  return best;
}

/**
 * The governing policy: the one the subject's labels name (if it exists), else the matching
 * PropagationPolicy of its namespace, else the matching ClusterPropagationPolicy; among several, the
 * highest explicit `priority`, then Karmada's implicit priority (name match over label match over kind
 * match), then the name first in order (Karmada's detector).
 */
export function selectPolicy(subject: BindingSubject, candidates: readonly PropagationCandidate[]): PropagationCandidate | undefined {
  const named = namedPolicy(subject);
  if (named) {
    const hit = candidates.find((c) => policyKey(c) === policyKey(named));
    if (hit) return hit;
  }
  return rankPolicies(subject, candidates)[0];
}

/** The matching policies in the order Karmada's detector prefers them (see selectPolicy); labels naming a policy are not read. */
export function rankPolicies(subject: BindingSubject, candidates: readonly PropagationCandidate[]): PropagationCandidate[] {
  const matching = (kind: PropagationKind) =>
    candidates
      .filter((c) => c.kind === kind && (kind === 'ClusterPropagationPolicy' || c.namespace === subject.namespace))
      .map((c) => ({ c, implicit: implicitPriority(c, subject) }))
      .filter(({ implicit }) => implicit > 0)
      .sort((a, b) => (b.c.spec.priority ?? 0) - (a.c.spec.priority ?? 0) || b.implicit - a.implicit || a.c.name.localeCompare(b.c.name))
      .map(({ c }) => c);
  return [...(subject.namespace !== undefined ? matching('PropagationPolicy') : []), ...matching('ClusterPropagationPolicy')];
}

function namedPolicy(subject: BindingSubject): PolicyRef | undefined {
  const name = subject.labels[POLICY_LABELS.name];
  if (name && subject.namespace !== undefined)
    return { kind: 'PropagationPolicy', namespace: subject.labels[POLICY_LABELS.namespace] ?? subject.namespace, name };
  const clusterName = subject.labels[POLICY_LABELS.clusterName];
  return clusterName ? { kind: 'ClusterPropagationPolicy', name: clusterName } : undefined;
}

export type InheritedField = 'placement' | 'failover';

/**
 * The binding spec with what the policy gives: each of placement and failover the binding leaves out
 * comes from the policy. What the binding sets itself wins (a binding is the more specific object).
 */
export function inherit(own: BindingSpec, policy: PropagationCandidate | undefined): { spec: BindingSpec; fields: InheritedField[] } {
  if (!policy) return { spec: own, fields: [] };
  const spec = { ...own };
  const fields: InheritedField[] = [];
  if (!own.placement && policy.spec.placement) {
    spec.placement = policy.spec.placement;
    fields.push('placement');
  }
  if (!own.failover && policy.spec.failover) {
    spec.failover = policy.spec.failover;
    fields.push('failover');
  }
  return { spec, fields };
}

/**
 * The stored objects a propagation-policy change can affect, as key prefixes (templates: `templateKey`,
 * bindings: `bindingKey`); undefined: any. A PropagationPolicy selects only in its own namespace; a
 * ClusterPropagationPolicy in the namespaces its selectors name, or anywhere (cluster-scoped kinds too) for
 * a selector without one. Given every version of the policy (before and after the change), what it stops
 * selecting and what it starts selecting are both in scope; the derivation then decides on each with every
 * policy, so the scope only has to hold every object whose claim could change.
 */
export interface DerivationScope {
  templates: string[] | undefined;
  bindings: string[] | undefined;
}

export function derivationScope(versions: ReadonlyArray<PropagationCandidate>): DerivationScope {
  const templates = new Set<string>();
  const bindings = new Set<string>();
  let anyBinding = false;
  for (const policy of versions) {
    const own = policy.kind === 'PropagationPolicy' ? (policy.namespace ?? 'default') : undefined;
    for (const selector of policy.spec.resourceSelectors) {
      if (own !== undefined && selector.namespace !== undefined && selector.namespace !== own) continue;
      const namespace = own ?? selector.namespace;
      const kindPrefix = `${selector.apiVersion.replace('/', '|')}|${selector.kind}|`;
      templates.add(namespace === undefined ? kindPrefix : `${kindPrefix}${namespace}|${selector.name ?? ''}`);
      if (namespace === undefined) anyBinding = true;
      else bindings.add(`rb:${namespace}:`);
    }
  }
  return { templates: withoutCovered(templates), bindings: anyBinding ? undefined : withoutCovered(bindings) };
}

/** The prefixes without those another one already covers. */
function withoutCovered(prefixes: Set<string>): string[] {
  const sorted = [...prefixes].sort();
  return sorted.filter((prefix, i) => !sorted.slice(0, i).some((shorter) => prefix.startsWith(shorter)));
}
