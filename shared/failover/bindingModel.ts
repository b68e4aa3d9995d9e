import type { BindingSpec, ClusterFailover, PurgeMode, Toleration } from '../api/resources';

export type BindingKind = 'ResourceBinding' | 'ClusterResourceBinding';

export interface BindingRef {
  kind: BindingKind;
  namespace?: string;
  name: string;
}

/** One string per binding, safe as a Table row key: `rb:<namespace>:<name>` or `crb:<name>`. */
export function bindingKey(ref: BindingRef): string {
  return ref.kind === 'ResourceBinding' ? `rb:${ref.namespace ?? 'default'}:${ref.name}` : `crb:${ref.name}`;
}

/** `namespace/name` for a ResourceBinding, `name` for a ClusterResourceBinding: how events and messages name it. */
export const displayName = (ref: BindingRef) => (ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name);

export function parseBindingKey(key: string): BindingRef {
  if (key.startsWith('rb:')) {
    const rest = key.slice(3);
    const split = rest.indexOf(':');
    return { kind: 'ResourceBinding', namespace: rest.slice(0, split), name: rest.slice(split + 1) };
  }
  if (key.startsWith('crb:')) return { kind: 'ClusterResourceBinding', name: key.slice(4) };
  throw new Error(`not a binding key: ${key}`);
}

/** What the taint manager plans from, per (cluster, binding): kept in the placement index. */
export interface PlacementFacts extends BindingRef {
  cluster: string;
  resourceKind: string;
  replicas: number;
  tolerations: Toleration[];
  failoverCluster?: ClusterFailover;
  /** spec.schedulePriority.priority of the binding (Karmada's field), when set and not 0: the pacer's order. */
  priority?: number;
  /** Revision of the binding this projection was taken from. */
  rev: number;
}

export type EvictionState = 'pending' | 'scheduled' | 'done' | 'abandoned' | 'blocked' | 'failed';
export const ACTIVE_STATES: readonly EvictionState[] = ['pending', 'scheduled', 'blocked'];

/** One ledger row: a frozen eviction decision for (cluster, binding) and where it stands. */
export interface EvictionRecord extends BindingRef {
  cluster: string;
  bindingKey: string;
  resourceKind: string;
  replicas: number;
  state: EvictionState;
  reason: string;
  purgeMode: Exclude<PurgeMode, 'Never'>;
  /** failover.cluster.gracePeriodSeconds when the decision was made, for the graceful-eviction task. */
  gracePeriodSeconds?: number;
  why: string;
  taints: string;
  dueAt: string;
  decidedAt: string;
  decisionRev: number;
  scheduledFor?: string;
  executedAt?: string;
  attempts: number;
  message?: string;
  updatedAt: string;
  /** W3C traceparent of the decision, so the pacer and the worker continue the failure's trace. */
  traceparent?: string;
  /** Set by the commit that moved the row to `done`: a retried commit recognises its own write. */
  commitId?: string;
  /**
   * The binding's spec.schedulePriority.priority when the eviction was planned (absent: 0). The pacer hands
   * out slots by it (shared/failover/priority.ts) without reading bindings.
   */
  priority?: number;
  /**
   * Why a `pending` row is not going now although it is due: `BudgetExceeded` while a FailoverBudget
   * (`waitingFor`, `<namespace>/<name>`) has no room. Cleared when the row is released.
   */
  stateReason?: 'BudgetExceeded';
  waitingFor?: string;
  /**
   * A `Failback` row (shared/failover/failback.ts; it lives under the cluster the binding leaves): the home
   * it goes back to, the window, and the home's healthy run it is due on (re-dated when the run restarts).
   */
  home?: string;
  failbackWindowSeconds?: number;
  homeHealthySince?: string;
}

export const resourceKindOf = (spec: Pick<BindingSpec, 'resource'>) => `${spec.resource.apiVersion}/${spec.resource.kind}`;

/**
 * A new `pending` ledger row for a binding placed on a cluster: the frozen decision (reason, why, taints,
 * due time) with what the worker needs from the placement (its purge mode, `Gracefully` without
 * failover.cluster, and grace period). The taint manager and a drain both decide rows this way.
 */
export function pendingEviction(
  placement: PlacementFacts,
  decision: { reason: string; why: string; taints: string; dueAt: string },
  now: string,
  traceparent?: string,
): EvictionRecord {
  return {
    cluster: placement.cluster,
    bindingKey: bindingKey(placement),
    kind: placement.kind,
    ...(placement.namespace ? { namespace: placement.namespace } : {}),
    name: placement.name,
    resourceKind: placement.resourceKind,
    replicas: placement.replicas,
    state: 'pending',
    ...decision,
    purgeMode: placement.failoverCluster?.purgeMode ?? 'Gracefully',
    ...(placement.failoverCluster?.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: placement.failoverCluster.gracePeriodSeconds } : {}),
    ...(placement.priority ? { priority: placement.priority } : {}),
    decidedAt: now,
    decisionRev: placement.rev,
    attempts: 0,
    updatedAt: now,
    ...(traceparent ? { traceparent } : {}),
  };
}
