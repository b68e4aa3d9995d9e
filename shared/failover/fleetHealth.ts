import type { RateSettings } from './evictionDecision';
import { isFaultyTaint } from './evictionDecision';
import type { ClusterTaint, Condition } from './model';

/**
 * Fleet health and the eviction rate (docs/architecture.md, decision 6), pure.
 *
 * A cluster counts as unhealthy when its `Ready` condition is not `True` (False, Unknown or missing), as
 * Kubernetes' node lifecycle controller counts nodes, or when it holds a NoExecute/PreferNoExecute taint.
 * Health is assessed from the conditions themselves, not only from taints: a policy's blast-radius guard
 * limits how many clusters it taints, and must never hide a mostly-down fleet from the rate tiers.
 */
export function isUnhealthyCluster(cluster: {
  conditions?: ReadonlyArray<Pick<Condition, 'type' | 'status'>>;
  taints: ReadonlyArray<Pick<ClusterTaint, 'effect'>>;
}): boolean {
  const ready = cluster.conditions?.find((c) => c.type === 'Ready');
  return ready?.status !== 'True' || cluster.taints.some(isFaultyTaint);
}

export type RateTier = 'primary' | 'secondary' | 'halted';

export interface FleetHealth {
  total: number;
  /** Clusters counted by isUnhealthyCluster. */
  unhealthy: number;
  /** unhealthy / total (0 for an empty fleet). */
  failureRatio: number;
  tier: RateTier;
  /** Evictions per second. */
  rate: number;
}

/**
 * unhealthy / total above the threshold: a large fleet (more than largeClusterNumThreshold clusters) slows
 * to the secondary rate, a small one halts (rate 0). At or below the threshold: the primary rate.
 */
export function fleetHealth(total: number, unhealthy: number, settings: RateSettings): FleetHealth {
  const failureRatio = total === 0 ? 0 : unhealthy / total;
  if (failureRatio > settings.unhealthyClusterThreshold) {
    return total > settings.largeClusterNumThreshold
      ? { total, unhealthy, failureRatio, tier: 'secondary', rate: settings.secondaryResourceEvictionRate }
      : { total, unhealthy, failureRatio, tier: 'halted', rate: 0 };
  }
  return { total, unhealthy, failureRatio, tier: 'primary', rate: settings.resourceEvictionRate };
}
