import type { ClusterAffinity, ConditionStatus, MatchCondition, PolicyTaint, TaintEffect, TaintPolicyShape, TaintToAdd } from '../api/resources';

export type { ClusterAffinity, ConditionStatus, MatchCondition, PolicyTaint, TaintEffect, TaintPolicyShape, TaintToAdd };

/** A cluster status condition, Kubernetes style. Times are RFC 3339 strings. */
export interface Condition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  lastTransitionTime: string;
}

/**
 * A taint on a cluster, as stored: the Karmada fields plus who holds it. `owners` are the policies that
 * added or adopted it; `manual` is set when a person put it there (apply). A taint with neither is gone,
 * unless a Karmada-shape policy left it (`leftBy`).
 */
export interface ClusterTaint {
  key: string;
  value?: string;
  effect: TaintEffect;
  timeAdded: string;
  owners: string[];
  manual: boolean;
  /**
   * The owners that hold it under Karmada's rules (a Karmada-shape policy: held from addOnConditions until
   * removeOnConditions); the other owners are seed-shape policies. Absent when none.
   */
  karmadaOwners?: string[];
  /**
   * A Karmada-shape policy held it, then stopped applying (deleted, no longer targeting the cluster, no
   * longer listing the taint): as upstream, the taint stays. It goes when a Karmada-shape policy's
   * removeOnConditions remove it, or when a person applies the Cluster without it. Absent when a
   * Karmada-shape policy holds it.
   */
  leftBy?: string;
}

/** Persisted start of a policy's current match or mismatch on one cluster (docs/architecture.md, decision 2). */
export interface PolicyWindow {
  matched: boolean;
  since: string;
  /** Hash of what decides the match; a policy edit that changes it restarts the window. */
  fingerprint: string;
}

/** What the decisions need to know about a cluster. */
export interface ClusterFacts {
  name: string;
  labels: Record<string, string>;
  provider?: string;
  region?: string;
  zone?: string;
  conditions: Condition[];
  taints: ClusterTaint[];
  policyWindows: Record<string, PolicyWindow>;
}

/** A ClusterTaintPolicy of the windowed shape (`'seed'` in code): per-taint time windows. */
export interface TaintPolicy {
  shape?: 'seed';
  name: string;
  targetCluster?: ClusterAffinity;
  matchConditions: MatchCondition[];
  taintsToAdd: TaintToAdd[];
  /** `shadow` (annotation failover.io/mode): windows kept, nothing written, findings recorded (shadow.ts). */
  mode?: 'shadow' | 'enforce';
}

/** A ClusterTaintPolicy of Karmada's shape (v1.14+): acts at once, in creationTimestamp order. */
export interface KarmadaTaintPolicy {
  shape: 'karmada';
  name: string;
  /** creationTimestamp (RFC 3339): the order in which Karmada-shape policies act on a cluster. */
  createdAt: string;
  targetClusters?: ClusterAffinity;
  addOnConditions: MatchCondition[];
  removeOnConditions: MatchCondition[];
  taints: PolicyTaint[];
  /** `shadow` (annotation failover.io/mode): nothing written, findings recorded (shadow.ts). */
  mode?: 'shadow' | 'enforce';
}

export type AnyTaintPolicy = TaintPolicy | KarmadaTaintPolicy;

export const isKarmadaPolicy = (policy: AnyTaintPolicy): policy is KarmadaTaintPolicy => policy.shape === 'karmada';

export const taintId = (taint: { key: string; effect: string }): string => `${taint.key}:${taint.effect}`;
