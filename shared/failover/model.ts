import type { ClusterAffinity, ConditionStatus, MatchCondition, TaintEffect, TaintToAdd } from '../api/resources';

export type { ClusterAffinity, ConditionStatus, MatchCondition, TaintEffect, TaintToAdd };

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
 * added or adopted it; `manual` is set when a person put it there (apply). A taint with neither is gone.
 */
export interface ClusterTaint {
  key: string;
  value?: string;
  effect: TaintEffect;
  timeAdded: string;
  owners: string[];
  manual: boolean;
}

/** Persisted start of a policy's current match or mismatch on one cluster (design decision 2). */
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

export interface TaintPolicy {
  name: string;
  targetCluster?: ClusterAffinity;
  matchConditions: MatchCondition[];
  taintsToAdd: TaintToAdd[];
}

export const taintId = (taint: { key: string; effect: string }): string => `${taint.key}:${taint.effect}`;
